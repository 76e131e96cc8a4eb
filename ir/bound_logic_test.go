package ir_test

import (
	"math"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestComparisonNearATieMayFlip: 0.5 + x > 0.5 for x = 1e-10 is true in
// float64 and false in f32 (0.5 + x rounds to 0.5), so the bound of a
// select on it must cover both branches; with x far from the tie, or the
// comparison's operands exact, the select's bound is its branch's alone.
// Found by FuzzGenerate's specs through kgen verify: a rowwise
// x + row_sum(select(0.5 + x > 0.5, 2, -1)) failed parity on 113,031 of
// 150,816 lanes although the MSL and the Go reference agreed bit for bit.
func TestComparisonNearATieMayFlip(t *testing.T) {
	f32 := ir.Rounding{Unit: 0x1p-24, FuncUlps: 1}
	for _, c := range []struct {
		formula string
		x       float64
		want    func(v, e float64) bool
		why     string
	}{
		{"select(0.5 + x > 0.5, 2, -1)", 1e-10, func(v, e float64) bool { return v == 2 && e >= 3 }, "near the tie: either branch"},
		{"select(0.5 + x > 0.5, 2, -1)", 0.25, func(v, e float64) bool { return v == 2 && e == 0 }, "far from the tie: exact"},
		{"select(x > 0.5, 2, -1)", 0.5000001, func(v, e float64) bool { return v == 2 && e == 0 }, "exact operands: exact"},
		{"select(!(0.5 + x > 0.5), 2, -1)", 1e-10, func(v, e float64) bool { return v == -1 && e >= 3 }, "negation flips with its operand"},
		{"select(x > 2 && 0.5 + x > 0.5, 2, -1)", 1e-10, func(v, e float64) bool { return v == -1 && e == 0 }, "&& decided by its certainly false side"},
		{"select(x < 2 || 0.5 + x > 0.5, 2, -1)", 1e-10, func(v, e float64) bool { return v == 2 && e == 0 }, "|| decided by its certainly true side"},
		{"select(x < 2 && 0.5 + x > 0.5, 2, -1)", 1e-10, func(v, e float64) bool { return v == 2 && e >= 3 }, "&& of a flippable side"},
		{"select((0.5 + x) != (0.5 + x), 2, -1)", 1e-10, func(v, e float64) bool { return v == -1 && e == 0 }, "a NaN test compares one value with itself: never flips"},
		{"select(0.5 + x > 0.5, 2, inf)", 1e-10, func(v, e float64) bool { return v == 2 && math.IsInf(e, 1) }, "an infinite other branch: unbounded"},
	} {
		k := mustBuild(t, "kernel: k\ndtypes: [f32]\ninputs: [x]\noutputs:\n  - y: "+c.formula+"\n")
		vals, bounds := k.EvalBound([]float64{c.x}, nil, f32)
		if !c.want(vals[0], bounds[0]) {
			t.Errorf("%s at x=%g (%s): value %g bound %g", c.formula, c.x, c.why, vals[0], bounds[0])
		}
	}
}

// TestDomainEdgeIsUndecided: where a partial function's operand may lie on
// either side of its domain's edge, NaN or not is undecided (an infinite
// bound); inside the domain, or exactly outside it, the bound is finite.
func TestDomainEdgeIsUndecided(t *testing.T) {
	f32 := ir.Rounding{Unit: 0x1p-24, FuncUlps: 1}
	for _, c := range []struct {
		formula   string
		x         float64
		undecided bool
	}{
		{"log(x * 3 - 3e-8)", 1e-8, true},      // 3e-8 - 3e-8 ± rounding: either side of 0
		{"log(x * 3 - 3e-8)", 1, false},        // far inside
		{"log(x)", -1, false},                  // exactly outside: NaN, decided
		{"sqrt(x * 3 - 3e-8)", 1e-8, true},     // sqrt of about 0 ± rounding
		{"pow(x * 3 - 3e-8, 2.5)", 1e-8, true}, // a negative base to a fraction
		{"pow(x * 3 - 3e-8, 2)", 1e-8, false},  // an integer power is defined everywhere
		{"log(2 * sin(x * 1e14))", 1e-3, true}, // a large angle's sine: any sign
		{"log1p(x * 3 - 3)", 0, false},         // log1p(-3): exactly outside
		{"rsqrt(x * x + 1e-6)", 0.5, false},    // rms_norm's form: well inside
	} {
		k := mustBuild(t, "kernel: k\ndtypes: [f32]\ninputs: [x]\noutputs:\n  - y: "+c.formula+"\n")
		_, bounds := k.EvalBound([]float64{c.x}, nil, f32)
		if got := math.IsInf(bounds[0], 1); got != c.undecided {
			t.Errorf("%s at x=%g: bound %g, undecided %v, want %v", c.formula, c.x, bounds[0], got, c.undecided)
		}
	}
}

// TestInfiniteInputHasAnExactBound: an infinite input converts exactly, so
// its bound is 0, not 0·∞ = NaN; a NaN bound on one term made a row_min's
// bound NaN and parity judged the whole row by the tolerance alone (a
// random spec, (z + row_min(z)) / log2(x·z), failed on 149 lanes).
func TestInfiniteInputHasAnExactBound(t *testing.T) {
	r := ir.Rounding{Unit: 0x1p-24, FuncUlps: 4, Underflow: 0x1p-150, Overflow: 0x1.ffffffp127, InputUnits: []float64{0, 0}}
	k := mustBuild(t, "kernel: k\nkind: rowwise\ndtypes: [f32]\ninputs: [x, z]\noutputs:\n  - y: x + row_min(z)\n")
	_, bounds := k.EvalRowsBound([][]float64{{1, 2, 3}, {-170, math.Inf(1), 4}}, nil, r)
	for j, b := range bounds[0] {
		if !(b >= 0) || math.IsInf(b, 1) {
			t.Errorf("bound at column %d is %g, want a finite bound", j, b)
		}
	}
}

// TestLogOfASubnormalProduct: log2 of a product in the subnormal range,
// which f32 knows to within half the smallest subnormal, is bounded by the
// interval's ends, not first order: log2(1.49·1.4e-45) is -148.42 in
// float64, while f32 rounds the product to 1.4e-45, whose log2 is -149:
// 0.58 away, where first order allows 0.48 (the random specs' log2(x·z)).
func TestLogOfASubnormalProduct(t *testing.T) {
	r := ir.Rounding{Unit: 0x1p-24, FuncUlps: 4, Underflow: 0x1p-150, Overflow: 0x1.ffffffp127}
	k := mustBuild(t, "kernel: k\ndtypes: [f32]\ninputs: [x, z]\noutputs:\n  - y: log2(x * z)\n")
	x, z := float64(float32(-1.49)), -float64(math.SmallestNonzeroFloat32)
	vals, bounds := k.EvalBound([]float64{x, z}, nil, r)
	f32 := math.Log2(float64(float32(x) * float32(z)))
	if d := math.Abs(f32 - vals[0]); d > bounds[0] {
		t.Errorf("f32's log2 %g is %g from the reference %g, outside the bound %g", f32, d, vals[0], bounds[0])
	}
}

// TestUndecidedNaNStaysUndecided: a NaN value whose NaN-ness is undecided
// (an infinite bound) keeps its infinite bound through later operations;
// adding a rounding of u·|NaN| made it NaN, which parity reads as no bound
// at all (pow(-1, row_min(x) - x) in f16, where row_min(x) = -6e-8 and x =
// 170: -170.00000006 in float64, -170 in f16).
func TestUndecidedNaNStaysUndecided(t *testing.T) {
	r := ir.Rounding{Unit: 0x1p-11, FuncUlps: 4, Underflow: 0x1p-25, Overflow: 65520}
	k := mustBuild(t, "kernel: k\ndtypes: [f16]\ninputs: [x, z]\noutputs:\n  - y: pow(-1, z - x) + 0.25\n")
	_, bounds := k.EvalBound([]float64{170, -0x1p-24}, nil, r)
	if !math.IsInf(bounds[0], 1) {
		t.Errorf("bound %g, want +Inf (undecided)", bounds[0])
	}
}

// TestInfiniteRowIsDecided: a row whose sum meets an exactly infinite
// term, or a NaN, is decided — the kernel's result is the same infinity or
// NaN in any order — so rms_norm's lanes on such rows keep a bound parity
// judges by (not undecided, which would accept anything there).
func TestInfiniteRowIsDecided(t *testing.T) {
	r := ir.Rounding{Unit: 0x1p-24, FuncUlps: 4, Underflow: 0x1p-150, Overflow: 0x1.ffffffp127, InputUnits: []float64{0}}
	k := mustBuild(t, "kernel: k\nkind: rowwise\ndtypes: [f32]\ninputs: [x]\noutputs:\n  - y: x * rsqrt(row_mean(x * x) + 1e-6)\n")
	for _, row := range [][]float64{{1, math.Inf(1), 3}, {1, math.NaN(), 3}, {math.Inf(-1), 2, math.Inf(1)}} {
		_, bounds := k.EvalRowsBound([][]float64{row}, nil, r)
		for j, b := range bounds[0] {
			if math.IsInf(b, 1) {
				t.Errorf("row %v column %d: undecided, want a decided bound", row, j)
			}
		}
	}
}

// TestInfiniteProductIsDecided: an exact infinity times (or over) a value
// whose sign its error cannot change is exactly that infinity, not
// undecided: swiglu's gate·sigmoid(gate)·up with up = +Inf.
func TestInfiniteProductIsDecided(t *testing.T) {
	r := ir.Rounding{Unit: 0x1p-24, FuncUlps: 4, Underflow: 0x1p-150, Overflow: 0x1.ffffffp127, InputUnits: []float64{0, 0}}
	k := mustBuild(t, "kernel: k\ndtypes: [f32]\ninputs: [gate, up]\noutputs:\n  - y: gate * sigmoid(gate) * up\n  - z: up / (gate * 3)\n")
	for _, g := range []float64{1, -3, 170, 1e-30} {
		vals, bounds := k.EvalBound([]float64{g, math.Inf(1)}, nil, r)
		for o := range vals {
			if math.IsInf(bounds[o], 1) || !math.IsInf(vals[o], 0) {
				t.Errorf("output %d at gate=%g, up=+Inf: %g ± %g, want an exact infinity", o, g, vals[o], bounds[o])
			}
		}
	}
}

// TestConvexFunctionOfAWideInterval: in bf16, rsqrt(0.000242) = 64.28 is
// known to ±0.25, and expm1 over that interval moves by 28% above and 22%
// below; first order allowed 25%, and a kernel landing at the interval's
// top failed parity (a random spec, expm1(rsqrt(x))). A monotone
// function's bound covers its interval's ends.
func TestConvexFunctionOfAWideInterval(t *testing.T) {
	bf16 := ir.Rounding{Unit: 0x1p-8, FuncUlps: 1, Underflow: 0x1p-134, Overflow: 0x1.ffp127}
	k := mustBuild(t, "kernel: k\ndtypes: [bf16]\ninputs: [x]\noutputs:\n  - y: expm1(rsqrt(x))\n")
	x := 0.000242
	vals, bounds := k.EvalBound([]float64{x}, nil, bf16)
	r := 1 / math.Sqrt(x)
	top := math.Expm1(r + r*0x1p-8) // rsqrt rounded up by one unit
	if d := top - vals[0]; d > bounds[0] {
		t.Errorf("expm1 at the top of rsqrt's interval is %g above %g, outside the bound %g", d, vals[0], bounds[0])
	}
}

// TestChoiceSkipsANaNOperand: max(a, NaN) is a, so its bound is a's; the
// NaN operand's own bound (NaN) left the result with none, and parity
// judged it by the tolerance alone (a random matmul spec,
// max(acc, row_mean(pow(…))), failed on 156 lanes).
func TestChoiceSkipsANaNOperand(t *testing.T) {
	f32 := ir.Rounding{Unit: 0x1p-24, FuncUlps: 4, Underflow: 0x1p-150, Overflow: 0x1.ffffffp127}
	k := mustBuild(t, "kernel: k\ndtypes: [f32]\ninputs: [x, z]\noutputs:\n  - y: max(x * 3, (z - z) / (z - z))\n  - w: min((z - z) / (z - z), x * 3)\n")
	vals, bounds := k.EvalBound([]float64{0.1, -1}, nil, f32)
	for o := range vals {
		if math.IsNaN(vals[o]) || !(bounds[o] > 0) || math.IsInf(bounds[o], 1) {
			t.Errorf("output %d: %g ± %g, want 0.3 with x·3's rounding bound", o, vals[o], bounds[o])
		}
	}
}
