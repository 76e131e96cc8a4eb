package ir

import (
	"fmt"

	"github.com/kgen-dev/kgen/launch"
)

// A total_sum output is one number: the sum of its term over every element
// of a rowwise launch (a param's gradient, a loss). It rides on the column
// reductions (Cols) so that its order is as fixed as theirs:
//
//  1. the row passes fold its term per column into chunk partials, as
//     col_sum does (a [kgen_chunks, cols] f32 workspace);
//  2. the combine folds each column over the chunks, as col_sum does, and
//     leaves the column's sum in row 0 of the workspace instead of storing
//     it (only the column's own thread reads and writes it);
//  3. the total launch (<kernel>_total_<dtype>), one group of TotalWays
//     threads: way w folds columns w, w+TotalWays, … in order, then way 0
//     folds the ways in order and stores the [1] output.
//
// The order is fixed by rows and cols alone, so every run and every
// backend sums the same terms to the same bits. Without float atomics or a
// last-group handshake a third launch is the one way to fold across the
// combine's groups; it reads 4·cols bytes.

// TotalFunc is the whole-launch sum's formula function.
const TotalFunc = "total_sum"

// TotalDim is a total_sum output's one dimension: a [1] tensor.
const TotalDim = "1"

// TotalWays is the total launch's threads, each folding every TotalWays-th
// column; kgenrt mirrors it (ColAcc.Total).
const TotalWays = 256

// IsTotal reports whether the tensor is a rowwise kernel's total_sum
// output, [1].
func (b Binding) IsTotal() bool {
	return b.Role == Output && len(b.Shape) == 1 && b.Shape[0] == TotalDim
}

// Func is the output's formula function: total_sum, or its col_* one.
func (o ColOutput) Func() string {
	if o.Whole {
		return TotalFunc
	}
	return o.Op.ColFunc()
}

// HasTotal reports whether any output is a total_sum (a third launch).
func (c *Cols) HasTotal() bool {
	for _, o := range c.Outputs {
		if o.Whole {
			return true
		}
	}
	return false
}

// TotalDepth is the summation depth of a total over rows×cols elements:
// the column's (Depth), then a way's columns, then the ways.
func (c *Cols) TotalDepth(rows, cols int) int {
	return c.Depth(rows) + (cols+TotalWays-1)/TotalWays + TotalWays
}

// layOutTotal lays out the third launch when the kernel has a total_sum
// output: the same signature as the other two (the kernel's tensors, the
// workspaces, the args struct), the workspaces read.
func layOutTotal(k *Kernel, c *Cols, from []int) {
	if !c.HasTotal() {
		return
	}
	roles := map[int]Role{}
	for i, f := range from {
		if f < 0 {
			roles[i] = Input
		}
	}
	c.Total = newPhase(k, c.Space, "total", fmt.Sprintf("launch 3: %d ways each fold every %dth column's sum in order, then the ways in order, into each total_sum output", TotalWays, TotalWays),
		Tile{}, from, roles, launch.Launch{
			Grid:        [3]*launch.Expr{launch.N(TotalWays), launch.N(1), launch.N(1)},
			Threadgroup: [3]int{TotalWays, 1, 1},
		})
}

// Whole reports whether the fold is a total_sum's (Total finishes it).
func (f *ColFold) Whole() bool { return f.whole }

// Total is a total_sum output's value over every folded row and column
// with its bound: the terms' bounds plus TotalDepth·u·Σ|terms| (each
// partial of the kernels' order is at most Σ|terms|); r is the rounding
// the terms were evaluated with (Unit 0: no accumulation error).
func (f *ColFold) Total(r Rounding) (val, bound float64) {
	var abs float64
	for _, a := range f.acc {
		val, bound, abs = val+a.v, bound+a.e, abs+a.abs
	}
	if r.Unit > 0 {
		bound += float64(f.cols.TotalDepth(f.rows, len(f.acc))) * accumUnit * abs
	}
	return val, bound
}
