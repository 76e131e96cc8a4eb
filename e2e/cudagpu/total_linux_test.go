//go:build linux && (amd64 || arm64)

package cudagpu

import (
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// TestTotalBits runs the built-in backward kernels with a param gradient
// (a total_sum, three launches: docs/colwise.md) twice on device tensors
// and wants the same bits run to run. leaky_relu_backward's terms are one
// f32 product each (no contraction, no library function), so in f32 its
// slope_grad must also be the Go reference's bits (which folds in the
// kernels' order); softcap_backward's cap_grad goes through tanh, whose
// last bit is the backend's, so its difference from the reference is
// logged.
func TestTotalBits(t *testing.T) {
	p, err := kernels.LeakyReluBackward.Select(kgenrt.CUDA)
	needCUDA(t, p, err)
	for _, sh := range [][2]int{{4096, 4096}, {1000, 4099}, {77, 64}} {
		rows, cols := sh[0], sh[1]
		for _, dt := range []kgenrt.DType{kgenrt.F32, kgenrt.BF16} {
			in := colInputs(t, dt, uint64(rows*cols), []int{rows, cols}, []int{rows, cols})
			x, dy := upload(t, in[0]), upload(t, in[1])
			var slopes, caps []*kgenrt.Tensor
			for range 2 {
				dx, _ := kgenrt.NewCUDA(dt, rows, cols)
				ds, _ := kgenrt.NewCUDA(kgenrt.F32, 1)
				dc, _ := kgenrt.NewCUDA(kgenrt.F32, 1)
				if err := kernels.LeakyReluBackward.Enqueue(0, x, dy, dx, ds, 0.125); err != nil {
					t.Fatal(err)
				}
				if err := kernels.SoftcapBackward.Enqueue(0, x, dy, dx, dc, 1.75); err != nil {
					t.Fatal(err)
				}
				slopes, caps = append(slopes, download(t, ds)), append(caps, download(t, dc))
				for _, d := range []*kgenrt.Tensor{dx, ds, dc} {
					d.Free()
				}
			}
			x.Free()
			dy.Free()
			sameBits(t, "slope_grad run to run", slopes[1], slopes[0])
			sameBits(t, "cap_grad run to run", caps[1], caps[0])
			rdx, _ := kgenrt.New(dt, rows, cols)
			rs, _ := kgenrt.New(kgenrt.F32, 1)
			rc, _ := kgenrt.New(kgenrt.F32, 1)
			if err := kernels.LeakyReluBackward.Reference(in[0], in[1], rdx, rs, 0.125); err != nil {
				t.Fatal(err)
			}
			if err := kernels.SoftcapBackward.Reference(in[0], in[1], rdx, rc, 1.75); err != nil {
				t.Fatal(err)
			}
			if dt == kgenrt.F32 {
				sameBits(t, "slope_grad against the Go reference", slopes[0], rs)
			}
			t.Logf("%v [%d, %d]: same bits run to run; slope_grad %g (reference %g), cap_grad %g (reference %g)",
				dt, rows, cols, slopes[0].Float32At(0), rs.Float32At(0), caps[0].Float32At(0), rc.Float32At(0))
		}
	}
}
