package parity

import (
	"math/rand/v2"

	"github.com/kgen-dev/kgen/ir"
)

// shapeGen is what parity does differently for one kind of kernel; Check
// shares everything else (buffers from each binding's Shape, the args
// struct, the launch, the judgement, the reports). A kind without an entry
// in shapeGens cannot be checked, and TestEveryKindHasAShapeGen fails.
type shapeGen struct {
	// shapes lists the launches to run, from the options (or the kind's
	// defaults), in report order.
	shapes func(k *ir.Kernel, opts Options) []shape
	// inputs draws every input's values at the launch's sizes, by binding
	// index (nil for outputs and args), each exact in its storage type and
	// as many as the binding's Shape names.
	inputs func(r *rand.Rand, k *ir.Kernel, v ir.Variant, sizes map[string]int, opts Options) [][]float64
	// f32Param is the value of the f32 runtime param at index i (see
	// paramValues).
	f32Param func(i int) float64
	// reference walks every output element with its bounded float64
	// reference, in the order failures are reported.
	reference func(c *check, visit visitor)
	// raceOrders: a source that synchronises runs in every lane order by
	// default (see Options.Orders).
	raceOrders bool
}

// shape is one launch of a check: the size fields the caller gives (the
// launch derives the rest), the PCG stream of its inputs, and the Result
// fields that name it.
type shape struct {
	sizes         map[string]int
	seed          uint64
	n, rows, cols int
}

// shapeGens holds each kind's handler: the one place parity branches on the
// kind.
var shapeGens = map[ir.Kind]shapeGen{
	ir.Elementwise: {shapes: elemShapes, inputs: elemInputs, f32Param: elemF32Param, reference: elemReference, raceOrders: true},
	ir.Rowwise:     {shapes: rowShapes, inputs: rowInputs, f32Param: rowF32Param, reference: rowReference},
	ir.KindMatmul:  {shapes: matmulShapes, inputs: matmulInputs, f32Param: matmulF32Param, reference: matmulReference},
}

// elemShapes is one launch of n elements per Options.Sizes (default
// SizesFor(k)).
func elemShapes(k *ir.Kernel, opts Options) []shape {
	sizes := opts.Sizes
	if len(sizes) == 0 {
		sizes = SizesFor(k)
	}
	var out []shape
	for _, n := range sizes {
		out = append(out, shape{sizes: map[string]int{"n": n}, seed: uint64(n), n: n})
	}
	return out
}

// elemInputs draws each [n] input with Inputs, in binding order.
func elemInputs(r *rand.Rand, k *ir.Kernel, v ir.Variant, sizes map[string]int, opts Options) [][]float64 {
	vals := make([][]float64, len(k.Bindings))
	for _, b := range k.BindingsOf(ir.Input) {
		if t := elemType(b, v); t.IsInt() {
			vals[b.Index] = IntInputs(r, sizes[b.Shape[0]], t)
			continue
		}
		vals[b.Index] = Inputs(r, sizes[b.Shape[0]], elemType(b, v), opts.Range, !opts.Plain)
	}
	return inDomain(r, k, v, vals, opts)
}

// elemF32Param is 2.5 + the param's index: typical of scales and slopes.
func elemF32Param(i int) float64 { return 2.5 + float64(i) }

// elemReference evaluates every element's outputs from its inputs
// (ir.Kernel.EvalBound).
func elemReference(c *check, visit visitor) {
	ins, outs := c.k.BindingsOf(ir.Input), c.k.BindingsOf(ir.Output)
	x := make([]float64, len(ins))
	n := c.count(outs[0])
	for j := range n {
		for i, b := range ins {
			x[i] = c.vals[b.Index][j]
		}
		want, bound := c.k.EvalBoundAt(j, n, x, c.params, c.rounding)
		for o, b := range outs {
			visit(b, j, -1, want[o], bound[o])
		}
	}
}

// DefaultCols cover one column, an odd width below a simdgroup, a narrow
// row (several rows per threadgroup), an odd wide row, and a row as wide as
// the register cache holds at 256 threads.
var DefaultCols = []int{1, 7, 64, 4304, 8192}

// DefaultRows cover no rows (a launch of no threadgroups), one row, and
// several rows with a partial last threadgroup.
var DefaultRows = []int{0, 1, 11}

// DefaultColRows are the row counts of a kernel with column reductions:
// DefaultRows, and 77 rows, ten chunks of ir.ColChunk (the last one
// partial) spread over the combine's ways (two take two chunks), with
// finite inputs (ColFiniteRows).
var DefaultColRows = []int{0, 1, 11, 77}

// SegmentRows is the row count parity gives segment s of a multi-segment
// kernel checked at rows: segments get different counts (rows, rows+3, …)
// so a launch mixes them, and all of them are 0 at 0.
func SegmentRows(rows, s int) int {
	if rows <= 1 {
		return rows
	}
	return rows + 3*s
}

// rowShapes is one launch per width of Options.Cols and row count of
// Options.Rows (defaults DefaultCols, DefaultRows), each segment's rows
// field from SegmentRows.
func rowShapes(k *ir.Kernel, opts Options) []shape {
	cols, rows := opts.Cols, opts.Rows
	if len(cols) == 0 {
		cols = DefaultCols
	}
	if len(rows) == 0 {
		rows = DefaultRows
		if k.ColReductions() != nil {
			rows = DefaultColRows
		}
	}
	var out []shape
	seen := map[int]bool{}
	for _, c := range cols {
		if c%2 != 0 && k.Rows().Pair != "" {
			c++ // a kernel that pairs a row's elements takes even rows only (kgenrt refuses odd ones)
		}
		if g := packedGroup(k); g > 0 { // a packed input's rows are whole groups: round up to one
			c = max(g, (c+g-1)/g*g)
		}
		if seen[c] {
			continue
		}
		seen[c] = true
		for _, r := range rows {
			sizes, seg := map[string]int{"cols": c}, 0
			for _, f := range k.ArgsBinding().Fields {
				if f.Size && f.Name != "cols" && f.Derived == "" && !f.Dim { // rows, or <segment>_rows in segment order
					sizes[f.Name] = SegmentRows(r, seg)
					seg++
				}
			}
			fixedDims(k, sizes)
			indexSizes(k, sizes)
			out = append(out, shape{sizes: sizes, seed: uint64(r)<<32 | uint64(c), n: r * c, rows: r, cols: c})
		}
	}
	return out
}

// rowF32Param is 1e-5 for the first param (an epsilon, in norms), then the
// param's index.
func rowF32Param(i int) float64 {
	if i == 0 {
		return float64(float32(1e-5))
	}
	return float64(i)
}

// rowReference evaluates every row of every segment (ir.Kernel.EvalRowsBound);
// a [cols] output's terms fold over the rows (ir.ColFold), judged once
// every row is in.
func rowReference(c *check, visit visitor) {
	k, cols := c.k, c.sizes["cols"]
	folds := k.NewColFolds(cols)
	colOut := map[int]int{} // output index → its fold
	if cr := k.ColReductions(); cr != nil {
		for i, o := range cr.Outputs {
			colOut[o.Out] = i
		}
	}
	written := map[int]map[int]bool{} // a positioned write's elements written, by binding
	for s := range k.NumSegments() {
		ins, outs := k.SegmentBindings(s, ir.Input), k.SegmentBindings(s, ir.Output)
		row, whole := make([][]float64, len(ins)), make([][]float64, len(ins))
		for i, b := range ins {
			whole[i] = c.vals[b.Index]
		}
		rows := c.sizes[segmentRows(k, s)]
		for r := range rows {
			for i, b := range ins {
				switch {
				case b.IsRowVector(), b.IsIndexable(), b.IsPacked(): // an indexable or packed input is read whole, by its gathers
					row[i] = c.vals[b.Index]
				case b.IsPerRow():
					row[i] = c.vals[b.Index][r : r+1]
				default:
					row[i] = c.vals[b.Index][r*cols : (r+1)*cols]
				}
			}
			want, bound := k.EvalRowsBoundSized(r, rows, c.sizes, whole, row, c.params, c.rounding)
			if k.TopKSelection() != nil {
				keys, kb := k.EvalTopKKeysAt(r, rows, row, c.params, c.rounding)
				c.topkVisit(outs, r, keys, kb, visit)
			}
			for o, b := range outs {
				switch {
				case b.IsTopKOutput(): // topkVisit
				case b.IsScatter():
					scatterVisit(c, o, b, r, rows, row, want[o], bound[o], written, visit)
				case b.IsColOutput():
					folds[colOut[o]].Add(want[o], bound[o])
				case b.IsPerRow():
					visit(b, r, r, want[o][0], bound[o][0])
				default:
					for j := range cols {
						visit(b, r*cols+j, r, want[o][j], bound[o][j])
					}
				}
			}
		}
	}
	scatterUnwritten(c, written, visit)
	for o, b := range k.SegmentBindings(0, ir.Output) {
		if !b.IsColOutput() {
			continue
		}
		if f := folds[colOut[o]]; f.Whole() {
			want, bound := f.Total(c.rounding)
			visit(b, 0, -1, want, bound)
			continue
		}
		want, bound := folds[colOut[o]].Result(c.rounding)
		for j := range cols {
			visit(b, j, -1, want[j], bound[j])
		}
	}
}

// segmentRows is the size field of segment s's rows: the first dimension of
// its [rows, cols] inputs (every rowwise kernel has one).
func segmentRows(k *ir.Kernel, s int) string {
	for _, b := range k.SegmentBindings(s, ir.Input) {
		if len(b.Shape) == 2 && !b.IsIndexable() {
			return b.Shape[0]
		}
	}
	return "rows"
}
