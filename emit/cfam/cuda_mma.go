package cfam

import "fmt"

// The fragment code the generated tensor-core kernels share (the
// attention chain, cuda_chain_mma.go; the quantized matmul,
// cuda_quant.go): 16-bit tiles in shared memory whose 16-byte pieces are
// XOR-swizzled by row, read into mma.sync m16n8k16 fragments by ldmatrix
// (templates/cuda/mma.tmpl). Each writes one line; the loops around them
// are the kernels' own.

// mmaSwizzle declares kgen_sw(r, c): the offset of element (r, c) of a
// tile whose rows are width elements: piece c/8 of row r lies at piece
// (c/8) ^ (r % 8), so the 8 rows one ldmatrix matrix reads sit in 8
// different bank groups.
func (mw *matmulWriter) mmaSwizzle(width string) {
	mw.P("auto kgen_sw = [](unsigned kgen_r, unsigned kgen_c) { return kgen_r * ", width, " + (((kgen_c / 8) ^ (kgen_r % 8)) * 8) + kgen_c % 8; }; // 16-byte chunk c/8 of row r at chunk (c/8) ^ (r % 8)")
}

// ldsmA loads the A fragment of rows row0 … row0 + 15 × k0 … k0 + 15 of
// tile (row-major, k along the rows) into frag: lanes 0–15 address the
// rows at k0, lanes 16–31 at k0 + 8.
func ldsmA(frag, tile, row0, k0 string) string {
	return fmt.Sprintf("kgen_ldsm4(%s, &%s[kgen_sw(%s + kgen_lane %% 16, %s + (kgen_lane / 16) * 8)]);", frag, tile, row0, k0)
}

// ldsmB loads the B fragments of two n8 tiles, columns col0 … col0 + 15
// × k0 … k0 + 15 of tile (stored [n][k], k along the rows): frag[0],
// frag[1] for columns col0 …, frag[2], frag[3] for col0 + 8 ….
func ldsmB(frag, tile, col0, k0 string) string {
	return fmt.Sprintf("kgen_ldsm4(%s, &%s[kgen_sw(%s + kgen_lane %% 8 + (kgen_lane / 16) * 8, %s + (kgen_lane / 8) %% 2 * 8)]);", frag, tile, col0, k0)
}

// mmaPair multiplies A fragment a with the two n8 tiles of b (ldsmB) into
// accumulators c0 and c1.
func (mw *matmulWriter) mmaPair(c0, c1, a, b string) {
	mw.P("kgen_mma<T>(", c0, ", ", a, ", ", b, "[0], ", b, "[1]);")
	mw.P("kgen_mma<T>(", c1, ", ", a, ", ", b, "[2], ", b, "[3]);")
}
