package e2e

import (
	"errors"
	"math"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// TestMatmulRowsWideN: a row-reducing matmul wider than its threadgroup
// strip (n > 928) takes the split form in the same Run, so the launcher no
// longer refuses it: where Metal runs, the result matches the CPU
// reference; elsewhere Run reaches the port selection (kgenrt.ErrNoPort),
// past every tensor check and the workspace allocation. The reference has
// no width limit. Parity proves the split on the CPU harness
// (verify/parity TestBuiltinMatmulsSplit).
func TestMatmulRowsWideN(t *testing.T) {
	tensors := func(n int) (x, w, y *kgenrt.Tensor) {
		var err error
		if x, err = kgenrt.New(kgenrt.F32, 2, 3); err == nil {
			if w, err = kgenrt.New(kgenrt.F32, 3, n); err == nil {
				y, err = kgenrt.New(kgenrt.F32, 2, n)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			x.SetFloat32(i, float32(i%3)-1)
		}
		for i := range 3 * n {
			w.SetFloat32(i, float32(i%7)/4-0.75)
		}
		return x, w, y
	}
	for _, n := range []int{928, 929, 2055} {
		x, w, y := tensors(n)
		ref, err := kgenrt.New(kgenrt.F32, 2, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := kernels.MatmulSoftmax.Reference(x, w, ref); err != nil {
			t.Fatalf("the reference at n = %d: %v", n, err)
		}
		err = kernels.MatmulSoftmax.Run(kgenrt.Metal, x, w, y)
		if !kernels.MatmulSoftmax.Available(kgenrt.Metal) {
			if !errors.Is(err, kgenrt.ErrNoPort) {
				t.Errorf("n = %d without Metal: got %v, want ErrNoPort", n, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("n = %d: %v", n, err)
		}
		for i := range 2 * n {
			if d := math.Abs(float64(y.Float32At(i) - ref.Float32At(i))); d > 1e-6 {
				t.Fatalf("n = %d: y[%d] = %g, reference %g", n, i, y.Float32At(i), ref.Float32At(i))
			}
		}
	}
}
