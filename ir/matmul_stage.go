package ir

// How the tiled Metal matmul (its tiles, the split's first phase and the
// row-owning kernel's column tiles) holds one K step of each operand in
// threadgroup memory. The counts that
// chose it (docs/metal-cost.md, m = n = k = 128, f16): staging f16 as
// float doubled the threadgroup bytes of every store and fragment load,
// and one scalar device load per lane per element kept every device access
// at 2 bytes; unpadded rows of 16 or 32 elements put the 8 rows of a
// fragment load on the same banks.
//
//   - Storage type: a plain operand is staged as its own element type
//     (half, bfloat or float) and loaded into simdgroup_matrix fragments of
//     that type; the products accumulate into float fragments, so the sums
//     are what float staging gave (a 16-bit product is exact in f32). A
//     quantized B is dequantized as it is read and staged as float.
//   - Orientation: the tile is laid out as the operand is stored (Cols
//     along the contiguous dimension), so a row of the tile is a run of
//     device memory; a column-major operand's fragments are loaded with
//     simdgroup_load's transpose instead of transposing the copy.
//   - 16-byte loads: each lane copies whole 16-byte chunks (8 half or
//     4 float) from device to threadgroup memory unconverted, where the
//     operand's rows are a whole number of chunks (a uniform check of the
//     row length at launch: buffers are 16-byte aligned, as the elementwise
//     kernels assume) and the chunk lies inside the matrix; other chunks
//     (the tails) are read element by element and zero-filled. A batched
//     kernel's views have strides, so it reads element by element.
//   - Padding: each tile row is StagePadBytes longer than its data, so the
//     8 rows of a fragment load start on different banks.

// StageVecBytes is the width of the staging's device loads.
const StageVecBytes = 16

// StagePadBytes pads each staged row (16 bytes keeps rows 16-byte aligned).
const StagePadBytes = 16

// Staging is one operand's threadgroup tile in the tiled kernel.
type Staging struct {
	// Rows and Cols are the tile as stored: Cols run along the operand's
	// contiguous dimension (k for a row-major A, m for a column-major one;
	// n for a row-major B, k for a column-major one).
	Rows, Cols int
	// Float: staged as float (a quantized B, dequantized as read) instead
	// of the operand's storage type.
	Float bool
	// Vector: whole 16-byte chunks are copied with one load where the rows
	// allow (see above); false: every element is read alone.
	Vector bool
}

// StageA is A's staging on tile t.
func (mm *Matmul) StageA(t Tile) Staging {
	s := Staging{Rows: t.BM, Cols: t.BK, Vector: len(mm.Batch) == 0}
	if mm.A.ColMajor {
		s.Rows, s.Cols = t.BK, t.BM
	}
	return s
}

// StageB is B i's staging on tile t.
func (mm *Matmul) StageB(i int, t Tile) Staging {
	b := mm.B[i]
	s := Staging{Rows: t.BK, Cols: t.BN, Vector: len(mm.Batch) == 0 && b.Quant == nil, Float: b.Quant != nil}
	if b.ColMajor {
		s.Rows, s.Cols = t.BN, t.BK
	}
	return s
}

// Bytes is the tile's threadgroup memory with elements of elem bytes.
func (s Staging) Bytes(elem int) int {
	if s.Float {
		elem = 4
	}
	return s.Rows * (s.Cols + StagePadBytes/elem) * elem
}

// tiledBytes is the tiled kernel's threadgroup memory on tiles ts at its
// widest (f32 operands): each staged tile's storage at the largest it is
// on any of ts, plus one f32 BM×BN accumulator tile per B for the
// epilogue, the largest BM×BN of ts (a kernel with a big tile declares
// its memory once for both bodies).
func (mm *Matmul) tiledBytes(ts ...Tile) int {
	a, c := 0, 0
	b := make([]int, len(mm.B))
	for _, t := range ts {
		a = max(a, mm.StageA(t).Bytes(4))
		for i := range mm.B {
			b[i] = max(b[i], mm.StageB(i, t).Bytes(4))
		}
		c = max(c, 4*t.BM*t.BN)
	}
	n := a + len(mm.B)*c
	for _, x := range b {
		n += x
	}
	return n
}

// stagingBytes is the staged tiles' threadgroup memory on tile t at its
// widest (f32 operands); the row-owning kernel's strip takes the rest.
func (mm *Matmul) stagingBytes(t Tile) int {
	n := mm.StageA(t).Bytes(4)
	for i := range mm.B {
		n += mm.StageB(i, t).Bytes(4)
	}
	return n
}
