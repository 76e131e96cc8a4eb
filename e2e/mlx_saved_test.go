package e2e

import (
	"fmt"
	"math"
	"testing"

	"github.com/kgen-dev/kgen/kgenrt"
	golden "github.com/kgen-dev/kgen/testdata/golden/backward/want/gen/kernels"
)

// TestSavedBackwardMatchesMLX runs the golden layer_norm_saved (its mean
// and 1/std saved, save:) and its backward on the values it saved, on the
// CPU harness, against MLX: the forward against MLX's LayerNorm times the
// scale, the backward against mx.vjp with respect to x, w, b and the scale
// param (a total_sum). Bounds as TestBackwardMatchesMLX; the scale's, a
// sum over every element, 2⁻¹⁶ of the sum of its terms' magnitudes.
func TestSavedBackwardMatchesMLX(t *testing.T) {
	needMLX(t)
	emulateMetal(t)
	const eps, scale = 1e-5, 1.25
	for _, sh := range [][2]int{{37, 64}, {8, 1000}} {
		rows, cols := sh[0], sh[1]
		t.Run(fmt.Sprintf("%dx%d", rows, cols), func(t *testing.T) {
			n := rows * cols
			xs, ws, bs := seeded(n, 2, 3), seeded(cols, 3, 1.5), seeded(cols, 6, 1)
			x, w, b := f32s(t, xs, rows, cols), f32s(t, ws, cols), f32s(t, bs, cols)
			dy := f32s(t, seeded(n, 1, 2), rows, cols)
			y, mean, inv := newLike(x), f32s(t, make([]float32, rows), rows), f32s(t, make([]float32, rows), rows)
			run(t, golden.LayerNormSaved.Run(kgenrt.Metal, x, w, b, y, mean, inv, eps, scale))
			gx, gw, gb, gs := newLike(x), newLike(w), newLike(w), f32s(t, []float32{0}, 1)
			run(t, golden.LayerNormSavedBackward.Run(kgenrt.Metal, x, w, b, mean, inv, dy, gx, gw, gb, gs, scale))

			in := map[string]*kgenrt.Tensor{"x": x, "w": w, "b": b, "dy": dy}
			script := fmt.Sprintf(`
x, dy, w, b = load('x', %d, %d), load('dy', %[1]d, %[2]d), load('w', %[2]d), load('b', %[2]d)
f = lambda x, w, b, s: ((x - mx.mean(x, axis=-1, keepdims=True)) * mx.rsqrt(mx.var(x, axis=-1, keepdims=True) + %g) * w + b) * s
y, (gx, gw, gb, gs) = mx.vjp(f, [x, w, b, mx.array(%g)], [dy])
`, rows, cols, eps, scale)
			want := runMLX(t, script+"save('y', y[0]); save('gx', gx)\n", in, n, "y", "gx")
			compareGrad(t, "layer_norm_saved y", y, want["y"])
			compareGrad(t, "layer_norm_saved_backward x_grad", gx, want["gx"])
			want = runMLX(t, script+"save('gw', gw); save('gb', gb)\n", in, cols, "gw", "gb")
			compareGrad(t, "layer_norm_saved_backward w_grad", gw, want["gw"])
			compareGrad(t, "layer_norm_saved_backward b_grad", gb, want["gb"])
			want = runMLX(t, script+"save('gs', gs.reshape(1))\n", in, 1, "gs")
			mag := 0.0
			for r := range rows {
				m, v := 0.0, 0.0
				for j := range cols {
					m += float64(xs[r*cols+j])
				}
				m /= float64(cols)
				for j := range cols {
					d := float64(xs[r*cols+j]) - m
					v += d * d
				}
				is := 1 / math.Sqrt(v/float64(cols)+eps)
				for j := range cols {
					i := r*cols + j
					mag += math.Abs(float64(dy.Float32At(i)) * ((float64(xs[i])-m)*is*float64(ws[j]) + float64(bs[j])))
				}
			}
			compareMLX(t, "layer_norm_saved_backward scale_grad", gs, want["gs"], 0x1p-16*mag, 0)
		})
	}
}
