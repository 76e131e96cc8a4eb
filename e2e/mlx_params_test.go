package e2e

import (
	"fmt"
	"math"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// TestParamGradientsMatchMLX runs the built-ins whose backward lists a
// param (softcap's cap, leaky_relu's slope: total_sum outputs, three
// launches on the CPU harness) against mx.vjp with respect to the input
// and the scalar. A param's gradient is a sum over every element whose
// terms may cancel, so its bound is 2⁻¹⁶ of the sum of the terms'
// magnitudes (float64 here), 256 times the two float32 sums' rounding; a
// wrong sign, a dropped term or a lost chunk moves it by far more.
func TestParamGradientsMatchMLX(t *testing.T) {
	needMLX(t)
	emulateMetal(t)
	for _, sh := range [][2]int{{37, 64}, {8, 1000}, {300, 7}} {
		rows, cols := sh[0], sh[1]
		t.Run(fmt.Sprintf("%dx%d", rows, cols), func(t *testing.T) {
			n := rows * cols
			xs, dys := seeded(n, 2, 3), seeded(n, 1, 2)
			x, dy := f32s(t, xs, rows, cols), f32s(t, dys, rows, cols)
			in := map[string]*kgenrt.Tensor{"x": x, "dy": dy}
			load := fmt.Sprintf("x, dy = load('x', %d, %d), load('dy', %[1]d, %[2]d)\n", rows, cols)
			const c, slope = 1.75, 0.125

			gx, gc := newLike(x), f32s(t, []float32{0}, 1)
			run(t, kernels.SoftcapBackward.Run(kgenrt.Metal, x, dy, gx, gc, c))
			want := runMLX(t, load+fmt.Sprintf(`
_, (gx, gc) = mx.vjp(lambda x, c: c * mx.tanh(x / c), [x, mx.array(%g)], [dy])
save('gx', gx); save('gc', gc)
`, c), in, n, "gx")
			compareGrad(t, "softcap x_grad", gx, want["gx"])
			wantC := runMLX(t, load+fmt.Sprintf(`
_, (gx, gc) = mx.vjp(lambda x, c: c * mx.tanh(x / c), [x, mx.array(%g)], [dy])
save('gc', gc.reshape(1))
`, c), in, 1, "gc")
			mag := 0.0
			for i := range xs {
				u := float64(xs[i]) / c
				th := math.Tanh(u)
				mag += math.Abs(float64(dys[i]) * (th - u*(1-th*th)))
			}
			compareMLX(t, "softcap cap_grad", gc, wantC["gc"], 0x1p-16*mag, 0)

			gx, gs := newLike(x), f32s(t, []float32{0}, 1)
			run(t, kernels.LeakyReluBackward.Run(kgenrt.Metal, x, dy, gx, gs, slope))
			script := fmt.Sprintf(`
_, (gx, gs) = mx.vjp(lambda x, s: mx.where(x >= 0, x, s * x), [x, mx.array(%g)], [dy])
`, slope)
			want = runMLX(t, load+script+"save('gx', gx)\n", in, n, "gx")
			compareGrad(t, "leaky_relu x_grad", gx, want["gx"])
			wantS := runMLX(t, load+script+"save('gs', gs.reshape(1))\n", in, 1, "gs")
			mag = 0
			for i := range xs {
				if xs[i] < 0 {
					mag += math.Abs(float64(dys[i]) * float64(xs[i]))
				}
			}
			compareMLX(t, "leaky_relu slope_grad", gs, wantS["gs"], 0x1p-16*mag, 0)
		})
	}
}
