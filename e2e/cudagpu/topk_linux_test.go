//go:build linux && (amd64 || arm64)

package cudagpu

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// Top-k selections on the GPU (docs/topk.md). TestRowParity covers the two
// built-ins (topk_softmax, topk_logits) under parity like every rowwise
// kernel; these tests add the bits against the Go reference and the time of
// vocabulary-sized rows.

// topkLogits returns rows×cols host logits of dtype dt in [-8, 8) with
// ties: every value a multiple of 1/64, so wide rows repeat values and the
// lower column must win.
func topkLogits(t testing.TB, dt kgenrt.DType, rows, cols int, seed uint64) *kgenrt.Tensor {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 3))
	v := make([]float32, rows*cols)
	for i := range v {
		v[i] = float32(r.IntN(1024)-512) / 64
	}
	x, err := kgenrt.FromFloat32(dt, v, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// TestTopKBits runs topk_logits and topk_softmax through the CUDA port
// (host tensors) and the generated Go reference on the same logits, ties
// included, and wants topk_logits' values and ids and topk_softmax's ids
// bit for bit (the order is total; topk_logits ranks the inputs
// themselves); topk_softmax's weights within 4 f32 ulps-ish (1e-6
// relative: exp differs by backend), and its ids logged where they differ
// (an exp an ulp apart can split a near tie).
func TestTopKBits(t *testing.T) {
	p, err := kernels.TopkLogits.Select(kgenrt.CUDA)
	needCUDA(t, p, err)
	for _, sh := range [][2]int{{257, 64}, {33, 1000}, {16, 4099}, {4, 32000}, {2, 131072}} {
		rows, cols := sh[0], sh[1]
		for _, dt := range []kgenrt.DType{kgenrt.F32, kgenrt.BF16} {
			x := topkLogits(t, dt, rows, cols, uint64(rows*cols))
			vals, _ := kgenrt.New(dt, rows, 50)
			ids, _ := kgenrt.New(kgenrt.I32, rows, 50)
			rv, _ := kgenrt.New(dt, rows, 50)
			ri, _ := kgenrt.New(kgenrt.I32, rows, 50)
			if err := kernels.TopkLogits.Run(kgenrt.CUDA, x, vals, ids); err != nil {
				t.Fatal(err)
			}
			if err := kernels.TopkLogits.Reference(x, rv, ri); err != nil {
				t.Fatal(err)
			}
			sameBits(t, "topk_logits vals", vals, rv)
			sameBits(t, "topk_logits ids", ids, ri)
			w, _ := kgenrt.New(kgenrt.F32, rows, 8)
			e, _ := kgenrt.New(kgenrt.I32, rows, 8)
			rw, _ := kgenrt.New(kgenrt.F32, rows, 8)
			re, _ := kgenrt.New(kgenrt.I32, rows, 8)
			if err := kernels.TopkSoftmax.Run(kgenrt.CUDA, x, w, e); err != nil {
				t.Fatal(err)
			}
			if err := kernels.TopkSoftmax.Reference(x, rw, re); err != nil {
				t.Fatal(err)
			}
			differ := 0
			for i := range e.Len() {
				if e.Int32At(i) != re.Int32At(i) {
					differ++
					continue
				}
				g, r := float64(w.Float32At(i)), float64(rw.Float32At(i))
				if d := g - r; d > 1e-6*r || -d > 1e-6*r {
					t.Errorf("%s [%d, %d] topk_softmax weight %d: %g, reference %g", dt, rows, cols, i, g, r)
				}
			}
			t.Logf("%s [%d, %d]: topk_logits = the Go reference bit for bit; topk_softmax: %d of %d ids differ from it", dt, rows, cols, differ, e.Len())
		}
	}
}

// TestTopKTimes times topk_logits (k = 50) on bf16 device logits of
// vocabulary-sized rows, 50 rounds over each row, and topk_softmax (k = 8)
// on router logits of 64 to 256 experts, and logs the effective bandwidth
// over the logits read once (the rounds re-read the row from L1/L2).
func TestTopKTimes(t *testing.T) {
	p, err := kernels.TopkLogits.Select(kgenrt.CUDA)
	needCUDA(t, p, err)
	timeIt := func(f func() error) time.Duration {
		for range 3 {
			if err := f(); err != nil {
				t.Fatal(err)
			}
		}
		syncStream(t, 0)
		start := time.Now()
		const n = 20
		for range n {
			if err := f(); err != nil {
				t.Fatal(err)
			}
		}
		syncStream(t, 0)
		return time.Since(start) / n
	}
	for _, sh := range [][3]int{{1, 128256, 50}, {64, 128256, 50}, {256, 32000, 50}, {16384, 64, 8}, {16384, 256, 8}} {
		rows, cols, k := sh[0], sh[1], sh[2]
		x := upload(t, topkLogits(t, kgenrt.BF16, rows, cols, 1))
		v, _ := kgenrt.NewCUDA(kgenrt.BF16, rows, k)
		vw, _ := kgenrt.NewCUDA(kgenrt.F32, rows, k)
		ids, _ := kgenrt.NewCUDA(kgenrt.I32, rows, k)
		var d time.Duration
		if k == 50 {
			d = timeIt(func() error { return kernels.TopkLogits.Enqueue(0, x, v, ids) })
		} else {
			d = timeIt(func() error { return kernels.TopkSoftmax.Enqueue(0, x, vw, ids) })
		}
		t.Logf("bf16 [%d, %d], k = %d: %v (%.1f GB/s over the logits read once)", rows, cols, k, d, float64(rows*cols*2)/d.Seconds()/1e9)
		for _, tn := range []*kgenrt.Tensor{x, v, vw, ids} {
			tn.Free()
		}
	}
}
