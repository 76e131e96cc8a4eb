package parity

import (
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// RoundingFor is the rounding model parity gives ir.Kernel.EvalRowsBound
// (and EvalBound) for variant v of k; harnesses that launch kernels
// themselves (e2e/cudagpu on a GPU) use it to judge with parity's rule.
func RoundingFor(k *ir.Kernel, v ir.Variant) ir.Rounding { return roundingOf(k, v) }

// Within judges one element with parity's rule (|got-ref| <= abs +
// rel*|ref| + bound, NaN/Inf matching as parity does); it returns
// |got-ref| (0 when not finite) and whether the element passes.
func Within(got, want, bound float64, t dtype.DType, tol ir.Tolerance) (float64, bool) {
	return within(got, want, bound, t, tol)
}
