package ir

import (
	"fmt"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/launch"
)

// Cols is the column reductions of a rowwise kernel: outputs whose whole
// formula is col_sum, col_mean, col_max or col_min of a per-element term,
// one value per column reduced over every row of the launch (a weight or
// bias gradient, mean pooling). The term may use everything the write pass
// sees — row reductions and per-row lets included — so RMSNorm's dX (per
// element) and dW (per column) come from one spec and one read of the row.
//
// Summing across threadgroups without float atomics, in an order that does
// not depend on the GPU, takes two launches:
//
//  1. Rows, the kernel's own entry (<kernel>_<dtype>): the row passes as
//     usual, except that a team takes a chunk of ColChunk consecutive rows
//     one after the other (team t of group g: chunk g·rows_per_group + t)
//     and its write pass folds each [cols] output's term into row chunk of
//     that output's workspace, in row order: the chunk's first row stores,
//     the next ones add (max, min: fmax, fmin).
//  2. Combine (<kernel>_cols_<dtype>): ColCombineCols columns per group of
//     ColWays·ColCombineCols threads; way w of a column folds chunks w,
//     w+ColWays, … in order, then the ways are folded in order (through
//     threadgroup memory), from the reduction's identity, and col_mean
//     divides by rows.
//
// The order is fixed by rows alone — not by the team width, the backend or
// the number of multiprocessors — so a launch gives the same bits every
// run, and Metal and CUDA sum the same terms in the same order (whether
// the terms agree bit for bit is up to the rest of the formula: docs/colwise.md).
// Both phases take the same signature: the kernel's tensors, then the
// workspaces, then the args struct.
type Cols struct {
	Outputs []ColOutput
	// Space holds each output's partials, f32 [kgen_chunks, cols], in
	// Outputs order.
	Space         []Binding
	Rows, Combine Phase
	// Total is the third launch of a kernel with total_sum outputs
	// (total.go); its Suffix is "" when there are none.
	Total Phase
}

// ColOutput is one [cols] output. Its step's Expr is the term, the
// reduction's argument; the step's Source keeps the col_* call.
type ColOutput struct {
	Op ReduceOp
	// Whole marks a total_sum output (total.go): the column sums are
	// folded once more, over the columns, into one value.
	Whole bool
	Step  int      // index into Kernel.Steps
	Out   int      // index among the outputs
	Pos   diag.Pos // where the spec calls it, for messages
}

// The column schedule's constants; kgenrt mirrors them (ColAcc) and a
// test holds the copies equal.
const (
	// ColChunk is the rows one team folds, in order, into one row of the
	// partials: a power of two small enough that rows/ColChunk chunks
	// fill the GPU for a few thousand rows, large enough that the
	// workspace stays a small fraction of the traffic (4·cols bytes per
	// chunk against ColChunk rows of the inputs).
	ColChunk = 8
	// ColWays and ColCombineCols shape the combine: ColWays threads per
	// column each fold every ColWays-th chunk, ColCombineCols columns per
	// group (one simdgroup's worth, so a way's loads are coalesced).
	ColWays        = 8
	ColCombineCols = 32
	// ChunksField is the derived size field holding ceildiv(rows, ColChunk).
	ChunksField = "kgen_chunks"
)

// ColReductions returns a rowwise kernel's column reductions, nil when it
// has none (and for other kinds).
func (k *Kernel) ColReductions() *Cols {
	if r, ok := k.Schedule.(*Rows); ok {
		return r.Cols
	}
	return nil
}

// ColOf returns the column reduction computing step i, if any.
func (c *Cols) ColOf(step int) (ColOutput, bool) {
	if c != nil {
		for _, o := range c.Outputs {
			if o.Step == step {
				return o, true
			}
		}
	}
	return ColOutput{}, false
}

// Depth is the summation depth D of a column sum over rows rows as the
// kernels run it, for the bound D·u·Σ|terms|: ColChunk−1 adds within a
// chunk, ceil(chunks/ColWays) adds of a way (from the identity), then
// ColWays adds of the ways. Any term passes through at most D roundings.
func (c *Cols) Depth(rows int) int {
	chunks := (rows + ColChunk - 1) / ColChunk
	return min(rows, ColChunk) - 1 + (chunks+ColWays-1)/ColWays + ColWays
}

// colOutputs takes the col_* outputs of a rowwise kernel out of the
// scheduler's way before it classifies: each output whose formula is one
// col_* call becomes a ColOutput whose step computes the call's argument.
// A col_* anywhere else is refused where the scheduler meets it.
func (sc *scheduler) colOutputs() {
	if sc.k.Kind != Rowwise {
		return
	}
	cols := &Cols{}
	for i, st := range sc.k.Steps {
		e := st.Expr
		op, ok := ColReduceOpOf(e.Func)
		whole := e.Func == TotalFunc
		if !st.Output || e.Op != OpCall || !ok && !whole || len(e.Args) != 1 {
			continue
		}
		o := sc.k.OutputIndex(i)
		cols.Outputs = append(cols.Outputs, ColOutput{Op: op, Whole: whole, Step: i, Out: o, Pos: sc.s.Outputs[o].Map.At(e.Off)})
		sc.k.Steps[i].Expr = e.Args[0]
	}
	if len(cols.Outputs) > 0 {
		sc.rows.Cols = cols
	}
}

// checkColTerm refuses a column reduction whose term does not vary along
// the row (one value per row: every column would get the same result) or
// from row to row (only [cols] values: the result is rows times the term).
func (sc *scheduler) checkColTerm(o ColOutput, in valueInfo) {
	pos := o.Pos
	switch {
	case !in.elem && o.Whole:
		sc.diags.Addf(pos, "%s of a per-row value: it sums over every element; to count a per-row value v once per row, write %s(select(col == 0, v, 0))", o.Func(), o.Func())
	case !in.elem:
		sc.diags.Addf(pos, "%s of a per-row value: every column would hold the same number; reduce an expression of the row's elements", o.Func())
	case !in.byRow:
		sc.diags.Addf(pos, "%s of values that are the same in every row ([cols] inputs, col, params): the result is rows times the term; compute it outside the kernel, or reduce an expression of a [rows, cols] input", o.Func())
	}
}

// checkCols refuses what column reductions do not support: segments (each
// would need its own partials and combine). (An integer output is refused
// by the formula checker: a col_* call is a number.)
func (sc *scheduler) checkCols() {
	c := sc.rows.Cols
	if c == nil {
		return
	}
	if len(sc.k.Segments) > 0 {
		sc.diags.Addf(c.Outputs[0].Pos, "%s: column reductions are not supported in a kernel with segments (each would need its own partials and combine); write one kernel per segment", c.Outputs[0].Func())
	}
}

// layOutCols makes each column reduction's output a [cols] tensor, adds
// the derived size field kgen_chunks and lays out the two launches.
func layOutCols(k *Kernel, c *Cols) {
	for _, o := range c.Outputs {
		b := k.SegmentBindings(0, Output)[o.Out]
		k.Bindings[b.Index].Shape = Shape{"cols"}
		if o.Whole {
			k.Bindings[b.Index].Shape = Shape{TotalDim}
		}
	}
	addSizeField(k, Field{Name: ChunksField, Type: dtype.U32, Size: true,
		Derived: fmt.Sprintf("ceildiv(rows, %d): the chunks of %d rows whose partials the workspaces hold", ColChunk, ColChunk)})
	for w := range c.Outputs {
		c.Space = append(c.Space, Binding{Name: WorkspaceName(w), DType: dtype.F32, Shape: Shape{ChunksField, "cols"}})
	}
	args := len(k.Bindings) - 1
	var from []int
	for i := range args {
		from = append(from, i)
	}
	rowsRoles, combRoles := map[int]Role{}, map[int]Role{}
	for w := range c.Space {
		rowsRoles[len(from)], combRoles[len(from)] = Output, Input
		if c.Outputs[w].Whole { // the combine leaves the column sums in the partials' row 0
			combRoles[len(from)] = Output
		}
		from = append(from, -1-w)
	}
	from = append(from, args)
	rowsLaunch := launch.Launch{Grid: [3]*launch.Expr{colRowsGrid(k), launch.N(1), launch.N(1)}, Threadgroup: [3]int{k.Threadgroup, 1, 1}}
	c.Rows = newPhase(k, c.Space, "rows", fmt.Sprintf("launch 1: the row passes, a team per chunk of %d rows; the [cols] outputs' terms folded per chunk into the workspaces", ColChunk),
		Tile{}, from, rowsRoles, rowsLaunch)
	// The first launch is the kernel's own entry point: its host names.
	c.Rows.Suffix, c.Rows.Entry = "", k.Name
	c.Rows.Variants = append([]Variant(nil), k.Variants...)
	tg := ColWays * ColCombineCols
	c.Combine = newPhase(k, c.Space, "cols", fmt.Sprintf("launch 2: per column, %d ways each fold every %dth chunk's partial in order, then the ways in order", ColWays, ColWays),
		Tile{}, from, combRoles, launch.Launch{
			Grid:        [3]*launch.Expr{launch.Times(launch.Ceil(launch.V("cols"), launch.N(ColCombineCols)), launch.N(tg)), launch.N(1), launch.N(1)},
			Threadgroup: [3]int{tg, 1, 1},
		})
	layOutTotal(k, c, from)
}

// colRowsGrid is the first launch's grid: a team per chunk.
func colRowsGrid(k *Kernel) *launch.Expr {
	return launch.Times(launch.N(k.Threadgroup), launch.Ceil(launch.V(ChunksField), launch.V("rows_per_group")))
}

// chunksDerived is kgen_chunks' rule, the same on every backend.
func chunksDerived() launch.Derived {
	return launch.Derived{Field: ChunksField, Rule: launch.Ceil(launch.V("rows"), launch.N(ColChunk)),
		Doc: fmt.Sprintf("the chunks of %d rows, a team each", ColChunk)}
}

// addSizeField inserts f after the args struct's size fields (before the
// params) and lays the offsets out again.
func addSizeField(k *Kernel, f Field) {
	a := &k.Bindings[len(k.Bindings)-1]
	i := 0
	for i < len(a.Fields) && a.Fields[i].Size {
		i++
	}
	a.Fields = append(a.Fields[:i], append([]Field{f}, a.Fields[i:]...)...)
	for j := range a.Fields {
		a.Fields[j].Offset = 4 * j
	}
}

// IsPhaseOwn reports whether the launch is the kernel's own entry point
// (a column-reducing kernel's first launch), whose host names and keys are
// the kernel's.
func (p *Phase) IsPhaseOwn() bool { return p.Suffix == "" }

// EntryBindings is the signature of the kernel's own entry point: its
// bindings, or, for a column-reducing kernel, its first launch's (the
// workspaces before the args struct).
func (k *Kernel) EntryBindings() []Binding {
	if c := k.ColReductions(); c != nil {
		return c.Rows.Bindings
	}
	return k.Bindings
}
