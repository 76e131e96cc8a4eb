package ir

import (
	"fmt"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/launch"
)

// Decode is a batched chain's flash-decoding form: when the chain's own
// grid (ceildiv(m, 8) groups per batch element) is too small to fill a GPU
// — a decode step's one query row per head — the keys are split into
// chunks, each chunk's rows streamed by a threadgroup of its own, and the
// partial results combined:
//
//  1. Part: the chain's kernel over keys [s·chunk, (s+1)·chunk) of split s
//     (the grid's y), writing per row its unnormalised output O_s (f32
//     [p]), its running max M_s and its sum of weights L_s into workspaces
//     instead of the outputs.
//  2. Combine: per output element, M = max_s M_s, weights exp(M_s − M)
//     (0 for a split whose keys were all masked), O = Σ_s O_s·w_s,
//     L = Σ_s L_s·w_s, then the chain's write stage (O / L) into the
//     output's view.
//
// This is the flash-decoding order. The launcher takes it per launch, when
// the derived kgen_splits is above 1 (DecodeRules); otherwise the chain's
// one kernel runs as before.
type Decode struct {
	Part, Combine Phase
	// Space are the workspaces, f32: O [kgen_ws_rows, p], M and L
	// [kgen_ws_rows], a row per (batch element, split, query row).
	Space []Binding
}

// The decode split's tuning: the launcher splits the keys until the grid
// has about DecodeGroups threadgroups, into chunks of at least
// DecodeMinChunk keys (whole RowTile.BN blocks).
const (
	DecodeGroups   = 256
	DecodeMinChunk = 256
)

// The decode split's derived size fields: the number of splits, the keys
// per split (a multiple of RowTile.BN) and the workspace rows.
const (
	SplitsField  = "kgen_splits"
	ChunkField   = "kgen_chunk"
	WSRowsField  = "kgen_ws_rows"
	decodeCombTG = 256
)

// DecodeTuning is what a port's split aims at: its chain's rows per
// threadgroup (RowsPerGroup) and keys per step (KeyBlock: every chunk is
// whole blocks), about Groups threadgroups, chunks of at least MinChunk
// keys. Metal's is DecodeMetal; the CUDA port's ChainCUDA.DecodeTuning.
type DecodeTuning struct {
	RowsPerGroup, KeyBlock, Groups, MinChunk int
	// Blocks, when set, is the part's blocks per split in place of
	// ceildiv(m, RowsPerGroup) · batch (the CUDA part's packed rows).
	Blocks *launch.Expr
}

// DecodeMetal is the Metal chain's split tuning.
var DecodeMetal = DecodeTuning{RowsPerGroup: RowTile.BM, KeyBlock: RowTile.BN, Groups: DecodeGroups, MinChunk: DecodeMinChunk}

// DecodeRules are the derived size fields of a batched chain's Metal
// launch (DecodeMetal's Rules).
func DecodeRules(batch []string) []launch.Derived { return DecodeMetal.Rules(batch) }

// Rules are the derived size fields of a batched chain's launch under
// tuning t (Metal: BM 8, BN 32, 256 groups, chunks of 256):
//
//	groups      = ceildiv(m, BM) · batch                (the chain's own grid, or Blocks)
//	splits₀     = max(1, min(ceildiv(Groups, groups), ceildiv(n, MinChunk)))
//	kgen_chunk  = max(BN, ceildiv(ceildiv(n, splits₀), BN) · BN)
//	kgen_splits = max(1, ceildiv(n, kgen_chunk))        (no empty split)
//	kgen_ws_rows = batch · kgen_splits · m
func (t DecodeTuning) Rules(batch []string) []launch.Derived {
	bn := t.KeyBlock
	groups := launch.Times(launch.Ceil(launch.V("m"), launch.N(t.RowsPerGroup)), batchGrid(batch))
	if t.Blocks != nil {
		groups = t.Blocks
	}
	splits0 := launch.Larger(launch.N(1), launch.Smaller(launch.Ceil(launch.N(t.Groups), launch.Larger(groups, launch.N(1))), launch.Ceil(launch.V("n"), launch.N(t.MinChunk))))
	chunk := launch.Larger(launch.N(bn), launch.Times(launch.Ceil(launch.Ceil(launch.V("n"), splits0), launch.N(bn)), launch.N(bn)))
	return []launch.Derived{
		{Field: ChunkField, Rule: chunk, Doc: "the keys per split: n over enough splits to fill the GPU, in whole blocks"},
		{Field: SplitsField, Rule: launch.Larger(launch.N(1), launch.Ceil(launch.V("n"), launch.V(ChunkField))), Doc: "the splits of the keys (1: the chain's one launch)"},
		{Field: WSRowsField, Rule: launch.Times(launch.Times(batchGrid(batch), launch.V(SplitsField)), launch.V("m")), Doc: "the decode workspaces' rows"},
	}
}

// decodeFields are the args fields the decode phases read.
func decodeFields() []Field {
	return []Field{
		{Name: ChunkField, Type: dtype.U32, Size: true, Derived: "the keys per split (flash decoding)"},
		{Name: SplitsField, Type: dtype.U32, Size: true, Derived: "the splits of the keys (flash decoding)"},
		// The workspaces' rows: an args field too, since every port's
		// derived fields are members of the args struct (kgenrt checks).
		{Name: WSRowsField, Type: dtype.U32, Size: true, Derived: "the decode workspaces' rows"},
	}
}

// decodeOf lays out a batched chain's decode phases.
func decodeOf(k *Kernel, mm *Matmul) *Decode {
	d := &Decode{}
	for w := range 3 { // the partial outputs, maxima and sums
		b := Binding{Name: WorkspaceName(w), DType: dtype.F32, Shape: Shape{WSRowsField}}
		if w == 0 {
			b.Shape = Shape{WSRowsField, "p"}
		}
		d.Space = append(d.Space, b)
	}
	args := len(k.Bindings) - 1
	phase := func(suffix, comment string, from []int, roles map[int]Role, grid [3]*launch.Expr, tg int) Phase {
		// The sizes are the kernel's launch's (DecodeRules): no derived fields of its own.
		return newPhase(k, d.Space, suffix, comment, mm.Tile, from, roles, launch.Launch{Grid: grid, Threadgroup: [3]int{tg, 1, 1}})
	}
	var partFrom, combFrom []int
	partRoles, combRoles := map[int]Role{}, map[int]Role{}
	for _, b := range k.Bindings[:args] {
		if b.Role == Input {
			partFrom = append(partFrom, b.Index)
		}
	}
	for w := range d.Space {
		partRoles[len(partFrom)] = Output
		partFrom = append(partFrom, -1-w)
		combRoles[len(combFrom)] = Input
		combFrom = append(combFrom, -1-w)
	}
	for _, b := range k.Bindings[:args] {
		if b.Role == Output {
			combFrom = append(combFrom, b.Index)
		}
	}
	t := mm.Tile
	partGrid := [3]*launch.Expr{launch.Times(launch.Ceil(launch.V("m"), mm.chainGroupRows()), launch.N(t.Threads())), launch.V(SplitsField), batchGrid(mm.Batch)}
	d.Part = phase("part", fmt.Sprintf("launch 1 (flash decoding): split y of the keys per group of %d rows (one row in the row-vector form), the partial output, max and sum into the workspaces", t.BM),
		append(partFrom, args), partRoles, partGrid, t.Threads())
	combGrid := [3]*launch.Expr{launch.Times(launch.Ceil(launch.Times(launch.V("m"), launch.V("p")), launch.N(decodeCombTG)), launch.N(decodeCombTG)), launch.N(1), batchGrid(mm.Batch)}
	d.Combine = phase("combine", "launch 2 (flash decoding): per output element, the splits' partials rescaled to their common max and summed, then the write stage",
		append(combFrom, args), combRoles, combGrid, decodeCombTG)
	if c := mm.Chain.CUDA; c != nil {
		c.Pack = decodePackOf(k, mm)
		d.cudaLaunches(c, mm.Batch)
	}
	return d
}
