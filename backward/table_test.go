package backward

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/ir"
)

// TestGradTable walks funcs.Table: every function that is a call has a
// Grad formula per argument, and the derived backward of y = f(args)
// matches central differences of f's float64 evaluation at points away
// from its kinks, so a new row cannot go without a right derivative.
func TestGradTable(t *testing.T) {
	points := [][]float64{{0.7, 1.9, 2.5}, {-0.4, 0.3, 0.9}, {1.3, -0.8, 0.2}}
	for _, fn := range funcs.Table {
		if fn.Reduction || fn.Bound.Rule == funcs.Select {
			continue
		}
		if len(fn.Grad) != fn.Arity() {
			t.Errorf("%s: %d Grad formulas for %d arguments", fn.Name, len(fn.Grad), fn.Arity())
			continue
		}
		if isStep(fn) { // no gradient reaches the input: nothing to derive
			continue
		}
		names := argNames(fn.Arity())
		src := fmt.Sprintf("kernel: t\ndtypes: [f32]\ninputs: [%s]\noutputs:\n  - y: %s(%s)%s",
			strings.Join(names, ", "), fn.Name, strings.Join(names, ", "), ports)
		fwd, bwd := build(t, src)
		for _, p := range points {
			args := p[:fn.Arity()]
			var in []float64 // the inputs the backward reads, then y_grad = 1
			for _, b := range bwd.Bindings {
				if b.Role == ir.Input {
					v := 1.0
					if j := slices.Index(names, b.Name); j >= 0 {
						v = args[j]
					}
					in = append(in, v)
				}
			}
			got := bwd.Eval64(in, nil)
			if len(got) != fn.Arity() {
				t.Fatalf("%s: backward has %d outputs, want %d", fn.Name, len(got), fn.Arity())
			}
			for i := range args {
				h := 1e-6
				up, down := append([]float64{}, args...), append([]float64{}, args...)
				up[i] += h
				down[i] -= h
				fd := (fwd.Eval64(up, nil)[0] - fwd.Eval64(down, nil)[0]) / (2 * h)
				if math.Abs(fd-got[i]) > 1e-6*(1+math.Abs(fd)) {
					t.Errorf("%s: d/d%s at %v = %g, central difference %g", fn.Name, names[i], args, got[i], fd)
				}
			}
		}
	}
}

// isStep reports a function whose derivative is zero wherever it exists.
func isStep(fn funcs.Func) bool { return fn.Grad[0] == "0" }
