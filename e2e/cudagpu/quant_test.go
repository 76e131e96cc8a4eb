package cudagpu

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgenrt"
	"github.com/kgen-dev/kgen/verify/parity"
)

// quantShapes cross both CUDA forms of a quantized matmul (ir.QuantCUDA)
// at their edges — the skinny kernel at m ≤ 16 (one token, one tile of 8
// and its edge 9, two tiles at 16), the tiled one from 17 (a partial
// 128-row tile, two and more tiles at 129 and 300), the dense form above
// ir.DenseAbove where n is a multiple of 8 (128, 257, 300 × 264, 513, 4096)
// and the tiled kernel in its place where not (129 × 17, 300 × 260) — with n off the 16 and
// 128 columns of a block (7, 17, 130, 260), k of one group, partial steps
// of both kernels (3g, 5g) and long ones (4096), an MLP's widths (n =
// 14336, k = 4096), and empty outputs; every shape gets parity's
// adversarial groups (a zero, NaN, +Inf and subnormal scale, extreme
// codes) and rows of x (NaN, ±Inf, zeros, huge). g is the kernel's group.
func quantShapes(g int) []parity.MatmulShape {
	return []parity.MatmulShape{
		{M: 1, N: 7, K: g}, {M: 1, N: 40, K: 5 * g}, {M: 8, N: 17, K: 3 * g}, {M: 9, N: 33, K: 2 * g}, {M: 16, N: 130, K: 3 * g},
		{M: 17, N: 40, K: 3 * g}, {M: 33, N: 130, K: 5 * g}, {M: 129, N: 17, K: g}, {M: 300, N: 260, K: 5 * g},
		{M: 1, N: 4096, K: 4096}, {M: 4, N: 14336, K: 512}, {M: 16, N: 256, K: 4096}, {M: 128, N: 512, K: 1024}, {M: 4096, N: 64, K: 256},
		{M: 257, N: 136, K: 3 * g}, {M: 513, N: 1024, K: 1024}, {M: 300, N: 264, K: 5 * g}, // the dense form (n a multiple of 8)
		{M: 0, N: 7, K: g}, {M: 7, N: 0, K: g},
	}
}

// quantKernels are the built-ins whose CUDA port is the quantized one.
func quantKernels(t *testing.T) []*ir.Kernel {
	_, ks := load(t)
	var out []*ir.Kernel
	for _, k := range ks {
		if mm := k.Matmul(); mm != nil && mm.QuantCUDA != nil {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		t.Fatal("no quantized built-in has a CUDA port")
	}
	return out
}

func groupOf(k *ir.Kernel) int {
	g := 0
	for _, b := range k.Matmul().B {
		g = max(g, b.Quant.Group)
	}
	return g
}

// TestQuantParity: every quantized built-in × dtype through its CUDA port
// (the port picks the skinny or the tiled kernel by m), host tensors and
// NaN-poisoned outputs, against the float64 reference of the exactly
// dequantized weights with the bound of the port's arithmetic (γ_K, and
// the weights rounded to the storage type for the tensor cores:
// ir.Kernel.QuantWeightRounding).
func TestQuantParity(t *testing.T) {
	var report strings.Builder
	fmt.Fprintf(&report, "| variant | shapes | elements checked | failed | max |got-ref| |\n|---|---|---|---|---|\n")
	for _, k := range quantKernels(t) {
		d, port := readyPort(t, k.Name)
		shapes := quantShapes(groupOf(k))
		for _, v := range k.Variants {
			only := *k
			only.Variants = []ir.Variant{v}
			t.Run(v.HostName, func(t *testing.T) {
				start := time.Now()
				results, err := parity.Check(context.Background(), &only, nil, parity.Options{Seed: 11, Matmul: shapes, Backend: ir.CUDA, Run: gpuRunner(d, port)})
				if err != nil {
					t.Fatalf("%s: %v", v.HostName, err)
				}
				for _, r := range results {
					if r.Failed > 0 {
						t.Errorf("%s %dx%d: %d of %d elements outside tolerance; first: %s", r.HostName, r.Rows, r.Cols, r.Failed, r.Checked, r.First)
					}
				}
				for _, r := range parity.Summarize(results) {
					if !r.OK() {
						t.Errorf("%s", r)
					}
					line := fmt.Sprintf("| %s | %d | %d | %d | %.3g |", r.HostName, len(shapes), r.Lanes, r.Differ, r.MaxAbs)
					t.Logf("%s (%v)", line, time.Since(start).Round(time.Millisecond))
					fmt.Fprintln(&report, line)
				}
			})
		}
	}
	t.Logf("CUDA quantized matmul parity:\n%s", report.String())
	saveReport("parity_quant.md", report.String())
}

// TestQuantPlanted runs where $KGEN_QUANT_PLANTED names a quantized
// built-in whose fatbin in $KGEN_CUDA_FATBIN_DIR was built from a mutated
// .cu (bench/cuda/quant_h200.sh plants the bugs): the judge of
// TestQuantParity must fail every variant at the shapes of the form the
// bug is in ($KGEN_QUANT_SHAPES, "MxNxK,…").
func TestQuantPlanted(t *testing.T) {
	name := os.Getenv("KGEN_QUANT_PLANTED")
	if name == "" {
		t.Skip("KGEN_QUANT_PLANTED is not set")
	}
	var k *ir.Kernel
	for _, q := range quantKernels(t) {
		if q.Name == name {
			k = q
		}
	}
	if k == nil {
		t.Fatalf("%s is not a quantized built-in with a CUDA port", name)
	}
	d, port := readyPort(t, k.Name)
	t.Setenv("KGEN_MATMUL_SHAPES", os.Getenv("KGEN_QUANT_SHAPES"))
	shapes := shapesEnv(t)
	results, err := parity.Check(context.Background(), k, nil, parity.Options{Seed: 5, Matmul: shapes, Backend: ir.CUDA, Run: gpuRunner(d, port)})
	if err != nil {
		t.Logf("the planted bug stops the run: %v", err)
		return
	}
	failed := map[string]int{}
	for _, r := range results {
		failed[r.HostName] += r.Failed
		t.Logf("%s %dx%d: %d of %d elements outside tolerance", r.HostName, r.Rows, r.Cols, r.Failed, r.Checked)
	}
	for _, v := range k.Variants {
		if failed[v.HostName] == 0 {
			t.Errorf("%s passes parity with the planted bug", v.HostName)
		}
	}
}

// TestQuantTypedLauncher goes through the generated API (Run → Select →
// the CUDA port, which picks the form by m): Q4_0 weights packed by
// kgenrt.Quantize, at a decode step (m = 1) and a tiled m (40), against the
// CPU reference on the same tensors.
func TestQuantTypedLauncher(t *testing.T) {
	if _, err := kernels.QmatmulQ40.Select(kgenrt.CUDA); err != nil {
		t.Skipf("no CUDA here: %v", err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	n, k := 300, 512
	w := make([]float32, n*k)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	packed, _, _, err := kgenrt.Quantize(kgenrt.GGMLQuant(kgenrt.Q4_0), w, n, k, kgenrt.BF16)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []int{1, 40} {
		xs := make([]float32, m*k)
		for i := range xs {
			xs[i] = float32(r.NormFloat64())
		}
		x2, err := kgenrt.FromFloat32(kgenrt.BF16, xs, m, k)
		if err != nil {
			t.Fatal(err)
		}
		y, _ := kgenrt.New(kgenrt.BF16, m, n)
		ref, _ := kgenrt.New(kgenrt.BF16, m, n)
		if err := kernels.QmatmulQ40.Run(kgenrt.CUDA, x2, packed, y); err != nil {
			t.Fatal(err)
		}
		if err := kernels.QmatmulQ40.Reference(x2, packed, ref); err != nil {
			t.Fatal(err)
		}
		// The tensor cores take the weights rounded to bf16 (2^-9 relative
		// each): over k = 512 products of unit size that is ~0.04 absolute,
		// a few times that at worst, against outputs of size ~20.
		worst, big := 0.0, 0.0
		for i := range m * n {
			g, want := float64(y.Float32At(i)), float64(ref.Float32At(i))
			worst, big = math.Max(worst, math.Abs(g-want)), math.Max(big, math.Abs(want))
		}
		if worst > 0.01*big {
			t.Errorf("m = %d: the CUDA result is %.3g off the reference (largest |ref| %.3g)", m, worst, big)
		}
		t.Logf("m = %d: worst |got - ref| = %.3g, largest |ref| %.3g", m, worst, big)
	}
}
