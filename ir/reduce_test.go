package ir_test

import (
	"math"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestReduceOps pins each reduction's identity, fold and finalize, with the
// NaN rule of the generated kernels: sums propagate a NaN term, max and min
// follow fmax/fmin (a NaN term is ignored, a NaN accumulator takes the
// term).
func TestReduceOps(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		fn       string
		op       ir.ReduceOp
		identity float64
		combine  string
		terms    []float64
		folded   float64 // the terms folded from the identity
		final    float64 // Finalize(folded, len(terms))
	}{
		{"row_sum", ir.ReduceSum, 0, "sum", []float64{1, 2, 3.5}, 6.5, 6.5},
		{"row_mean", ir.ReduceMean, 0, "sum", []float64{1, 2, 3.5, 1.5}, 8, 2},
		{"row_max", ir.ReduceMax, -inf, "max", []float64{-3, 7, 2}, 7, 7},
		{"row_min", ir.ReduceMin, inf, "min", []float64{-3, 7, 2}, -3, -3},
		{"row_max, all -Inf", ir.ReduceMax, -inf, "max", []float64{-inf, -inf}, -inf, -inf},
		{"row_sum with a NaN term", ir.ReduceSum, 0, "sum", []float64{1, nan, 2}, nan, nan},
		{"row_mean with a NaN term", ir.ReduceMean, 0, "sum", []float64{1, nan}, nan, nan},
		{"row_max skips a NaN term", ir.ReduceMax, -inf, "max", []float64{1, nan, -2}, 1, 1},
		{"row_min skips a NaN term", ir.ReduceMin, inf, "min", []float64{nan, 4, 9}, 4, 4},
		{"row_sum of +Inf and -Inf", ir.ReduceSum, 0, "sum", []float64{inf, -inf}, nan, nan},
	}
	for _, c := range cases {
		name := c.op.Func()
		op, ok := ir.ReduceOpOf(name)
		if !ok || op != c.op || !strings.HasPrefix(c.fn, name) {
			t.Errorf("%s: ReduceOpOf(%q) = %v, %v", c.fn, name, op, ok)
		}
		if got := c.op.Identity(); got != c.identity {
			t.Errorf("%s: Identity() = %g, want %g", c.fn, got, c.identity)
		}
		if got := c.op.Combine(); got != c.combine {
			t.Errorf("%s: Combine() = %q, want %q", c.fn, got, c.combine)
		}
		acc := c.op.Identity()
		for _, x := range c.terms {
			acc = c.op.Fold(acc, x)
		}
		if !same(acc, c.folded) {
			t.Errorf("%s: folding %v gives %g, want %g", c.fn, c.terms, acc, c.folded)
		}
		if got := c.op.Finalize(acc, len(c.terms)); !same(got, c.final) {
			t.Errorf("%s: Finalize(%g, %d) = %g, want %g", c.fn, acc, len(c.terms), got, c.final)
		}
	}
	// A NaN accumulator (a NaN first term under fmax) takes the next term.
	if got := ir.ReduceMax.Fold(nan, 3); got != 3 {
		t.Errorf("Fold(NaN, 3) for row_max = %g, want 3", got)
	}
	if got := ir.ReduceMin.Fold(nan, -3); got != -3 {
		t.Errorf("Fold(NaN, -3) for row_min = %g, want -3", got)
	}
	if _, ok := ir.ReduceOpOf("exp"); ok {
		t.Error("exp is taken for a reduction")
	}
	if ir.ReduceSum.Divides() || !ir.ReduceMean.Divides() || !ir.ReduceMean.Sums() || ir.ReduceMax.Sums() {
		t.Error("Divides/Sums disagree with the reductions")
	}
}

// same is == with NaN equal to NaN.
func same(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
