package ir

import (
	"fmt"

	"github.com/kgen-dev/kgen/launch"
)

// The matrix-vector form of a plain matmul (Bs of plain elements), the
// Gemv phase taken for m <= GemvRows like the quantized one: the tiled
// kernel at m = 1 stages a 32-row tile for one row, so 31 of its 32 rows
// of A are zeros it stores to and loads from threadgroup memory and
// multiplies (docs/metal-cost.md, m = 1, n = k = 128, f16: 1668
// threadgroup bytes, 0.53 barriers and 8 matrix multiply-accumulates per
// output). The matrix-vector form stages only A's m real rows, one K
// block at a time, shared by its PlainGemvSimds simdgroups (so A is read
// from device memory once per PlainGemvSimds × GemvCols = 32 columns, as
// in the tiled kernel); each simdgroup owns GemvCols columns, each lane
// one 16-byte slice of K of every block, every B element is read from
// device memory once (16-byte loads of a column-major B's k run; a
// row-major B's GemvCols columns of a row in one vector load), and a
// simd_sum per (row, column) finishes the sums: 72 threadgroup bytes,
// 0.0625 barriers and no matrix operations per output at that shape,
// the same device bytes.

// PlainGemvSimds is the plain matrix-vector launch's simdgroups per
// threadgroup: 8 × GemvCols = 32 columns share each staged block of A.
const PlainGemvSimds = 8

// plainGemvOf lays out the matrix-vector phase of a matmul whose Bs are
// all plain, with a plain epilogue; nil for row reductions, chains and
// batched kernels (they keep their own launches). It is Metal's: the GPU
// ports launch their own entry point for any m (PortPhases is for column
// reductions), so a ROCm port's HIP GEMM serves m <= GemvRows as well.
func plainGemvOf(k *Kernel, mm *Matmul) *Gemv {
	if mm.Rows != nil || mm.Chain != nil || len(mm.Batch) > 0 {
		return nil
	}
	for _, b := range mm.B {
		if b.Quant != nil {
			return nil
		}
	}
	var from []int
	for i := range k.Bindings {
		from = append(from, i)
	}
	threads := PlainGemvSimds * SimdWidth
	groups := launch.Ceil(launch.V("n"), launch.N(PlainGemvSimds*GemvCols))
	l := launch.Launch{Grid: [3]*launch.Expr{launch.Times(groups, launch.N(threads)), launch.N(1), launch.N(1)}, Threadgroup: [3]int{threads, 1, 1}}
	comment := fmt.Sprintf("m <= %d (decode): the matrix-vector form, %d output columns per simdgroup, %d simdgroups per threadgroup sharing A's m rows staged one K block at a time, each lane a 16-byte slice of K, every B element read once, simd_sum per output",
		GemvRows, GemvCols, PlainGemvSimds)
	return &Gemv{Phase: newPhase(k, nil, "gemv", comment, Tile{}, from, nil, l), Simds: PlainGemvSimds, Plain: true}
}
