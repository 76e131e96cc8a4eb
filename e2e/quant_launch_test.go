package e2e

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// TestQuantizedLaunchChecks runs the generated quantized matmuls' CPU reference
// on weights packed by kgenrt.Quantize and compares with a plain matmul
// over kgenrt.Dequantize's weights (the reference must read the packed
// bytes as the dequantizer does), then feeds each launcher a packed tensor
// or table of the wrong width and wants a message that names the tensor
// and the rule, with nothing computed.
func TestQuantizedLaunchChecks(t *testing.T) {
	const m, n, k = 3, 5, 128
	r := rand.New(rand.NewPCG(7, 8))
	xs, ws := make([]float32, m*k), make([]float32, n*k)
	for i := range xs {
		xs[i] = kgenrt.RoundF16(float32(r.Float64()*2 - 1))
	}
	for i := range ws {
		ws[i] = float32(r.NormFloat64())
	}
	x, _ := kgenrt.FromFloat32(kgenrt.F16, xs, m, k)
	cases := []struct {
		q   kgenrt.Quant
		run func(w, s, b, y *kgenrt.Tensor) error
	}{
		{kgenrt.Quant{Format: kgenrt.Affine, Bits: 4, Group: 64}, func(w, s, b, y *kgenrt.Tensor) error {
			return kernels.QmatmulMlx4.Reference(x, w, s, b, y)
		}},
		{kgenrt.GGMLQuant(kgenrt.Q4_0), func(w, _, _, y *kgenrt.Tensor) error { return kernels.QmatmulQ40.Reference(x, w, y) }},
		{kgenrt.GGMLQuant(kgenrt.Q8_0), func(w, _, _, y *kgenrt.Tensor) error { return kernels.QmatmulQ80.Reference(x, w, y) }},
	}
	for _, c := range cases {
		t.Run(c.q.String(), func(t *testing.T) {
			w, s, b, err := kgenrt.Quantize(c.q, ws, n, k, kgenrt.F16)
			if err != nil {
				t.Fatal(err)
			}
			y, _ := kgenrt.New(kgenrt.F16, m, n)
			if err := c.run(w, s, b, y); err != nil {
				t.Fatal(err)
			}
			deq, _, _, err := kgenrt.Dequantize(c.q, w, s, b)
			if err != nil {
				t.Fatal(err)
			}
			for i := range m {
				for j := range n {
					var want, mag float64
					for p := range k {
						want += float64(xs[i*k+p]) * float64(deq[j*k+p])
						mag += math.Abs(float64(xs[i*k+p]) * float64(deq[j*k+p]))
					}
					// f32 sums of k products, then the f16 store: γ_k·mag + half an f16 ulp.
					got := float64(y.Float32At(i*n + j))
					if e := math.Abs(got - want); e > float64(k)*0x1p-24*mag+math.Abs(want)*0x1p-11+1e-7 {
						t.Errorf("y[%d, %d] = %g, want %g (dequantized weights)", i, j, got, want)
					}
				}
			}
			bad, _ := kgenrt.New(w.DType(), n, w.Shape()[1]+1)
			err = c.run(bad, s, b, y)
			if err == nil || !strings.Contains(err.Error(), "w") || !strings.Contains(err.Error(), "multiple of") {
				t.Errorf("a packed w one element too wide: %v, want a message naming w and its width rule", err)
			}
			if c.q.HasTables() {
				thin, _ := kgenrt.New(kgenrt.F16, n, k/64-1+2)
				if err := c.run(w, thin, b, y); err == nil || !strings.Contains(err.Error(), "w_scales") {
					t.Errorf("scales of the wrong width: %v, want a message naming w_scales", err)
				}
			}
		})
	}
}
