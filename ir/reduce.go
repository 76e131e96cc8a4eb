package ir

import "math"

// ReduceOp is a row (or column) reduction: how terms combine, from what identity, and
// how the combined value is finished. Emitters and evaluators read these
// facts instead of switching on function names.
type ReduceOp int

// The reductions.
const (
	ReduceSum ReduceOp = iota
	ReduceMean
	ReduceMax
	ReduceMin
	numReduceOps
)

var reduceFuncs = [numReduceOps]string{"row_sum", "row_mean", "row_max", "row_min"}

// colFuncs are the same reductions over a column (Cols): col_sum, ….
var colFuncs = [numReduceOps]string{"col_sum", "col_mean", "col_max", "col_min"}

// ReduceOpOf returns the reduction a formula function names.
func ReduceOpOf(fn string) (ReduceOp, bool) {
	for op, name := range reduceFuncs {
		if name == fn {
			return ReduceOp(op), true
		}
	}
	return 0, false
}

// ColReduceOpOf returns the column reduction a formula function names.
func ColReduceOpOf(fn string) (ReduceOp, bool) {
	for op, name := range colFuncs {
		if name == fn {
			return ReduceOp(op), true
		}
	}
	return 0, false
}

// ColFunc is the column reduction's function name, "col_sum".
func (op ReduceOp) ColFunc() string { return colFuncs[op] }

// Func is the formula function's name, "row_sum".
func (op ReduceOp) Func() string { return reduceFuncs[op] }

func (op ReduceOp) String() string { return op.Func() }

// Combine names the binary combine of the terms: "sum" (row_sum and
// row_mean), "max" or "min". It names the team helpers in generated code.
func (op ReduceOp) Combine() string {
	switch op {
	case ReduceMax:
		return "max"
	case ReduceMin:
		return "min"
	}
	return "sum"
}

// Sums reports whether the terms are added (row_sum, row_mean).
func (op ReduceOp) Sums() bool { return op == ReduceSum || op == ReduceMean }

// Identity is the value the accumulator starts from: 0 for sums, -inf for
// max, +inf for min.
func (op ReduceOp) Identity() float64 {
	switch op {
	case ReduceMax:
		return math.Inf(-1)
	case ReduceMin:
		return math.Inf(1)
	}
	return 0
}

// Fold combines an accumulator with one term, with the NaN rule of the
// generated kernels (fmax/fmin: a NaN accumulator takes the term).
func (op ReduceOp) Fold(acc, term float64) float64 {
	switch op {
	case ReduceMax:
		if term > acc || math.IsNaN(acc) {
			return term
		}
		return acc
	case ReduceMin:
		if term < acc || math.IsNaN(acc) {
			return term
		}
		return acc
	}
	return acc + term
}

// Divides reports whether the finished value is the combined one divided by
// the row's length (row_mean).
func (op ReduceOp) Divides() bool { return op == ReduceMean }

// Finalize turns the combined value of n terms into the reduction's value.
func (op ReduceOp) Finalize(acc float64, n int) float64 {
	if op.Divides() {
		return acc / float64(n)
	}
	return acc
}
