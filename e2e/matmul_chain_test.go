package e2e

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// TestAttentionReferenceStreams: attention's CPU reference (f32, streamed
// in 32-column blocks with a running max) agrees with its float64 two-pass
// Reference64 at widths within one block, at its edge and over many
// blocks, to within f32 rounding (|V| ≤ 2, scores up to ±18: 2e-5).
// Parity bounds the kernel against the float64 reference
// (verify/parity TestBuiltinChains); this is the Go reference's own check.
func TestAttentionReferenceStreams(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, sh := range [][4]int{{3, 1, 4, 5}, {5, 32, 8, 8}, {4, 33, 16, 3}, {2, 1000, 24, 40}} {
		m, n, k, p := sh[0], sh[1], sh[2], sh[3]
		vals := func(count int) []float32 {
			out := make([]float32, count)
			for i := range out {
				out[i] = float32(r.Float64()*4 - 2)
			}
			return out
		}
		qv, kv, vv := vals(m*k), vals(n*k), vals(n*p)
		q, err1 := kgenrt.FromFloat32(kgenrt.F32, qv, m, k)
		kc, err2 := kgenrt.FromFloat32(kgenrt.F32, kv, n, k)
		v, err3 := kgenrt.FromFloat32(kgenrt.F32, vv, n, p)
		o, err4 := kgenrt.New(kgenrt.F32, m, p)
		for _, err := range []error{err1, err2, err3, err4} {
			if err != nil {
				t.Fatal(err)
			}
		}
		const scale = 0.5
		if err := kernels.Attention.Reference(q, kc, v, o, scale); err != nil {
			t.Fatal(err)
		}
		want, err := kernels.Attention.Reference64(m, n, k, f64(qv), f64(kv), f64(vv), scale)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range want {
			if d := math.Abs(float64(o.Float32At(i)) - w); !(d <= 2e-5) {
				t.Errorf("m=%d n=%d k=%d p=%d: o[%d] = %g, Reference64 %g", m, n, k, p, i, o.Float32At(i), w)
			}
		}
	}
}

func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// TestChainLauncherChecks: a chain's launcher refuses a p wider than its
// output strip (768 columns) before anything launches (the kernel would
// write nothing), while 768 passes that check; and a V whose n disagrees
// with B's is a *kgenrt.TensorError, in Run and in Reference alike.
func TestChainLauncherChecks(t *testing.T) {
	mk := func(shape ...int) *kgenrt.Tensor {
		x, err := kgenrt.New(kgenrt.F32, shape...)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	err := kernels.MatmulSoftmaxMatmul.Run(kgenrt.Metal, mk(2, 3), mk(3, 5), mk(5, 769), mk(2, 769))
	if err == nil || !strings.Contains(err.Error(), "p = 769 is wider than the chain's threadgroup-memory output strip (768 columns") {
		t.Errorf("p = 769: got %v", err)
	}
	if err := kernels.MatmulSoftmaxMatmul.Run(kgenrt.Metal, mk(2, 3), mk(3, 5), mk(5, 768), mk(2, 768)); err != nil && strings.Contains(err.Error(), "wider") {
		t.Errorf("p = 768: %v", err)
	}
	var te *kgenrt.TensorError
	if err := kernels.MatmulSoftmaxMatmul.Run(kgenrt.Metal, mk(2, 3), mk(3, 5), mk(6, 4), mk(2, 4)); !errors.As(err, &te) {
		t.Errorf("V [6, 4] after B [3, 5]: Run gave %v, want a TensorError", err)
	}
	if err := kernels.MatmulSoftmaxMatmul.Reference(mk(2, 3), mk(3, 5), mk(6, 4), mk(2, 4)); !errors.As(err, &te) {
		t.Errorf("V [6, 4] after B [3, 5]: Reference gave %v, want a TensorError", err)
	}
}

// TestCausalAttentionReference: causal_attention's CPU references (f32
// streamed, float64 two-pass) agree with attention written out here in
// float64 — row i sees key j only when j <= i + offset — at offsets that
// mask whole rows (NaN, 0/0, in both), the square causal mask, and ones
// that leave later rows fully visible, over one and many 32-column blocks.
func TestCausalAttentionReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ m, n, k, p, offset int }{
		{5, 7, 4, 3, -2}, {9, 33, 8, 5, 0}, {4, 100, 16, 6, 90}, {3, 1000, 9, 7, 997}, {6, 70, 5, 4, -40},
	} {
		m, n, k, p := c.m, c.n, c.k, c.p
		vals := func(count int) []float32 {
			out := make([]float32, count)
			for i := range out {
				out[i] = float32(r.Float64()*4 - 2)
			}
			return out
		}
		qv, kv, vv := vals(m*k), vals(n*k), vals(n*p)
		q, _ := kgenrt.FromFloat32(kgenrt.F32, qv, m, k)
		kc, _ := kgenrt.FromFloat32(kgenrt.F32, kv, n, k)
		v, _ := kgenrt.FromFloat32(kgenrt.F32, vv, n, p)
		o, err := kgenrt.New(kgenrt.F32, m, p)
		if err != nil {
			t.Fatal(err)
		}
		const scale = 0.5
		if err := kernels.CausalAttention.Reference(q, kc, v, o, scale, int32(c.offset)); err != nil {
			t.Fatal(err)
		}
		got64, err := kernels.CausalAttention.Reference64(m, n, k, f64(qv), f64(kv), f64(vv), scale, int32(c.offset))
		if err != nil {
			t.Fatal(err)
		}
		for i := range m {
			want := naiveCausalRow(i, c.offset, scale, qv[i*k:(i+1)*k], kv, vv, n, k, p)
			for col, w := range want {
				g32, g64 := float64(o.Float32At(i*p+col)), got64[i*p+col]
				if math.IsNaN(w) != math.IsNaN(g32) || math.IsNaN(w) != math.IsNaN(g64) || math.Abs(g32-w) > 2e-5 || math.Abs(g64-w) > 1e-12 {
					t.Errorf("m=%d n=%d offset=%d: o[%d, %d] = %g (f32), %g (f64), want %g", m, n, c.offset, i, col, g32, g64, w)
				}
			}
		}
	}
}

// naiveCausalRow is row i of causal attention in float64: softmax over the
// keys j <= i + offset of scale·q·k_j, times V (NaN where no key is seen).
func naiveCausalRow(i, offset int, scale float64, q, kv, vv []float32, n, k, p int) []float64 {
	s := make([]float64, n)
	mx := math.Inf(-1)
	for j := range n {
		s[j] = math.Inf(-1)
		if j <= i+offset {
			var dot float64
			for t := range k {
				dot += float64(q[t]) * float64(kv[j*k+t])
			}
			s[j] = scale * dot
			mx = math.Max(mx, s[j])
		}
	}
	out := make([]float64, p)
	var l float64
	for j := range n {
		if j > i+offset {
			continue
		}
		w := math.Exp(s[j] - mx)
		l += w
		for c := range p {
			out[c] += w * float64(vv[j*p+c])
		}
	}
	for c := range out {
		out[c] /= l // 0/0 = NaN when no key is seen
	}
	return out
}
