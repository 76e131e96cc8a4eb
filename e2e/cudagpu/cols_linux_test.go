//go:build linux && (amd64 || arm64)

package cudagpu

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// Column reductions on the GPU (docs/colwise.md): the same bits run to run,
// the order the Go reference models, and the time of the two launches.

// colInputs returns host tensors of dtype dt with values in [-4, 4).
func colInputs(t testing.TB, dt kgenrt.DType, seed uint64, shapes ...[]int) []*kgenrt.Tensor {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	var out []*kgenrt.Tensor
	for _, s := range shapes {
		n := 1
		for _, d := range s {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.Float64()*8 - 4)
		}
		h, err := kgenrt.FromFloat32(dt, v, s...)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h)
	}
	return out
}

// bitsDiffer counts the elements whose bits differ (NaN meets NaN) and the
// largest difference in units of the storage type's last place.
func bitsDiffer(a, b *kgenrt.Tensor) (n int, ulps float64) {
	for i := 0; i < a.Len(); i++ {
		x, y := float64(a.Float32At(i)), float64(b.Float32At(i))
		if x == y || x != x && y != y {
			continue
		}
		n++
		ulp := math.Ldexp(1, int(math.Floor(math.Log2(math.Max(math.Abs(x), math.Abs(y)))))-map[kgenrt.DType]int{kgenrt.F32: 23, kgenrt.F16: 10, kgenrt.BF16: 7}[a.DType()])
		ulps = math.Max(ulps, math.Abs(x-y)/ulp)
	}
	return n, ulps
}

// TestColBits runs rms_norm_backward and bias_grad twice on device tensors
// (the typed Enqueue: both launches, the workspace from the stream's
// allocator) and wants the same bits; bias_grad's terms are exact, so its
// db must equal the Go reference's (which folds in the kernels' order, and
// which kgen verify's differential check holds equal to the MSL's) bit for
// bit; rms_norm_backward's dw and dx are compared with the Go reference and
// the differences logged (its 1/rms comes from a row reduction whose tree
// and rsqrt differ by backend).
func TestColBits(t *testing.T) {
	p, err := kernels.RmsNormBackward.Select(kgenrt.CUDA)
	needCUDA(t, p, err)
	for _, sh := range [][2]int{{4096, 4096}, {1000, 4099}, {77, 64}} {
		rows, cols := sh[0], sh[1]
		for _, dt := range []kgenrt.DType{kgenrt.F32, kgenrt.BF16} {
			in := colInputs(t, dt, uint64(rows*cols), []int{rows, cols}, []int{rows, cols}, []int{cols})
			dy, x, w := upload(t, in[0]), upload(t, in[1]), upload(t, in[2])
			var dws, dxs, dbs []*kgenrt.Tensor
			for range 2 {
				dx, _ := kgenrt.NewCUDA(dt, rows, cols)
				dw, _ := kgenrt.NewCUDA(dt, cols)
				db, _ := kgenrt.NewCUDA(dt, cols)
				if err := kernels.RmsNormBackward.Enqueue(0, x, w, dy, dx, dw, 1e-6); err != nil {
					t.Fatal(err)
				}
				if err := kernels.BiasGrad.Enqueue(0, dy, db); err != nil {
					t.Fatal(err)
				}
				dws, dxs, dbs = append(dws, download(t, dw)), append(dxs, download(t, dx)), append(dbs, download(t, db))
				for _, d := range []*kgenrt.Tensor{dx, dw, db} {
					d.Free()
				}
			}
			for _, d := range []*kgenrt.Tensor{dy, x, w} {
				d.Free()
			}
			sameBits(t, "dw run to run", dws[1], dws[0])
			sameBits(t, "dx run to run", dxs[1], dxs[0])
			sameBits(t, "db run to run", dbs[1], dbs[0])
			rdx, _ := kgenrt.New(dt, rows, cols)
			rdw, _ := kgenrt.New(dt, cols)
			rdb, _ := kgenrt.New(dt, cols)
			if err := kernels.RmsNormBackward.Reference(in[1], in[2], in[0], rdx, rdw, 1e-6); err != nil {
				t.Fatal(err)
			}
			if err := kernels.BiasGrad.Reference(in[0], rdb); err != nil {
				t.Fatal(err)
			}
			sameBits(t, "bias_grad db against the Go reference", dbs[0], rdb)
			nw, uw := bitsDiffer(dws[0], rdw)
			nx, ux := bitsDiffer(dxs[0], rdx)
			t.Logf("%v [%d, %d]: same bits run to run; db = the Go reference's bits; dw differs from the Go reference in %d of %d (at most %.3g ulps), dx in %d of %d (at most %.3g ulps)",
				dt, rows, cols, nw, cols, uw, nx, rows*cols, ux)
		}
	}
}

// TestColTimes times rms_norm_backward (both launches) against rms_norm
// (forward) and bias_grad at the same shapes, bf16, on the default stream:
// the mean of 50 launches after 5 warm-ups, waited for once. The bytes are
// the tensors' (dy, x read, dx written; the workspace, ceildiv(rows, 8) ×
// cols f32 written and read, is counted apart).
func TestColTimes(t *testing.T) {
	p, err := kernels.RmsNormBackward.Select(kgenrt.CUDA)
	needCUDA(t, p, err)
	for _, sh := range [][2]int{{4096, 4096}, {16384, 4096}, {4096, 8192}, {32768, 1024}, {8192, 14336}} {
		rows, cols := sh[0], sh[1]
		ts := make([]*kgenrt.Tensor, 6)
		for i, s := range [][]int{{rows, cols}, {rows, cols}, {cols}, {rows, cols}, {cols}, {cols}} {
			if ts[i], err = kgenrt.NewCUDA(kgenrt.BF16, s...); err != nil {
				t.Fatal(err)
			}
			defer ts[i].Free()
		}
		dy, x, w, dx, dw, db := ts[0], ts[1], ts[2], ts[3], ts[4], ts[5]
		timeIt := func(f func() error) time.Duration {
			for range 5 {
				if err := f(); err != nil {
					t.Fatal(err)
				}
			}
			syncStream(t, 0)
			start := time.Now()
			const n = 50
			for range n {
				if err := f(); err != nil {
					t.Fatal(err)
				}
			}
			syncStream(t, 0)
			return time.Since(start) / n
		}
		bwd := timeIt(func() error { return kernels.RmsNormBackward.Enqueue(0, x, w, dy, dx, dw, 1e-6) })
		fwd := timeIt(func() error { return kernels.RmsNorm.Enqueue(0, x, w, dx, 1e-6) })
		bias := timeIt(func() error { return kernels.BiasGrad.Enqueue(0, dy, db) })
		elem := float64(rows) * float64(cols) * 2
		ws := float64((rows+7)/8) * float64(cols) * 4
		t.Logf("bf16 [%d, %d]: rms_norm_backward %v (%.0f GB/s over dy, x, dx; workspace %.1f MB), rms_norm forward %v (%.0f GB/s over x, y), bias_grad %v (%.0f GB/s over dy)",
			rows, cols, bwd, 3*elem/bwd.Seconds()/1e9, ws/1e6, fwd, 2*elem/fwd.Seconds()/1e9, bias, elem/bias.Seconds()/1e9)
	}
}
