package e2e

import (
	"fmt"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// TestRopeHeadsMatchesMLX runs rope_heads, every head of q in one launch,
// on the views a decoder binds: q stored [b, s, h, d] and read as its
// transposed view [b, h, s, d], positions [b, s] shared by the heads (each
// sequence at its own offset), the output written through the transposed
// view of a [b, s, h, d] activation. The Metal kernel runs through the
// generated launcher (kgenrt's Metal port on the CPU harness), the Go
// reference through the same views; both are compared with MLX's
// mx.fast.rope over the same transposed view of each sequence (partial
// rotary: dims 64 of head_dim 128, and the full width). MLX rounds a
// 16-bit rope's products in the storage type, kgen computes in f32: the
// bound is two units of the storage type at the largest input (3) more
// than the kernel's tolerance.
func TestRopeHeadsMatchesMLX(t *testing.T) {
	needMLX(t)
	emulateMetal(t)
	const b, s, h, d, theta = 2, 5, 4, 128, 10000.0
	offsets := []int{3, 17}
	dtypes := []struct {
		dt       kgenrt.DType
		mx       string
		abs, rel float64
	}{
		{kgenrt.F32, "float32", 1e-5, 1e-5},
		{kgenrt.F16, "float16", 2e-3 + 6*0x1p-11, 4e-3},
		{kgenrt.BF16, "bfloat16", 1.6e-2 + 6*0x1p-8, 3.2e-2},
	}
	for _, dims := range []int{64, d} {
		for _, dt := range dtypes {
			t.Run(fmt.Sprintf("dims%d_%s", dims, dt.mx), func(t *testing.T) {
				q, _ := kgenrt.FromFloat32(dt.dt, seeded(b*s*h*d, 4, 3), b, s, h, d)
				pos, _ := kgenrt.New(kgenrt.I32, b, s)
				for i := range b * s {
					pos.SetInt32(i, int32(offsets[i/s]+i%s))
				}
				out, _ := kgenrt.New(dt.dt, b, s, h, d)
				ref, _ := kgenrt.New(dt.dt, b, s, h, d)
				qv, outv, refv := transposed(t, q), transposed(t, out), transposed(t, ref)
				if err := kernels.RopeHeads.Run(kgenrt.Metal, qv, pos, outv, float32(theta), int32(dims)); err != nil {
					t.Fatal(err)
				}
				if err := kernels.RopeHeads.Reference(qv, pos, refv, float32(theta), int32(dims)); err != nil {
					t.Fatal(err)
				}
				want := runMLX(t, fmt.Sprintf(`
x = load('q', %d, %d, %d, %d).astype(mx.%s)
ys = [mx.fast.rope(x[i:i+1].transpose(0, 2, 1, 3), %d, traditional=False, base=%g, scale=1.0, offset=o).transpose(0, 2, 1, 3) for i, o in enumerate(%s)]
save('y', mx.concatenate(ys, axis=0))
`, b, s, h, d, dt.mx, dims, theta, pyList(offsets)), map[string]*kgenrt.Tensor{"q": q}, out.Len(), "y")
				compareMLX(t, "metal y", out, want["y"], dt.abs, dt.rel)
				compareMLX(t, "reference y", ref, want["y"], dt.abs, dt.rel)
			})
		}
	}
}

// pyList spells xs as a Python list.
func pyList(xs []int) string {
	out := "["
	for i, x := range xs {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprint(x)
	}
	return out + "]"
}

// TestQKNormHeadsMatchesMLX runs qk_norm_heads over the transposed view of
// a [b, s, h, d] activation with a weight per head [h, d], writing in
// place, against mx.fast.rms_norm per head on the same values.
func TestQKNormHeadsMatchesMLX(t *testing.T) {
	needMLX(t)
	emulateMetal(t)
	const b, s, h, d, eps = 2, 3, 4, 128, 1e-6
	dtypes := []struct {
		dt       kgenrt.DType
		mx       string
		abs, rel float64
	}{
		{kgenrt.F32, "float32", 1e-5, 1e-5},
		{kgenrt.F16, "float16", 2e-3, 4e-3},
		{kgenrt.BF16, "bfloat16", 1.6e-2, 3.2e-2},
	}
	for _, dt := range dtypes {
		t.Run(dt.mx, func(t *testing.T) {
			x, _ := kgenrt.FromFloat32(dt.dt, seeded(b*s*h*d, 5, 3), b, s, h, d)
			w, _ := kgenrt.FromFloat32(dt.dt, seeded(h*d, 6, 1.5), h, d)
			orig, _ := kgenrt.New(dt.dt, b, s, h, d)
			if err := kgenrt.Copy(orig, x); err != nil {
				t.Fatal(err)
			}
			ref, _ := kgenrt.New(dt.dt, b, s, h, d)
			xv := transposed(t, x)
			if err := kernels.QkNormHeads.Reference(transposed(t, orig), w, transposed(t, ref), float32(eps)); err != nil {
				t.Fatal(err)
			}
			if err := kernels.QkNormHeads.Run(kgenrt.Metal, xv, w, xv, float32(eps)); err != nil { // in place
				t.Fatal(err)
			}
			want := runMLX(t, fmt.Sprintf(`
x = load('x', %d, %d, %d, %d).astype(mx.%s)
w = load('w', %d, %d).astype(mx.%s)
save('y', mx.stack([mx.fast.rms_norm(x[:, :, i, :], w[i], %g) for i in range(%d)], axis=2))
`, b, s, h, d, dt.mx, h, d, dt.mx, float32(eps), h), map[string]*kgenrt.Tensor{"x": orig, "w": w}, x.Len(), "y")
			compareMLX(t, "metal y", x, want["y"], dt.abs, dt.rel)
			compareMLX(t, "reference y", ref, want["y"], dt.abs, dt.rel)
		})
	}
}

// transposed is x.Transpose(1, 2): a [b, s, h, d] activation read as
// [b, h, s, d].
func transposed(t *testing.T, x *kgenrt.Tensor) *kgenrt.Tensor {
	t.Helper()
	v, err := x.Transpose(1, 2)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
