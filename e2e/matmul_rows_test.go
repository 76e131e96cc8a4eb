package e2e

import (
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// TestMatmulRowsRefusesWideN: a row-reducing matmul's launcher refuses an n
// wider than its threadgroup-memory strip before it reaches a device (the
// kernel would write nothing), and takes the widest n that fits; the CPU
// reference has no such limit.
func TestMatmulRowsRefusesWideN(t *testing.T) {
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
		return x, w, y
	}
	x, w, y := tensors(929)
	err := kernels.MatmulSoftmax.Run(kgenrt.Metal, x, w, y)
	if err == nil || !strings.Contains(err.Error(), "n = 929 is wider than the row-owning kernel's threadgroup-memory strip (928 columns)") {
		t.Errorf("n = 929: got %v", err)
	}
	if err := kernels.MatmulSoftmax.Reference(x, w, y); err != nil {
		t.Errorf("the reference at n = 929: %v", err)
	}
	x, w, y = tensors(928)
	if err := kernels.MatmulSoftmax.Run(kgenrt.Metal, x, w, y); err != nil && strings.Contains(err.Error(), "wider") {
		t.Errorf("n = 928: %v", err)
	}
}
