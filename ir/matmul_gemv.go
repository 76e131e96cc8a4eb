package ir

// The matrix-vector form of a plain matmul (Bs of plain elements), the
// Gemv phase taken for m <= GemvRows like the quantized one: the tiled
// kernel at m = 1 stages a 32-row tile for one row, so 31 of its 32 rows
// of A are zeros it stores to and loads from threadgroup memory and
// multiplies (docs/metal-cost.md, m = 1, n = k = 128, f16: 1668
// threadgroup bytes, 0.53 barriers and 8 matrix multiply-accumulates per
// output). The matrix-vector form stages only A's m real rows, one K
// block at a time, shared by its GemvSimds simdgroups (so A is read
// from device memory once per GemvSimds × GemvCols = 32 columns, as
// in the tiled kernel); each simdgroup owns GemvCols columns, each lane
// one 16-byte slice of K of every block, every B element is read from
// device memory once (16-byte loads of a column-major B's k run; a
// row-major B's GemvCols columns of a row in one vector load), and a
// simd_sum per (row, column) finishes the sums: 72 threadgroup bytes,
// 0.0625 barriers and no matrix operations per output at that shape,
// the same device bytes.

// GemvSimds is the matrix-vector launch's simdgroups per threadgroup, plain
// or quantized (gemvOf, quant.go): 8 × GemvCols = 32 columns share each
// staged block of A.
const GemvSimds = 8
