package e2e

import (
	"math"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// attentionWant is causal grouped-query attention in float64, written here
// from its definition: o[b, h, i] = Σ_j softmax_j(scale·q[b,h,i]·k[b,h/g,j])
// · v[b,h/g,j] over j <= i + offset. q, k and v are functions of their
// logical indices, so the test's tensors may be laid out any way.
func attentionWant(b, h, g, m, n, d int, q, k, v func(b, h, i, c int) float64, scale float64, offset int) []float64 {
	out := make([]float64, b*h*m*d)
	for bi := range b {
		for hi := range h {
			for i := range m {
				s := make([]float64, n)
				mx := math.Inf(-1)
				for j := range n {
					s[j] = math.Inf(-1)
					if j <= i+offset {
						dot := 0.0
						for c := range d {
							dot += q(bi, hi, i, c) * k(bi, hi/g, j, c)
						}
						s[j] = scale * dot
					}
					mx = math.Max(mx, s[j])
				}
				sum := 0.0
				for j := range n {
					s[j] = math.Exp(s[j] - mx)
					sum += s[j]
				}
				for c := range d {
					acc := 0.0
					for j := range n {
						acc += s[j] * v(bi, hi/g, j, c)
					}
					out[((bi*h+hi)*m+i)*d+c] = acc / sum
				}
			}
		}
	}
	return out
}

// TestAttentionPrefillViews runs attention_prefill's CPU reference as a
// decoder binds it, without a copy: q is the [b, s, h, d] activation seen
// as [b, h, s, d] (Transpose), keys and values are the first n rows of a
// [b, kv_heads, max_seq, d] cache (Slice), 4 query heads share each of 2
// KV heads, and the output is written into a [b, s, h, d] activation
// through its transposed view. The launcher derives group = 2 from the
// shapes and refuses what does not fit.
func TestAttentionPrefillViews(t *testing.T) {
	const b, h, kvh, s, d, maxSeq, n, offset = 2, 8, 2, 5, 16, 24, 9, 4
	fill := func(dt kgenrt.DType, shape []int, seed float64) *kgenrt.Tensor {
		count := 1
		for _, x := range shape {
			count *= x
		}
		vals := make([]float32, count)
		for i := range vals {
			vals[i] = float32(math.Sin(float64(i)*0.37+seed)) * 1.5
		}
		ten, err := kgenrt.FromFloat32(dt, vals, shape...)
		if err != nil {
			t.Fatal(err)
		}
		return ten
	}
	act := fill(kgenrt.F32, []int{b, s, h, d}, 0.1)
	cacheK := fill(kgenrt.F32, []int{b, kvh, maxSeq, d}, 1.3)
	cacheV := fill(kgenrt.F32, []int{b, kvh, maxSeq, d}, 2.9)
	outAct, _ := kgenrt.New(kgenrt.F32, b, s, h, d)
	mustView := func(x *kgenrt.Tensor, err error) *kgenrt.Tensor {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	q := mustView(act.Transpose(1, 2))
	kc := mustView(cacheK.Slice(2, 0, n))
	v := mustView(cacheV.Slice(2, 0, n))
	o := mustView(outAct.Transpose(1, 2))
	scale := float32(1 / math.Sqrt(d))
	if err := kernels.AttentionPrefill.Reference(q, kc, v, o, scale, offset); err != nil {
		t.Fatal(err)
	}
	at := func(x *kgenrt.Tensor, dims []int) func(b, hh, i, c int) float64 {
		return func(bi, hi, i, c int) float64 {
			idx := []int{bi, hi, i, c}
			flat := 0
			for j, dd := range dims {
				flat = flat*dd + idx[j]
			}
			return float64(x.Float32At(flat))
		}
	}
	want := attentionWant(b, h, h/kvh, s, n, d, at(q, []int{b, h, s, d}), at(kc, []int{b, kvh, n, d}), at(v, []int{b, kvh, n, d}), float64(scale), offset)
	bad := 0
	for bi := range b {
		for si := range s {
			for hi := range h {
				for c := range d {
					got := float64(outAct.Float32At(((bi*s+si)*h+hi)*d + c))
					w := want[((bi*h+hi)*s+si)*d+c]
					if math.Abs(got-w) > 1e-5+1e-5*math.Abs(w) {
						if bad++; bad < 5 {
							t.Errorf("o[b=%d, s=%d, h=%d, %d] = %g, want %g", bi, si, hi, c, got, w)
						}
					}
				}
			}
		}
	}
	// The launcher's checks: 3 KV heads do not divide 8 query heads, and an
	// output over the keys it reads is refused.
	odd := mustView(fill(kgenrt.F32, []int{b, 3, maxSeq, d}, 0).Slice(2, 0, n))
	if err := kernels.AttentionPrefill.Reference(q, odd, odd, o, scale, offset); err == nil || !strings.Contains(err.Error(), "group") {
		t.Errorf("8 query heads over 3 KV heads: %v", err)
	}
	kAsOut := mustView(cacheK.View(0, []int{b, h, s, d}, []int{kvh * maxSeq * d, 0, d, 1}))
	if err := kernels.AttentionPrefill.Reference(q, kc, v, kAsOut, scale, offset); err == nil {
		t.Error("an output over the key cache (and broadcast over heads) was accepted")
	}
}
