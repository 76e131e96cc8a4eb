package ir_test

import (
	"math"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestRowMaxBoundPassesOverNaN: row_max and row_min pass over a NaN term
// (as fmax/fmin do), so its bound must not reach the row either. A NaN
// bound (the NaN input rounded from f32 to an f16 compute type) made every
// value of the row, chained through x - row_max(x), checked against the
// tolerance alone: correct f16 kernels failed parity (issue 12, class 9).
func TestRowMaxBoundPassesOverNaN(t *testing.T) {
	k := mustBuild(t, `
kernel: chain
kind: rowwise
dtypes: [f32]
compute: f16
inputs: [x]
let:
  - a: x - row_max(x)
  - b: a - row_min(a)
outputs:
  - y: b - row_max(b)
`)
	r := ir.Rounding{Unit: 0x1p-11, FuncUlps: 1, InputUnits: []float64{0x1p-11}, Overflow: 65520, Underflow: 0x1p-25}
	row := []float64{-6.26, math.NaN(), 3.3, -82.2, 0.5}
	vals, bounds := k.EvalRowsBound([][]float64{row}, nil, r)
	for j, x := range row {
		v, e := vals[0][j], bounds[0][j]
		if math.IsNaN(x) {
			if !math.IsNaN(v) {
				t.Errorf("column %d: the NaN input gives %v", j, v)
			}
			continue
		}
		if math.IsNaN(v) || math.IsNaN(e) || e <= 0 || e > 1 {
			t.Errorf("column %d (x=%v): value %v, bound %v; want a number with a small positive bound", j, x, v, e)
		}
	}
}
