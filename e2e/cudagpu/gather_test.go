package cudagpu

import (
	"bytes"
	"math"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// The indexed-read and positioned-write built-ins on the GPU through the
// generated API (docs/indexing.md), bit for bit against the Go reference
// on the host: a gather and a positioned write are copies. TestRowParity
// checks both at parity's shapes with its index inputs as well; here the
// ids reach i32's extremes at widths on the vector and the scalar paths,
// and the caches are written in place with positions running past
// max_seq. Under compute-sanitizer (the lead's H200 run) no access may
// leave a buffer.

// gatherWidths: the scalar path (7, 4099), 16-byte vectors (128, 4096).
var gatherWidths = []int{7, 128, 4096, 4099}

// TestEmbeddingOnGPU: rows of ids in range, negative, at and past vocab
// and i32's extremes, embedding's CUDA port against its Reference.
func TestEmbeddingOnGPU(t *testing.T) {
	if _, err := kernels.Embedding.Select(kgenrt.CUDA); err != nil {
		t.Skipf("no CUDA here: %v", err)
	}
	const vocab = 50
	idv := []int32{0, 49, 50, 51, -1, math.MinInt32, math.MaxInt32, 7, 23, 1 << 20, 3}
	for _, cols := range gatherWidths {
		for _, dt := range []kgenrt.DType{kgenrt.F32, kgenrt.F16, kgenrt.BF16} {
			ids, _ := kgenrt.New(kgenrt.I32, len(idv))
			for i, v := range idv {
				ids.SetInt32(i, v)
			}
			tv := make([]float32, vocab*cols)
			for i := range tv {
				tv[i] = float32(i%977)/16 - 30
			}
			table, _ := kgenrt.FromFloat32(dt, tv, vocab, cols)
			y, _ := kgenrt.New(dt, len(idv), cols)
			ref, _ := kgenrt.New(dt, len(idv), cols)
			if err := kernels.Embedding.Run(kgenrt.CUDA, ids, table, y); err != nil {
				t.Fatal(err)
			}
			if err := kernels.Embedding.Reference(ids, table, ref); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(y.Bytes(), ref.Bytes()) {
				t.Errorf("embedding cols %d %v: the CUDA rows differ from the reference's bits", cols, dt)
			}
		}
	}
}

// TestKVCacheAppendOnGPU: n_new rows per head appended at pos of caches
// that hold earlier values (in place: every other element must keep its
// bits), with positions inside, at the end of and past max_seq.
func TestKVCacheAppendOnGPU(t *testing.T) {
	if _, err := kernels.KvCacheAppend.Select(kgenrt.CUDA); err != nil {
		t.Skipf("no CUDA here: %v", err)
	}
	const heads, maxSeq = 4, 19
	for _, cols := range gatherWidths {
		for _, c := range []struct{ pos, n int32 }{{0, 1}, {5, 3}, {17, 4}, {19, 2}, {-2, 3}} {
			for _, dt := range []kgenrt.DType{kgenrt.F32, kgenrt.F16, kgenrt.BF16} {
				rows := heads * int(c.n)
				nv := make([]float32, rows*cols)
				for i := range nv {
					nv[i] = float32(i%331)/8 - 20
				}
				cv := make([]float32, heads*maxSeq*cols)
				for i := range cv {
					cv[i] = -float32(i%211) / 4
				}
				kNew, _ := kgenrt.FromFloat32(dt, nv, rows, cols)
				vNew, _ := kgenrt.FromFloat32(dt, append(append([]float32(nil), nv[len(nv)/2:]...), nv[:len(nv)/2]...), rows, cols)
				var caches [4]*kgenrt.Tensor // k, v on the GPU; k, v by the reference
				for i := range caches {
					caches[i], _ = kgenrt.FromFloat32(dt, cv, heads, maxSeq, cols)
				}
				if err := kernels.KvCacheAppend.Run(kgenrt.CUDA, kNew, vNew, caches[0], caches[1], c.pos, c.n); err != nil {
					t.Fatal(err)
				}
				if err := kernels.KvCacheAppend.Reference(kNew, vNew, caches[2], caches[3], c.pos, c.n); err != nil {
					t.Fatal(err)
				}
				for i, name := range []string{"k_cache", "v_cache"} {
					if !bytes.Equal(caches[i].Bytes(), caches[i+2].Bytes()) {
						t.Errorf("kv_cache_append cols %d pos %d n_new %d %v: %s differs from the reference's bits", cols, c.pos, c.n, dt, name)
					}
				}
			}
		}
	}
}
