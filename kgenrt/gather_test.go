package kgenrt

import (
	"strings"
	"testing"
)

// TestGatherAt: the one bounds rule of indexed reads and positioned
// writes: every coordinate in [0, dim), else no index.
func TestGatherAt(t *testing.T) {
	dims := []int{3, 5, 7}
	for _, c := range []struct {
		at   []int32
		flat int
		ok   bool
	}{
		{[]int32{0, 0, 0}, 0, true},
		{[]int32{2, 4, 6}, 104, true},
		{[]int32{1, 2, 3}, 1*35 + 2*7 + 3, true},
		{[]int32{-1, 0, 0}, 0, false},
		{[]int32{3, 0, 0}, 0, false},
		{[]int32{0, 5, 0}, 0, false},
		{[]int32{0, 0, 7}, 0, false},
		{[]int32{-1 << 31, 0, 0}, 0, false},
		{[]int32{0, 1<<31 - 1, 0}, 0, false},
		{[]int32{0, 0}, 0, false}, // arity
	} {
		flat, ok := GatherAt(dims, c.at...)
		if flat != c.flat || ok != c.ok {
			t.Errorf("GatherAt(%v, %v) = %d, %v; want %d, %v", dims, c.at, flat, ok, c.flat, c.ok)
		}
	}
}

// TestIndexedTensorsShareNoMemory: an input a gather reads and an output a
// positioned write writes may not alias another tensor, not even in place
// (which plain outputs may).
func TestIndexedTensorsShareNoMemory(t *testing.T) {
	for _, indexed := range []int{0, 1} {
		k := testKernel()
		k.Bindings[[]int{0, 2}[indexed]].Indexed = true
		x, gain := mk(t, F16, 4), mk(t, F32, 4)
		_, _, err := k.Check(x, gain, x)
		if err == nil || !strings.Contains(err.Error(), "computed coordinates") {
			t.Errorf("binding %d indexed, output in place over x: %v", []int{0, 2}[indexed], err)
		}
		if _, _, err := k.Check(x, gain, mk(t, F16, 4)); err != nil {
			t.Errorf("binding %d indexed, separate output: %v", []int{0, 2}[indexed], err)
		}
	}
}
