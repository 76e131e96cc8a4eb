package kgenrt

import (
	"math"
	"strings"
	"testing"
)

// TestTopKOrder: the selection's order is key descending, NaN first (every
// NaN equal), −0 equal to +0, ties to the lower column; past a short row
// the slots hold −inf, −1 and weight 0; topk_norm divides by the float32
// sum in slot order.
func TestTopKOrder(t *testing.T) {
	nan, inf, negZero := math.NaN(), math.Inf(1), math.Copysign(0, -1)
	for _, tt := range []struct {
		keys []float64
		k    int
		want []int32
	}{
		{[]float64{1, 3, 2}, 2, []int32{1, 2}},
		{[]float64{2, 2, 2, 2}, 3, []int32{0, 1, 2}},                   // all equal: the lowest columns
		{[]float64{1, nan, inf, nan, -inf}, 5, []int32{1, 3, 2, 0, 4}}, // NaN first, then +inf
		{[]float64{negZero, 0, negZero}, 3, []int32{0, 1, 2}},          // ±0 tie
		{[]float64{5, 7}, 4, []int32{1, 0, -1, -1}},                    // k > cols
		{[]float64{-inf, -inf}, 2, []int32{0, 1}},
	} {
		sel := NewTopK(tt.k, len(tt.keys))
		for j, v := range tt.keys {
			sel.Add(j, v)
		}
		sel.Select()
		var got []int32
		for s := range tt.k {
			got = append(got, sel.Index(s))
		}
		if !equalI32(got, tt.want) {
			t.Errorf("top %d of %v = %v, want %v", tt.k, tt.keys, got, tt.want)
		}
		for s := len(tt.keys); s < tt.k; s++ {
			if v, w := sel.Value(s), sel.Norm32(s); !math.IsInf(v, -1) || w != 0 {
				t.Errorf("slot %d past a row of %d: value %v, weight %v; want -inf and 0", s, len(tt.keys), v, w)
			}
		}
	}
	sel := NewTopK(3, 4)
	for j, v := range []float64{0.1, 0.7, 0.2, 0.05} {
		sel.Add(j, float64(float32(v)))
	}
	sel.Select()
	sum := float32(0.7) + float32(0.2) + float32(0.1)
	if got, want := sel.Norm32(0), float32(0.7)/sum; got != want {
		t.Errorf("Norm32(0) = %v, want %v", got, want)
	}
}

func equalI32(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCheckFixedDim: a [rows, 8] output binds rows from its leading dims
// and must end in 8.
func TestCheckFixedDim(t *testing.T) {
	k := &Kernel{Name: "router", Variants: []Variant{{DType: F32}}, Bindings: []Binding{
		{Index: 0, Name: "x", Role: Input, DType: T, Shape: []string{"rows", "cols"}},
		{Index: 1, Name: "ids", Role: Output, DType: I32, Shape: []string{"rows", "8"}},
		{Index: 2, Name: "args", Role: Args, Fields: []Field{
			{Name: "rows", Type: U32, Offset: 0, Size: true},
			{Name: "cols", Type: U32, Offset: 4, Size: true}}},
	}}
	x, _ := New(F32, 2, 3, 64)
	good, _ := New(I32, 2, 3, 8)
	if _, sizes, err := k.Check(x, good); err != nil || sizes["rows"] != 6 || sizes["cols"] != 64 {
		t.Fatalf("Check([2 3 64], [2 3 8]) = %v, %v; want rows 6, cols 64", sizes, err)
	}
	for _, shape := range [][]int{{2, 3, 7}, {6, 9}, {5, 8}} {
		bad, _ := New(I32, shape...)
		if _, _, err := k.Check(x, bad); err == nil || !strings.Contains(err.Error(), "ids") {
			t.Errorf("Check([2 3 64], %v) = %v; want an error naming ids", shape, err)
		}
	}
}
