//go:build linux && (amd64 || arm64)

package cudagpu

import (
	"testing"
	"time"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// TestBackwardTimes times the derived backward kernels (docs/backward.md)
// that bench/cuda/backward_torch.py sets against PyTorch's autograd on the
// same GPU: swiglu_backward (gate, up, y_grad read; gate_grad, up_grad
// written) and, in TestColTimes, rms_norm_backward. bf16 on the default
// stream: the mean of 50 launches after 5 warm-ups (back to back), and
// one launch waited for alone (single call).
func TestBackwardTimes(t *testing.T) {
	p, err := kernels.SwigluBackward.Select(kgenrt.CUDA)
	needCUDA(t, p, err)
	for _, n := range []int{1 << 20, 1 << 24, 1 << 27} {
		ts := make([]*kgenrt.Tensor, 5)
		for i := range ts {
			if ts[i], err = kgenrt.NewCUDA(kgenrt.BF16, n); err != nil {
				t.Fatal(err)
			}
			defer ts[i].Free()
		}
		call := func() error { return kernels.SwigluBackward.Enqueue(0, ts[0], ts[1], ts[2], ts[3], ts[4]) }
		for range 5 {
			if err := call(); err != nil {
				t.Fatal(err)
			}
		}
		syncStream(t, 0)
		start := time.Now()
		const calls = 50
		for range calls {
			if err := call(); err != nil {
				t.Fatal(err)
			}
		}
		syncStream(t, 0)
		b2b := time.Since(start) / calls
		start = time.Now()
		if err := call(); err != nil {
			t.Fatal(err)
		}
		syncStream(t, 0)
		single := time.Since(start)
		bytes := 5 * 2 * float64(n)
		t.Logf("swiglu_backward bf16 n=%d: back to back %v (%.0f GB/s over 3 reads + 2 writes), single call %v", n, b2b, bytes/b2b.Seconds()/1e9, single)
	}
}
