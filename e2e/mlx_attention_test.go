package e2e

import (
	"fmt"
	"math"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// TestAttentionMatchesMLX runs attention_prefill's Metal kernel (the
// generated launcher on kgenrt.Metal, the MSL on the CPU harness) against
// MLX's mx.fast.scaled_dot_product_attention with a causal mask and grouped
// KV heads: a prefill chunk after cached keys (MLX aligns the causal mask
// to the last key: offset n - m) and a decode step (one query row against
// the whole cache, through the flash-decoding split). Storage f32, f16 and bf16; MLX computes in the same
// dtype, so the bound is the two implementations' roundings together.
func TestAttentionMatchesMLX(t *testing.T) {
	needMLX(t)
	emulateMetal(t)
	cases := []struct {
		name               string
		b, h, kvh, m, n, d int
	}{
		{"prefill", 1, 8, 2, 19, 45, 64},
		{"decode", 2, 8, 2, 1, 1000, 128}, // 16 groups: the launcher splits the keys 4 ways (flash decoding)
	}
	dtypes := []struct {
		dt       kgenrt.DType
		mx       string
		abs, rel float64
	}{
		{kgenrt.F32, "float32", 0, 1e-5}, // abs: γ_n of the weighted sum, below
		{kgenrt.F16, "float16", 2e-3, 4e-3},
		{kgenrt.BF16, "bfloat16", 1.6e-2, 3.2e-2},
	}
	for _, c := range cases {
		for _, dt := range dtypes {
			t.Run(c.name+"_"+dt.mx, func(t *testing.T) {
				qv := seeded(c.b*c.h*c.m*c.d, 1, 1.5)
				kv := seeded(c.b*c.kvh*c.n*c.d, 2, 1.5)
				vv := seeded(c.b*c.kvh*c.n*c.d, 3, 2)
				q, _ := kgenrt.FromFloat32(dt.dt, qv, c.b, c.h, c.m, c.d)
				k, _ := kgenrt.FromFloat32(dt.dt, kv, c.b, c.kvh, c.n, c.d)
				v, _ := kgenrt.FromFloat32(dt.dt, vv, c.b, c.kvh, c.n, c.d)
				o, _ := kgenrt.New(dt.dt, c.b, c.h, c.m, c.d)
				scale := float32(1 / math.Sqrt(float64(c.d)))
				if err := kernels.AttentionPrefill.Run(kgenrt.Metal, q, k, v, o, scale, int32(c.n-c.m)); err != nil {
					t.Fatal(err)
				}
				if c.m == 1 { // a decode step sees every key: attention_decode, no mask, the same result
					od, _ := kgenrt.New(dt.dt, c.b, c.h, c.m, c.d)
					if err := kernels.AttentionDecode.Run(kgenrt.Metal, q, k, v, od, scale); err != nil {
						t.Fatal(err)
					}
					for i := range od.Len() {
						if od.Float32At(i) != o.Float32At(i) {
							t.Fatalf("attention_decode o[%d] = %g, attention_prefill %g", i, od.Float32At(i), o.Float32At(i))
						}
					}
				}
				// MLX reads the values as stored in the kernel's dtype (writeF32).
				want := runMLX(t, fmt.Sprintf(`
q = load('q', %d, %d, %d, %d).astype(mx.%[5]s)
k = load('k', %[1]d, %[6]d, %[7]d, %[4]d).astype(mx.%[5]s)
v = load('v', %[1]d, %[6]d, %[7]d, %[4]d).astype(mx.%[5]s)
save('o', mx.fast.scaled_dot_product_attention(q, k, v, scale=%[8]g, mask='causal'))
`, c.b, c.h, c.m, c.d, dt.mx, c.kvh, c.n, scale), map[string]*kgenrt.Tensor{"q": q, "k": k, "v": v}, o.Len(), "o")
				abs := dt.abs
				if dt.dt == kgenrt.F32 { // two f32 sums of n weighted values of |v| <= 2, in different orders
					abs = float64(c.n) * 0x1p-24 * 2
				}
				compareMLX(t, "o", o, want["o"], abs, dt.rel)
			})
		}
	}
}
