package e2e

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgenrt"
)

// repoKernels builds the IR of kgen's own specs: tolerances and the
// independent float64 evaluator (ir.Eval64) come from there.
func repoKernels(t *testing.T) map[string]*ir.Kernel {
	t.Helper()
	cfg, err := config.Load("../kgen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := generate.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*ir.Kernel{}
	for _, k := range ks {
		out[k.Name] = k
	}
	return out
}

// sweep is a spread of inputs: zeros, tiny and huge magnitudes, both signs.
func sweep() []float32 {
	out := []float32{0, float32(math.Copysign(0, -1)), 1e-7, -1e-7, 100, -100, 1e4, -1e4}
	for x := -8.0; x <= 8; x += 1.0 / 16 {
		out = append(out, float32(x))
	}
	return out
}

// gelu is the tanh-approximation GELU written by hand in float64, with its
// constant computed rather than copied from the spec.
func gelu(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

// withinTolerance checks got against want element by element.
func withinTolerance(got, want []float64, tol ir.Tolerance) error {
	return withinToleranceBound(got, want, make([]float64, len(want)), tol)
}

// withinToleranceBound is withinTolerance widened by bound[i] at element i.
func withinToleranceBound(got, want, bound []float64, tol ir.Tolerance) error {
	for i := range got {
		if got[i] == want[i] {
			continue // also equal infinities
		}
		if d := math.Abs(got[i] - want[i]); !(d <= tol.Abs+tol.Rel*math.Abs(want[i])+bound[i]) {
			return fmt.Errorf("element %d: got %g, want %g (|diff| %g > %g + %g·|want|)", i, got[i], want[i], d, tol.Abs, tol.Rel)
		}
	}
	return nil
}

// runGELUCheck runs a GELU-shaped kernel's CPU reference in one storage
// dtype and compares it with the hand-written GELU.
func runGELUCheck(t *testing.T, k *kgenrt.Kernel, dt kgenrt.DType, tol ir.Tolerance) error {
	x, err := kgenrt.FromFloat32(dt, sweep())
	if err != nil {
		t.Fatal(err)
	}
	y, _ := kgenrt.New(dt, x.Len())
	if err := k.RunCPU([]*kgenrt.Tensor{x, y}); err != nil {
		t.Fatal(err)
	}
	want := make([]float64, x.Len())
	for i, v := range x.Float64s() {
		want[i] = gelu(v)
	}
	return withinTolerance(y.Float64s(), want, tol)
}

func TestGeluTanhReferenceMatchesHandWrittenGELU(t *testing.T) {
	ik := repoKernels(t)["gelu_tanh"]
	for _, v := range ik.Variants {
		dt := kgenrt.DType(v.DType)
		if err := runGELUCheck(t, kernels.GeluTanh.Describe(), dt, v.Tolerance); err != nil {
			t.Errorf("gelu_tanh %s: %v", dt, err)
		}
	}
	// Not vacuous: the same check rejects GELU's other formulas, generated
	// and run by the very same path (erf: off by up to 4e-4; quick: 2e-2).
	for _, other := range []*kgenrt.Kernel{kernels.GeluErf.Describe(), kernels.GeluQuick.Describe()} {
		if err := runGELUCheck(t, other, kgenrt.F32, ik.Variants[0].Tolerance); err == nil {
			t.Errorf("the GELU check accepts %s: it cannot tell formulas apart", other.Name)
		}
	}
}

// Reference64 and the IR's own float64 evaluator are independent
// implementations of the same formulas; they agree to the last bits.
func TestReference64MatchesIREval64(t *testing.T) {
	irk := repoKernels(t)
	for _, k := range kernels.Kernels() {
		if k.Kind == "rowwise" || k.Kind == "matmul" { // rows_test.go; matmul: kgenrt's MatMul tests and parity
			continue
		}
		ik := irk[k.Name]
		inputs, params := cpuInputs(k)
		outs, err := k.RunCPU64(nil, inputs, params...)
		if err != nil {
			t.Fatal(err)
		}
		for i := range inputs[0] {
			var in []float64
			for _, col := range inputs {
				in = append(in, col[i])
			}
			want := ik.Eval64(in, params)
			for o := range outs {
				if got := outs[o][i]; got != want[o] && !(math.IsNaN(got) && math.IsNaN(want[o])) &&
					math.Abs(got-want[o]) > 1e-14*math.Abs(want[o]) {
					t.Errorf("%s output %d at %v: Reference64 %g, ir.Eval64 %g", k.Name, o, in, got, want[o])
				}
			}
		}
	}
}

// cpuInputs gives every input the sweep (shifted per input so that inputs
// differ) and every param a fixed value.
func cpuInputs(k *kgenrt.Kernel) ([][]float64, []float64) {
	var inputs [][]float64
	for j := range k.Inputs() {
		var col []float64
		for _, x := range sweep() {
			col = append(col, float64(x)+float64(j)/4)
		}
		inputs = append(inputs, col)
	}
	var params []float64
	for range k.Params() {
		params = append(params, 3)
	}
	return inputs, params
}

// For every kernel × dtype, the CPU reference lands within the spec's
// tolerance of the unrounded evaluation of the values it actually stored.
func TestReferenceWithinToleranceOfReference64(t *testing.T) {
	irk := repoKernels(t)
	for _, k := range kernels.Kernels() {
		if k.Kind == "rowwise" || k.Kind == "matmul" { // rows_test.go; matmul: kgenrt's MatMul tests and parity
			continue
		}
		for _, v := range irk[k.Name].Variants {
			t.Run(k.Name+"/"+v.DType.String(), func(t *testing.T) {
				checkAgainst64(t, k, irk[k.Name], kgenrt.DType(v.DType), v.Tolerance)
			})
		}
	}
}

// checkAgainst64 holds the CPU reference within the kernel's tolerance,
// widened by the f32 evaluation's rounding bound (ir.EvalBoundAt, the
// parity rule): a derivative near GELU's saturation cancels 1 + tanh(u) to
// 0 in f32 where float64 keeps 1e-6, and the bound says so.
func checkAgainst64(t *testing.T, k *kgenrt.Kernel, ik *ir.Kernel, dt kgenrt.DType, tol ir.Tolerance) {
	inputs, params := cpuInputs(k)
	var tensors []*kgenrt.Tensor
	var stored [][]float64
	for _, b := range k.Tensors() {
		d := b.DType
		if d == kgenrt.T {
			d = dt
		}
		vals := make([]float32, len(inputs[0]))
		if b.Role == kgenrt.Input {
			for i, x := range inputs[len(tensors)] {
				vals[i] = float32(x)
			}
		}
		tn, err := kgenrt.FromFloat32(d, vals)
		if err != nil {
			t.Fatal(err)
		}
		tensors = append(tensors, tn)
		if b.Role == kgenrt.Input {
			stored = append(stored, tn.Float64s())
		}
	}
	if err := k.RunCPU(tensors, params...); err != nil {
		t.Fatal(err)
	}
	want, err := k.RunCPU64(nil, stored, params...)
	if err != nil {
		t.Fatal(err)
	}
	for o, out := range tensors[len(stored):] {
		// Where the ideal value overflows the storage dtype, the kernel
		// rightly stores infinity: compare with the value that storage can hold.
		for i, w := range want[o] {
			probe, _ := kgenrt.FromFloat32(out.DType(), []float32{float32(w)})
			if r := float64(probe.Float32At(0)); math.IsInf(r, 0) {
				want[o][i] = r
			}
		}
		widened := make([]float64, len(want[o]))
		for i := range want[o] {
			el := make([]float64, len(stored))
			for j := range stored {
				el[j] = stored[j][i]
			}
			_, bounds := ik.EvalBoundAt(i, len(want[o]), el, params, ir.Rounding{Unit: 0x1p-24, FuncUlps: 4})
			widened[i] = bounds[o]
		}
		if err := withinToleranceBound(out.Float64s(), want[o], widened, tol); err != nil {
			t.Errorf("output %s: %v", k.Outputs()[o].Name, err)
		}
	}
}

// The typed errors name the kernel and, for ports, the backend.
func TestTypedErrors(t *testing.T) {
	x, _ := kgenrt.FromFloat32(kgenrt.F32, []float32{1, 2})
	g, _ := kgenrt.FromFloat32(kgenrt.F32, []float32{1, 2})
	err := kernels.ResidualScale.Reference(x, x, g, x, x)
	var de *kgenrt.DTypeError
	if !errors.As(err, &de) || de.Kernel != "residual_scale" || de.DType != kgenrt.F32 || !errors.Is(err, kgenrt.ErrDType) {
		t.Errorf("f32 residual_scale: %v", err)
	}
	if _, err := kernels.ResidualScale.Variant(kgenrt.F32); !errors.As(err, &de) {
		t.Errorf("Variant(f32): %v", err)
	}
	y, _ := kgenrt.New(kgenrt.F32, 2)
	// gelu_tanh has a CUDA port: where it cannot run (no driver, no GPU, no
	// fatbin built) Select refuses it with the reason.
	if err := kernels.GeluTanh.Run(kgenrt.CUDA, x, y); err != nil {
		var pe *kgenrt.PortError
		if !errors.As(err, &pe) || pe.Unavailable == nil || !errors.Is(err, kgenrt.ErrNoPort) ||
			!strings.Contains(err.Error(), "its cuda port cannot run here") {
			t.Errorf("cuda: %v", err)
		}
	}
	// and a ROCm port, which no machine here can run (no libamdhip64).
	if err := kernels.GeluTanh.Run(kgenrt.ROCm, x, y); err != nil {
		var pe *kgenrt.PortError
		if !errors.As(err, &pe) || pe.Unavailable == nil || pe.Backend != kgenrt.ROCm || !errors.Is(err, kgenrt.ErrNoPort) ||
			!strings.Contains(err.Error(), "its rocm port cannot run here") {
			t.Errorf("rocm: %v", err)
		}
	}
	// attention has no CUDA port (cuda: null): its slot is nil, and Select
	// says so.
	q, _ := kgenrt.New(kgenrt.F32, 2, 2)
	o, _ := kgenrt.New(kgenrt.F32, 2, 2)
	for _, b := range []kgenrt.Backend{kgenrt.CUDA} {
		err := kernels.Attention.Run(b, q, q, q, o, 1)
		var pe *kgenrt.PortError
		if !errors.As(err, &pe) || pe.Kernel != "attention" || pe.Backend != b || !errors.Is(err, kgenrt.ErrNoPort) ||
			!strings.Contains(err.Error(), "kernel attention has no "+b.String()+" port") ||
			!strings.Contains(err.Error(), "fallback path (e.g. kernels.Attention.Reference)") {
			t.Errorf("%s: %v", b, err)
		}
		if kernels.Attention.Available(b) {
			t.Errorf("Available(%s) with a nil slot", b)
		}
	}
	if err := kernels.GeluTanh.Run(kgenrt.Metal, x, y); kernels.GeluTanh.Available(kgenrt.Metal) != (err == nil) {
		t.Errorf("Run(Metal) = %v but Available(Metal) = %v", err, kernels.GeluTanh.Available(kgenrt.Metal))
	}
}

// leaky_relu computes in the storage dtype: the slope is rounded to it, the
// product is rounded to it, and the result is exact — bit for bit.
func TestReferenceRoundsInTheComputeType(t *testing.T) {
	xs := sweep()
	for _, dt := range []kgenrt.DType{kgenrt.F16, kgenrt.BF16} {
		round := kgenrt.RoundF16
		if dt == kgenrt.BF16 {
			round = kgenrt.RoundBF16
		}
		x, _ := kgenrt.FromFloat32(dt, xs)
		y, _ := kgenrt.New(dt, len(xs))
		if err := kernels.LeakyRelu.Reference(x, y, 0.1); err != nil {
			t.Fatal(err)
		}
		for i, v := range x.Float32s() {
			want := v
			if !(v >= 0) {
				want = round(round(0.1) * v)
			}
			if got := y.Float32At(i); math.Float32bits(got) != math.Float32bits(want) {
				t.Errorf("%v leaky_relu(%g) = %g, want %g", dt, v, got, want)
			}
		}
	}
}
