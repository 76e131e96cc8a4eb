package e2e

import (
	"fmt"
	"math"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// TestBackwardMatchesMLX runs the derived backward kernels of the built-ins
// (backward: true; the generated launchers on kgenrt.Metal, the MSL on the
// CPU harness) against MLX's autodiff of the same forward (mx.vjp), an
// implementation of the backward pass that shares nothing with kgen's
// derivation. f32 storage: the difference is the two float32 evaluations'
// roundings, a few units of 2⁻²⁴ times the row's sums; the bound, 2⁻¹⁶ of
// the largest gradient plus 2⁻¹⁶ relative, is 256 times that and far
// below any wrong term (a dropped product-rule term or a sign moves
// gradients by their own size).
func TestBackwardMatchesMLX(t *testing.T) {
	needMLX(t)
	emulateMetal(t)
	for _, sh := range [][2]int{{37, 64}, {8, 1000}} {
		rows, cols := sh[0], sh[1]
		t.Run(fmt.Sprintf("%dx%d", rows, cols), func(t *testing.T) {
			x := f32s(t, seeded(rows*cols, 2, 3), rows, cols)
			up := f32s(t, seeded(rows*cols, 5, 2), rows, cols)
			w := f32s(t, seeded(cols, 3, 1.5), cols)
			dy := f32s(t, seeded(rows*cols, 1, 2), rows, cols)
			dloss := f32s(t, seeded(rows, 4, 2), rows)
			target := make([]float32, rows)
			for r := range target {
				target[r] = float32((r * 7919) % cols)
			}
			tgt, _ := kgenrt.FromFloat32(kgenrt.I32, target, rows)
			tgtF := f32s(t, target, rows)
			in := map[string]*kgenrt.Tensor{"x": x, "up": up, "w": w, "dy": dy, "dloss": dloss, "target": tgtF}
			n := rows * cols
			load := fmt.Sprintf(`
x, up, dy = load('x', %d, %d), load('up', %[1]d, %[2]d), load('dy', %[1]d, %[2]d)
w, dloss, target = load('w', %[2]d), load('dloss', %[1]d), load('target', %[1]d).astype(mx.int32)
`, rows, cols)

			gx, gw, gb := newLike(x), newLike(w), newLike(w)
			run(t, kernels.LayerNormBackward.Run(kgenrt.Metal, x, w, dy, gx, gw, gb, 1e-5))
			want := runMLX(t, load+`
_, (gx, gw, gb) = mx.vjp(lambda x, w, b: mx.fast.layer_norm(x, w, b, 1e-5), [x, w, mx.zeros_like(w)], [dy])
save('gx', gx); save('gw', gw); save('gb', gb)
`, in, n, "gx")
			compareGrad(t, "layer_norm x_grad", gx, want["gx"])
			want = runMLX(t, load+`
_, (gx, gw, gb) = mx.vjp(lambda x, w, b: mx.fast.layer_norm(x, w, b, 1e-5), [x, w, mx.zeros_like(w)], [dy])
save('gw', gw); save('gb', gb)
`, in, cols, "gw", "gb")
			compareGrad(t, "layer_norm w_grad", gw, want["gw"])
			compareGrad(t, "layer_norm b_grad", gb, want["gb"])

			gx = newLike(x)
			run(t, kernels.SoftmaxBackward.Run(kgenrt.Metal, x, dy, gx))
			want = runMLX(t, load+`
_, (gx,) = mx.vjp(lambda x: mx.softmax(x, axis=-1), [x], [dy])
save('gx', gx)
`, in, n, "gx")
			compareGrad(t, "softmax x_grad", gx, want["gx"])

			gx = newLike(x)
			run(t, kernels.LogSoftmaxBackward.Run(kgenrt.Metal, x, dy, gx))
			want = runMLX(t, load+`
_, (gx,) = mx.vjp(lambda x: x - mx.logsumexp(x, axis=-1, keepdims=True), [x], [dy])
save('gx', gx)
`, in, n, "gx")
			compareGrad(t, "log_softmax x_grad", gx, want["gx"])

			gx = newLike(x)
			run(t, kernels.CausalSoftmaxBackward.Run(kgenrt.Metal, x, dy, gx, 0.125, 0))
			want = runMLX(t, load+`
r, c = mx.arange(x.shape[0])[:, None], mx.arange(x.shape[1])[None, :]
_, (gx,) = mx.vjp(lambda x: mx.softmax(mx.where(c > r, -mx.inf, x * 0.125), axis=-1), [x], [dy])
save('gx', gx)
`, in, n, "gx")
			compareGrad(t, "causal_softmax x_grad", gx, want["gx"])

			gg, gu := newLike(x), newLike(x)
			run(t, kernels.SwigluBackward.Run(kgenrt.Metal, x, up, dy, gg, gu))
			want = runMLX(t, load+`
_, (gg, gu) = mx.vjp(lambda g, u: g * mx.sigmoid(g) * u, [x, up], [dy])
save('gg', gg); save('gu', gu)
`, in, n, "gg", "gu")
			compareGrad(t, "swiglu gate_grad", gg, want["gg"])
			compareGrad(t, "swiglu up_grad", gu, want["gu"])

			gx = newLike(x)
			run(t, kernels.GeluTanhBackward.Run(kgenrt.Metal, x, dy, gx))
			want = runMLX(t, load+`
_, (gx,) = mx.vjp(lambda x: 0.5 * x * (1 + mx.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))), [x], [dy])
save('gx', gx)
`, in, n, "gx")
			compareGrad(t, "gelu_tanh x_grad", gx, want["gx"])

			gx = newLike(x)
			run(t, kernels.CrossEntropyBackward.Run(kgenrt.Metal, x, tgt, dloss, gx))
			want = runMLX(t, load+`
f = lambda x: mx.logsumexp(x, axis=-1) - mx.take_along_axis(x, target[:, None], axis=-1)[:, 0]
_, (gx,) = mx.vjp(f, [x], [dloss])
save('gx', gx)
`, in, n, "gx")
			compareGrad(t, "cross_entropy logits_grad", gx, want["gx"])
		})
	}
}

// TestRopeBackwardMatchesMLX runs the derived rope backward kernels (the
// gradient lands on the paired element: docs/backward.md) against the VJP
// of mx.fast.rope, full and partial, both layouts, f32: kgen's
// [tokens * heads, head_dim] rows at position offset + token, MLX's
// [1, heads, tokens, head_dim] with one offset.
func TestRopeBackwardMatchesMLX(t *testing.T) {
	needMLX(t)
	emulateMetal(t)
	const tokens, heads, headDim, offset, theta = 6, 3, 128, 5, 10000.0
	rows := tokens * heads
	pos, _ := kgenrt.New(kgenrt.I32, rows)
	for r := range rows {
		pos.SetInt32(r, int32(offset+r/heads))
	}
	dy := f32s(t, seeded(rows*headDim, 6, 2), rows, headDim)
	for _, c := range []struct {
		kernel      string
		dims        int
		traditional bool
		run         func(gx *kgenrt.Tensor) error
	}{
		{"rope", headDim, false, func(gx *kgenrt.Tensor) error { return kernels.RopeBackward.Run(kgenrt.Metal, pos, dy, gx, theta) }},
		{"rope_interleaved", headDim, true, func(gx *kgenrt.Tensor) error {
			return kernels.RopeInterleavedBackward.Run(kgenrt.Metal, pos, dy, gx, theta)
		}},
		{"rope_partial", 64, false, func(gx *kgenrt.Tensor) error {
			return kernels.RopePartialBackward.Run(kgenrt.Metal, pos, dy, gx, theta, 64)
		}},
		{"rope_partial_interleaved", 32, true, func(gx *kgenrt.Tensor) error {
			return kernels.RopePartialInterleavedBackward.Run(kgenrt.Metal, pos, dy, gx, theta, 32)
		}},
	} {
		t.Run(c.kernel, func(t *testing.T) {
			gx := newLike(dy)
			run(t, c.run(gx))
			want := runMLX(t, fmt.Sprintf(`
T, H, D = %d, %d, %d
dy = load('dy', T * H, D).reshape(1, T, H, D).transpose(0, 2, 1, 3)
f = lambda x: mx.fast.rope(x, %d, traditional=%s, base=%g, scale=1.0, offset=%d)
_, (gx,) = mx.vjp(f, [mx.zeros_like(dy)], [dy])
save('gx', gx.transpose(0, 2, 1, 3).reshape(T * H, D))
`, tokens, heads, headDim, c.dims, map[bool]string{true: "True", false: "False"}[c.traditional], theta, offset),
				map[string]*kgenrt.Tensor{"dy": dy}, rows*headDim, "gx")
			compareGrad(t, c.kernel+" x_grad", gx, want["gx"])
		})
	}
}

func f32s(t *testing.T, v []float32, shape ...int) *kgenrt.Tensor {
	t.Helper()
	tn, err := kgenrt.FromFloat32(kgenrt.F32, v, shape...)
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

func newLike(x *kgenrt.Tensor) *kgenrt.Tensor {
	tn, _ := kgenrt.New(x.DType(), x.Shape()...)
	return tn
}

func run(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// compareGrad compares with MLX within 2⁻¹⁶ of the largest |gradient|
// plus 2⁻¹⁶ relative (see TestBackwardMatchesMLX).
func compareGrad(t *testing.T, what string, got *kgenrt.Tensor, want []float64) {
	t.Helper()
	big := 0.0
	for _, w := range want {
		big = math.Max(big, math.Abs(w))
	}
	compareMLX(t, what, got, want, 0x1p-16*big, 0x1p-16)
}

// TestQkNormRopeBackwardMatchesMLX runs the derived backward of the
// segmented qk_norm_rope (backward: [x]: each segment's x_grad; a segment's
// weight gradient would be a column reduction per segment, not offered)
// against the VJP of mx.fast.rms_norm then mx.fast.rope per segment, f32:
// 8 query heads and 2 key heads of 6 tokens at positions 5…10.
func TestQkNormRopeBackwardMatchesMLX(t *testing.T) {
	needMLX(t)
	emulateMetal(t)
	const tokens, qHeads, kHeads, headDim, offset, theta = 6, 8, 2, 128, 5, 1000000.0
	seg := func(heads int, seed float64) (x, w, pos, dy *kgenrt.Tensor) {
		rows := tokens * heads
		pos, _ = kgenrt.New(kgenrt.I32, rows)
		for r := range rows {
			pos.SetInt32(r, int32(offset+r/heads))
		}
		return f32s(t, seeded(rows*headDim, seed, 2), rows, headDim), f32s(t, seeded(headDim, seed+1, 1), headDim),
			pos, f32s(t, seeded(rows*headDim, seed+2, 2), rows, headDim)
	}
	qx, qw, qpos, qdy := seg(qHeads, 11)
	kx, kw, kpos, kdy := seg(kHeads, 21)
	qgx, kgx := newLike(qx), newLike(kx)
	run(t, kernels.QkNormRopeBackward.Run(kgenrt.Metal, qx, qw, qpos, qdy, kx, kw, kpos, kdy, qgx, kgx, theta))
	for _, c := range []struct {
		name          string
		heads         int
		x, w, dy, got *kgenrt.Tensor
	}{{"q", qHeads, qx, qw, qdy, qgx}, {"k", kHeads, kx, kw, kdy, kgx}} {
		want := runMLX(t, fmt.Sprintf(`
T, H, D = %d, %d, %d
x, w, dy = load('x', T * H, D), load('w', D), load('dy', T * H, D)
def f(x):
    y = mx.fast.rms_norm(x, w, 1e-6).reshape(1, T, H, D).transpose(0, 2, 1, 3)
    return mx.fast.rope(y, D, traditional=False, base=%g, scale=1.0, offset=%d).transpose(0, 2, 1, 3).reshape(T * H, D)
_, (gx,) = mx.vjp(f, [x], [dy])
save('gx', gx)
`, tokens, c.heads, headDim, theta, offset), map[string]*kgenrt.Tensor{"x": c.x, "w": c.w, "dy": c.dy}, tokens*c.heads*headDim, "gx")
		compareGrad(t, "qk_norm_rope "+c.name+"_x_grad", c.got, want["gx"])
	}
}
