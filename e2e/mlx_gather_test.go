package e2e

import (
	"fmt"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// TestGatherMatchesMLX runs the indexed-read and positioned-write
// built-ins' Metal kernels (the generated launchers on kgenrt.Metal, the
// MSL on the CPU harness) and their Go references against MLX, bit for
// bit (both are copies): embedding against mx.take(table, ids, axis=0), and
// kv_cache_append against the slice update cache[:, pos:pos+n, :] = new
// that mlx-lm's KVCache.update_and_fetch performs. The ids and positions
// stay inside the tensors here: MLX does not define take or a slice update
// outside them, where kgen's rule (docs/indexing.md) is parity's to check.
func TestGatherMatchesMLX(t *testing.T) {
	needMLX(t)
	emulateMetal(t)
	const vocab, rows, heads, maxSeq, pos, n = 40, 9, 3, 16, 5, 4
	for _, cols := range []int{7, 64, 1000} {
		for _, dt := range []kgenrt.DType{kgenrt.F32, kgenrt.F16, kgenrt.BF16} {
			t.Run(fmt.Sprintf("%s_%d", dt, cols), func(t *testing.T) {
				idv := []int32{3, 0, 39, 17, 17, 38, 1, 22, 9}
				ids, _ := kgenrt.New(kgenrt.I32, rows)
				idf := make([]float32, rows)
				for i, v := range idv {
					ids.SetInt32(i, v)
					idf[i] = float32(v)
				}
				idsF, _ := kgenrt.FromFloat32(kgenrt.F32, idf, rows)
				table, _ := kgenrt.FromFloat32(dt, seeded(vocab*cols, 4, 30), vocab, cols)
				want := runMLX(t, fmt.Sprintf(`
ids, table = load('ids', %d).astype(mx.int32), load('table', %d, %d)
save('y', mx.take(table, ids, axis=0))
`, rows, vocab, cols), map[string]*kgenrt.Tensor{"ids": idsF, "table": table}, rows*cols, "y")
				for _, b := range []string{"metal", "reference"} {
					y, _ := kgenrt.New(dt, rows, cols)
					err := kernels.Embedding.Reference(ids, table, y)
					if b == "metal" {
						err = kernels.Embedding.Run(kgenrt.Metal, ids, table, y)
					}
					if err != nil {
						t.Fatal(err)
					}
					compareMLX(t, "embedding's "+b, y, want["y"], 0, 0)
				}

				kNew, _ := kgenrt.FromFloat32(dt, seeded(heads*n*cols, 5, 8), heads*n, cols)
				vNew, _ := kgenrt.FromFloat32(dt, seeded(heads*n*cols, 6, 8), heads*n, cols)
				cache := seeded(heads*maxSeq*cols, 7, 2)
				kc, _ := kgenrt.FromFloat32(dt, cache, heads, maxSeq, cols)
				vc, _ := kgenrt.FromFloat32(dt, cache, heads, maxSeq, cols)
				want = runMLX(t, fmt.Sprintf(`
H, S, C, pos, n = %d, %d, %d, %d, %d
kc, vc = load('kc', H, S, C), load('vc', H, S, C)
kc[:, pos:pos+n, :] = load('kn', H, n, C)
vc[:, pos:pos+n, :] = load('vn', H, n, C)
save('kc', kc)
save('vc', vc)
`, heads, maxSeq, cols, pos, n), map[string]*kgenrt.Tensor{"kc": kc, "vc": vc, "kn": kNew, "vn": vNew}, heads*maxSeq*cols, "kc", "vc")
				for _, b := range []string{"metal", "reference"} {
					k2, _ := kgenrt.FromFloat32(dt, cache, heads, maxSeq, cols)
					v2, _ := kgenrt.FromFloat32(dt, cache, heads, maxSeq, cols)
					err := kernels.KvCacheAppend.Reference(kNew, vNew, k2, v2, pos, n)
					if b == "metal" {
						err = kernels.KvCacheAppend.Run(kgenrt.Metal, kNew, vNew, k2, v2, pos, n)
					}
					if err != nil {
						t.Fatal(err)
					}
					compareMLX(t, "kv_cache_append's k_cache, "+b, k2, want["kc"], 0, 0)
					compareMLX(t, "kv_cache_append's v_cache, "+b, v2, want["vc"], 0, 0)
				}
			})
		}
	}
}
