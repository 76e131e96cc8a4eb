package parity

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// RowOptions shape the test data of a rowwise kernel.
type RowOptions struct {
	Cols  []int   // row widths; default DefaultCols
	Rows  []int   // row counts; default DefaultRows
	Range float64 // inputs are uniform in [-Range, Range]; default 8
	Seed  uint64
	// Order is the lane order within each threadgroup (mslcpu.Forward if
	// unset); a kernel whose result depends on it has a race.
	Order mslcpu.LaneOrder
}

// DefaultCols cover one column, an odd width below a simdgroup, a narrow
// row (several rows per threadgroup), an odd wide row, and a row as wide as
// the register cache holds at 256 threads.
var DefaultCols = []int{1, 7, 64, 4304, 8192}

// DefaultRows cover no rows (a launch of no threadgroups), one row, and
// several rows with a partial last threadgroup.
var DefaultRows = []int{0, 1, 11}

// RowResult is the outcome of one variant at one shape.
type RowResult struct {
	HostName   string
	Rows, Cols int // rows of the first segment (segment s has SegmentRows(rows, s))
	Checked    int
	Failed     int
	MaxAbs     float64
	MaxRel     float64 // largest |got-ref| / (abs + rel*|ref| + bound): 1 is the tolerance's edge
	First      string
}

// SegmentRows is the row count parity gives segment s of a multi-segment
// kernel checked at rows: segments get different counts (rows, rows+3, …)
// so a launch mixes them, and all of them are 0 at 0.
func SegmentRows(rows, s int) int {
	if rows <= 1 {
		return rows
	}
	return rows + 3*s
}

// CheckRows runs every variant of a rowwise kernel at every width and row
// count and compares each output element with the kernel's float64 row
// evaluation (ir.Kernel.EvalRowsBound) under the variant's tolerance widened
// by the rounding bound.
func CheckRows(ctx context.Context, k *ir.Kernel, source []byte, opts RowOptions) ([]RowResult, error) {
	if k.Rows == nil {
		return nil, fmt.Errorf("parity: kernel %s is not rowwise", k.Name)
	}
	if len(opts.Cols) == 0 {
		opts.Cols = DefaultCols
	}
	if len(opts.Rows) == 0 {
		opts.Rows = DefaultRows
	}
	if opts.Range == 0 {
		opts.Range = 8
	}
	var out []RowResult
	for _, v := range k.Variants {
		for _, cols := range opts.Cols {
			for _, rows := range opts.Rows {
				r, err := checkRowsOne(ctx, k, v, source, rows, cols, opts)
				if err != nil {
					return out, err
				}
				out = append(out, r)
			}
		}
	}
	return out, nil
}

func checkRowsOne(ctx context.Context, k *ir.Kernel, v ir.Variant, source []byte, rows, cols int, opts RowOptions) (RowResult, error) {
	rng := rand.New(rand.NewPCG(opts.Seed, uint64(rows)<<32|uint64(cols)))
	nseg := k.NumSegments()
	segRows := make([]int, nseg)
	for s := range segRows {
		segRows[s] = SegmentRows(rows, s)
	}
	buffers := make([][]byte, len(k.Bindings))
	vals := make([][]float64, len(k.Bindings)) // inputs as stored, by binding index
	for _, b := range k.BindingsOf(ir.Input) {
		t := elemType(b, v)
		n := cols
		if !b.Row {
			n = segRows[b.Segment] * cols
		}
		vals[b.Index] = make([]float64, n)
		for j := range vals[b.Index] {
			vals[b.Index][j] = dtype.Round((rng.Float64()*2-1)*opts.Range, t)
		}
		buffers[b.Index] = encode(vals[b.Index], t)
	}
	for _, b := range k.BindingsOf(ir.Output) {
		nan := make([]float64, segRows[b.Segment]*cols)
		for j := range nan {
			nan[j] = math.NaN() // every element must be overwritten
		}
		buffers[b.Index] = encode(nan, elemType(b, v))
	}
	params := rowParamValues(k)
	rpg := k.Threadgroup / ir.LanesPerRow(cols, k.Threadgroup)
	args := k.ArgsBinding()
	buffers[args.Index] = rowArgsBytes(args, segRows, cols, rpg, params)
	groups := 0
	for _, r := range segRows {
		groups += (r + rpg - 1) / rpg
	}
	got, err := mslcpu.Run(ctx, mslcpu.Launch{
		Source: source, HostName: v.HostName, Buffers: buffers,
		Grid:        [3]uint32{uint32(groups * k.Threadgroup), 1, 1},
		Threadgroup: [3]uint32{uint32(k.Threadgroup), 1, 1},
		Order:       opts.Order,
	})
	if err != nil {
		return RowResult{}, err
	}
	res := RowResult{HostName: v.HostName, Rows: rows, Cols: cols}
	rounding := roundingOf(k, v)
	for s := 0; s < nseg; s++ {
		ins, outs := k.SegmentBindings(s, ir.Input), k.SegmentBindings(s, ir.Output)
		row := make([][]float64, len(ins))
		for r := 0; r < segRows[s]; r++ {
			for i, b := range ins {
				if b.Row {
					row[i] = vals[b.Index]
				} else {
					row[i] = vals[b.Index][r*cols : (r+1)*cols]
				}
			}
			want, bound := k.EvalRowsBound(row, params, rounding)
			for o, b := range outs {
				t := elemType(b, v)
				for j := 0; j < cols; j++ {
					g := decode(got[b.Index], t, r*cols+j)
					res.Checked++
					d, ok := within(g, want[o][j], bound[o][j], t, v.Tolerance)
					res.MaxAbs = math.Max(res.MaxAbs, d)
					if lim := v.Tolerance.Abs + v.Tolerance.Rel*math.Abs(want[o][j]) + bound[o][j]; lim > 0 && ok {
						res.MaxRel = math.Max(res.MaxRel, d/lim)
					}
					if !ok {
						res.Failed++
						if res.First == "" {
							res.First = fmt.Sprintf("%s[%d, %d] = %g, want %g ± %.3g (tolerance abs %g rel %g)",
								b.Name, r, j, g, want[o][j], bound[o][j], v.Tolerance.Abs, v.Tolerance.Rel)
						}
					}
				}
			}
		}
	}
	return res, nil
}

// rowParamValues picks typical runtime params for rowwise kernels: f32
// params are 1e-5 (then 1, 2, …: an epsilon first), integers 3, 4, ….
func rowParamValues(k *ir.Kernel) []float64 {
	var out []float64
	for i, p := range k.Params() {
		switch {
		case p.Type == dtype.F32 && i == 0:
			out = append(out, float64(float32(1e-5)))
		case p.Type == dtype.F32:
			out = append(out, float64(i))
		default:
			out = append(out, float64(3+i))
		}
	}
	return out
}

// rowArgsBytes lays out the args struct: the rows of each segment, cols,
// rows_per_group, then the params.
func rowArgsBytes(b ir.Binding, segRows []int, cols, rpg int, params []float64) []byte {
	buf := make([]byte, 4*len(b.Fields))
	sizes := append(append([]int(nil), segRows...), cols, rpg)
	si, p := 0, 0
	for _, f := range b.Fields {
		var word uint32
		switch {
		case f.Size:
			word = uint32(sizes[si])
			si++
		case f.Type == dtype.F32:
			word = math.Float32bits(float32(params[p]))
			p++
		case f.Type == dtype.I32:
			word = uint32(int32(params[p]))
			p++
		default:
			word = uint32(params[p])
			p++
		}
		binary.LittleEndian.PutUint32(buf[f.Offset:], word)
	}
	return buf
}
