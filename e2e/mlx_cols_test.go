package e2e

import (
	"fmt"
	"math"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// TestColSumsMatchMLX runs the column reductions' Metal kernels (the
// generated launchers on kgenrt.Metal: the chain of the row passes and the
// combine over a workspace, the MSL on the CPU harness) against MLX:
// bias_grad's db against mx.sum(dy, axis=0), and rms_norm_backward's dx and
// dw against the vector-Jacobian product of mx.fast.rms_norm (mx.vjp), an
// implementation of the backward pass that is not kgen's formulas. MLX
// computes in float32 on the inputs as stored in the kernel's dtype, so the
// difference is the kernel's storage rounding plus the two float32
// evaluations' roundings: for a sum over rows, each within (rows + 16)·2⁻²⁴
// of Σ|terms| (any order; kgen's depth is below it, docs/colwise.md).
func TestColSumsMatchMLX(t *testing.T) {
	needMLX(t)
	emulateMetal(t)
	const eps = 1e-6
	dtypes := []struct {
		dt  kgenrt.DType
		rel float64 // half an ulp of the storage type, relative
	}{{kgenrt.F32, 0x1p-24}, {kgenrt.F16, 0x1p-11}, {kgenrt.BF16, 0x1p-8}}
	for _, sh := range [][2]int{{77, 64}, {300, 1000}} {
		rows, cols := sh[0], sh[1]
		for _, d := range dtypes {
			t.Run(fmt.Sprintf("%s_%dx%d", d.dt, rows, cols), func(t *testing.T) {
				dy, _ := kgenrt.FromFloat32(d.dt, seeded(rows*cols, 1, 2), rows, cols)
				x, _ := kgenrt.FromFloat32(d.dt, seeded(rows*cols, 2, 3), rows, cols)
				w, _ := kgenrt.FromFloat32(d.dt, seeded(cols, 3, 1.5), cols)
				dx, _ := kgenrt.New(d.dt, rows, cols)
				dw, _ := kgenrt.New(d.dt, cols)
				db, _ := kgenrt.New(d.dt, cols)
				if err := kernels.RmsNormBackward.Run(kgenrt.Metal, x, w, dy, dx, dw, eps); err != nil {
					t.Fatal(err)
				}
				if err := kernels.BiasGrad.Run(kgenrt.Metal, dy, db); err != nil {
					t.Fatal(err)
				}
				want := runMLX(t, fmt.Sprintf(`
dy, x, w = load('dy', %d, %d), load('x', %[1]d, %[2]d), load('w', %[2]d)
_, (dx, dw) = mx.vjp(lambda x, w: mx.fast.rms_norm(x, w, %[3]g), [x, w], [dy])
save('dx', dx)
save('dw', dw)
save('db', mx.sum(dy, axis=0))
`, rows, cols, eps), map[string]*kgenrt.Tensor{"dy": dy, "x": x, "w": w}, cols, "dw", "db")
				dxWant := runMLX(t, fmt.Sprintf(`
dy, x, w = load('dy', %d, %d), load('x', %[1]d, %[2]d), load('w', %[2]d)
_, (dx, dw) = mx.vjp(lambda x, w: mx.fast.rms_norm(x, w, %[3]g), [x, w], [dy])
save('dx', dx)
`, rows, cols, eps), map[string]*kgenrt.Tensor{"dy": dy, "x": x, "w": w}, rows*cols, "dx")
				// Σ|terms| per column: dy·x·inv for dw, dy for db.
				absW, absB := make([]float64, cols), make([]float64, cols)
				for r := range rows {
					ss := 0.0
					for j := range cols {
						v := float64(x.Float32At(r*cols + j))
						ss += v * v
					}
					inv := 1 / math.Sqrt(ss/float64(cols)+eps)
					for j := range cols {
						g := float64(dy.Float32At(r*cols + j))
						absW[j] += math.Abs(g * float64(x.Float32At(r*cols+j)) * inv)
						absB[j] += math.Abs(g)
					}
				}
				sumBound := func(abs []float64) []float64 {
					out := make([]float64, len(abs))
					for j, a := range abs {
						out[j] = 2 * float64(rows+16) * 0x1p-24 * a
					}
					return out
				}
				compareCols(t, "db", db, want["db"], sumBound(absB), d.rel)
				compareCols(t, "dw", dw, want["dw"], sumBound(absW), d.rel)
				// dx per element: storage rounding, and f32 formulas on both
				// sides (the row means' sums over cols, rsqrt): 1e-5 relative
				// of the row's scale |inv·dy·w| ≤ inv·6·1.5.
				compareMLX(t, "dx", dx, dxWant["dx"], 1e-5*9, d.rel*2)
			})
		}
	}
}

// compareCols reports the columns where got is farther from MLX's want
// than rel·|want| (the storage rounding) plus bound[j], and logs the
// largest difference against what was allowed.
func compareCols(t *testing.T, what string, got *kgenrt.Tensor, want, bound []float64, rel float64) {
	t.Helper()
	if got.Len() != len(want) {
		t.Fatalf("%s: %d values, MLX gave %d", what, got.Len(), len(want))
	}
	worst, bad := 0.0, 0
	for j, w := range want {
		g := float64(got.Float32At(j))
		allowed := 2*rel*math.Abs(w) + bound[j] + 1e-30
		d := math.Abs(g - w)
		worst = max(worst, d/allowed)
		if !(d <= allowed) {
			if bad++; bad <= 5 {
				t.Errorf("%s[%d] = %g, MLX %g (allowed ±%.3g)", what, j, g, w, allowed)
			}
		}
	}
	t.Logf("%s: %d columns, the largest |kgen - MLX| is %.3g of its allowance; %d beyond", what, len(want), worst, bad)
}
