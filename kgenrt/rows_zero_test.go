package kgenrt

import (
	"math"
	"testing"
)

// TestRowAccSignedZero: a row's max or min over equal values keeps the
// first one, as the kernel's fmax(acc, v) and its simd reductions (a fold in
// lane order) do, so -0 and +0 come out as the kernel gives them (issue
// 27: the reference gave +0 for max where the kernel gives -0, and the
// reverse for min, which 1/(x*-0 + row_max(z)*0) turns into ±Inf).
func TestRowAccSignedZero(t *testing.T) {
	neg, pos := float32(math.Copysign(0, -1)), float32(0)
	nan := float32(math.NaN())
	for _, tt := range []struct {
		op    RowOp
		row   []float32
		lanes int
		neg   bool // the result is -0
	}{
		{RowMax, []float32{neg, pos}, 1, true},
		{RowMax, []float32{pos, neg}, 1, false},
		{RowMin, []float32{neg, pos}, 1, true},
		{RowMin, []float32{pos, neg}, 1, false},
		{RowMax, []float32{nan, neg, pos}, 1, true},
		{RowMax, []float32{neg, pos}, 2, true}, // lanes combined in lane order
		{RowMin, []float32{pos, neg}, 2, false},
		{RowMax, []float32{-1, neg, pos}, 64, true}, // one lane each; two simdgroups
	} {
		a := NewRowAcc(tt.op, tt.lanes)
		for j, v := range tt.row {
			a.Add(j, v)
		}
		got := a.Result(len(tt.row))
		if got != 0 || math.Signbit(float64(got)) != tt.neg {
			t.Errorf("op %d over %v (%d lanes) = %v (signbit %v); want a zero with signbit %v", tt.op, tt.row, tt.lanes, got, math.Signbit(float64(got)), tt.neg)
		}
	}
}
