package spec

import (
	"strconv"

	"github.com/goccy/go-yaml/ast"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/internal/yamlnode"
)

// CUDAClass is one problem class of a matmul's CUDA port as the spec
// overrides it (`cuda_tiles:`): the CUTLASS kernel that runs for m up to
// MaxM (0: any m). The IR checks that the numbers fit together.
type CUDAClass struct {
	MaxM     int
	Swap     bool   // compute yᵀ = Bᵀ·Aᵀ
	Tile     []int  // CTA tile M, N, K
	Cluster  []int  // thread block cluster M, N (nil: 1×1)
	Schedule string // "cooperative" or "pingpong" ("" : cooperative)
	StreamK  bool   // CUTLASS's stream-K tile scheduler
	Pos      diag.Pos
	// TilePos, ClusterPos, SchedulePos, StreamKPos: where each field is
	// (the class's position when absent), for the IR's messages.
	TilePos, ClusterPos, SchedulePos, StreamKPos diag.Pos
}

var cudaClassFields = []string{"max_m", "swap", "tile", "cluster", "schedule", "stream_k"}

// CUDASchedules are the CUTLASS mainloop schedules a class may name.
var CUDASchedules = []string{"cooperative", "pingpong"}

// cudaTiles reads `cuda_tiles:`, a list of problem classes tried in order.
func (p *parser) cudaTiles(n ast.Node) []CUDAClass {
	items, ok := p.doc.Seq(n, "cuda_tiles (a list of problem classes)", p.diags)
	if !ok {
		return nil
	}
	if len(items) == 0 {
		p.diags.Addf(p.doc.Pos(n), "cuda_tiles needs at least one problem class, e.g. [{tile: [128, 256, 64], cluster: [2, 1]}]")
	}
	out := []CUDAClass{}
	for _, it := range items {
		out = append(out, p.cudaClass(it))
	}
	return out
}

func (p *parser) cudaClass(n ast.Node) CUDAClass {
	pos := p.doc.Pos(n)
	c := CUDAClass{Pos: pos, TilePos: pos, ClusterPos: pos, SchedulePos: pos, StreamKPos: pos}
	fields, ok := p.doc.Fields(n, "a cuda_tiles class ({max_m: 64, swap: true, tile: [128, 32, 128], stream_k: true})", p.diags)
	if !ok {
		return c
	}
	hasTile := false
	for _, f := range fields {
		switch f.Key {
		case "max_m":
			c.MaxM = p.posInt(f.Value, "max_m", 1<<31-1)
		case "swap":
			c.Swap = p.boolean(f.Value, "swap")
		case "tile":
			hasTile = true
			c.Tile, c.TilePos = p.ints(f.Value, "tile (CTA tile [m, n, k])", 3), p.doc.Pos(f.Value)
		case "cluster":
			c.Cluster, c.ClusterPos = p.ints(f.Value, "cluster ([m, n])", 2), p.doc.Pos(f.Value)
		case "schedule":
			c.Schedule, c.SchedulePos = p.enum(f.Value, "schedule", CUDASchedules, ""), p.doc.Pos(f.Value)
		case "stream_k":
			c.StreamK, c.StreamKPos = p.boolean(f.Value, "stream_k"), p.doc.Pos(f.Value)
		default:
			p.unknownKey(f, "cuda_tiles field", cudaClassFields)
		}
	}
	if !hasTile {
		p.diags.Addf(pos, "a cuda_tiles class needs tile: [m, n, k]")
	}
	return c
}

// posInt reads an integer from 1 to max (0 when it is not one).
func (p *parser) posInt(n ast.Node, what string, max int64) int {
	iv, isInt := n.(*ast.IntegerNode)
	if isInt {
		if v, err := strconv.ParseInt(iv.GetToken().Value, 0, 64); err == nil && v >= 1 && v <= max {
			return int(v)
		}
	}
	got := yamlnode.Describe(n)
	if isInt {
		got = iv.GetToken().Value // the number itself: "not 0", not "not a number"
	}
	p.diags.Addf(p.doc.Pos(n), "%s must be an integer from 1 to %d, not %s", what, max, got)
	return 0
}

// ints reads a list of exactly count positive integers (nil if it is not).
func (p *parser) ints(n ast.Node, what string, count int) []int {
	items, ok := p.doc.Seq(n, what, p.diags)
	if !ok {
		return nil
	}
	if len(items) != count {
		p.diags.Addf(p.doc.Pos(n), "%s takes %d integers, not %d", what, count, len(items))
		return nil
	}
	out := make([]int, count)
	for i, it := range items {
		if out[i] = p.posInt(it, what, 1024); out[i] == 0 {
			return nil
		}
	}
	return out
}

func (p *parser) boolean(n ast.Node, what string) bool {
	if b, ok := n.(*ast.BoolNode); ok {
		return b.Value
	}
	p.diags.Addf(p.doc.Pos(n), "%s must be true or false, not %s", what, yamlnode.Describe(n))
	return false
}
