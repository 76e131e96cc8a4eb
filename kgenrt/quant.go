package kgenrt

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// QuantFormat is how a quantized matmul operand (the weights, logical
// [n, k] with each row one output column's k values) is stored. Each is
// read exactly as its producer writes it, with no host repacking:
//
//   - Affine is MLX's (mx.quantize): each row's codes packed least
//     significant bit first into a stream of little-endian uint32 words,
//     Bits bits each (value j at stream bits j·Bits … j·Bits + Bits − 1), and
//     per Group values along k a scale and a bias, tensors [n, k/Group] of
//     the activations' dtype: w = scale·q + bias.
//   - Q8_0 and Q4_0 are ggml's blocks as they lie in a GGUF tensor: per 32
//     values one block, an f16 d then the codes; Q8_0 (34 bytes) 32 int8,
//     w = d·q; Q4_0 (18 bytes) 16 bytes whose low nibbles are values 0–15
//     and high nibbles values 16–31, w = d·(q − 8).
type QuantFormat uint8

// The formats.
const (
	NotQuantized QuantFormat = iota
	Affine
	Q4_0
	Q8_0
)

var quantNames = [...]string{NotQuantized: "none", Affine: "affine", Q4_0: "q4_0", Q8_0: "q8_0"}

// QuantFormats are the formats' spellings in specs.
var QuantFormats = []string{"affine", "q4_0", "q8_0"}

func (f QuantFormat) String() string {
	if int(f) < len(quantNames) {
		return quantNames[f]
	}
	return "quant(?)"
}

// ParseQuantFormat is the format spelled s (NotQuantized if none).
func ParseQuantFormat(s string) QuantFormat {
	if i := slices.Index(quantNames[:], s); i > 0 {
		return QuantFormat(i)
	}
	return NotQuantized
}

// AffineBits and AffineGroups are the widths and group sizes of MLX's
// affine quantization.
var (
	AffineBits   = []int{2, 3, 4, 5, 6, 8}
	AffineGroups = []int{32, 64, 128}
)

// Quant is one packed operand's format: Bits per code and Group values per
// scale (ggml's formats: 4 or 8 bits, blocks of 32).
type Quant struct {
	Format      QuantFormat
	Bits, Group int
}

// GGMLQuant is the Quant of a ggml block format.
func GGMLQuant(f QuantFormat) Quant {
	if f == Q8_0 {
		return Quant{Format: Q8_0, Bits: 8, Group: 32}
	}
	return Quant{Format: Q4_0, Bits: 4, Group: 32}
}

func (q Quant) String() string {
	if q.Format == Affine {
		return fmt.Sprintf("affine %d-bit, group %d", q.Bits, q.Group)
	}
	return q.Format.String()
}

// Check says what is wrong with q.
func (q Quant) Check() error {
	switch q.Format {
	case Affine:
		if !slices.Contains(AffineBits, q.Bits) {
			return fmt.Errorf("affine bits %d: want one of %v", q.Bits, AffineBits)
		}
		if !slices.Contains(AffineGroups, q.Group) {
			return fmt.Errorf("affine group %d: want one of %v", q.Group, AffineGroups)
		}
	case Q4_0, Q8_0:
		if q != GGMLQuant(q.Format) {
			return fmt.Errorf("%s has %d-bit codes in blocks of 32, not %d and %d", q.Format, GGMLQuant(q.Format).Bits, q.Bits, q.Group)
		}
	default:
		return fmt.Errorf("unknown quant format %d", q.Format)
	}
	return nil
}

// Storage is the packed tensor's element type: uint32 words (affine) or
// bytes (ggml blocks, 2-byte aligned and 18 or 34 bytes long).
func (q Quant) Storage() DType {
	if q.Format == Affine {
		return U32
	}
	return U8
}

// BlockBytes is a ggml block's size (0 for affine).
func (q Quant) BlockBytes() int {
	switch q.Format {
	case Q4_0:
		return 2 + 16
	case Q8_0:
		return 2 + 32
	}
	return 0
}

// Width is the packed tensor's last dimension, in Storage elements, for
// rows of k values (k a multiple of Group).
func (q Quant) Width(k int) int {
	if q.Format == Affine {
		return k / 32 * q.Bits // 32 values fill Bits whole words
	}
	return k / q.Group * q.BlockBytes()
}

// KOf is the row length k a packed last dimension of width elements holds,
// false when no k has that width.
func (q Quant) KOf(width int) (int, bool) {
	unit, values := q.Bits, 32 // affine: Bits words per 32 values
	if q.Format != Affine {
		unit, values = q.BlockBytes(), q.Group
	}
	if width < 0 || width%unit != 0 {
		return 0, false
	}
	k := width / unit * values
	return k, k%q.Group == 0
}

// widthText is Width's rule in words, for messages.
func (q Quant) widthText(dim string) string {
	if q.Format == Affine {
		return fmt.Sprintf("%s·%d/32", dim, q.Bits)
	}
	return fmt.Sprintf("%s/32·%d", dim, q.BlockBytes())
}

// HasTables reports whether scales and biases are tensors of their own
// (affine); ggml keeps each block's d in the block.
func (q Quant) HasTables() bool { return q.Format == Affine }

// Code is the integer code of value j of one packed row (little-endian
// bytes): affine's unsigned Bits-bit field, Q8_0's int8, Q4_0's nibble
// (unsigned; the − 8 is Dequantize's).
func (q Quant) Code(row []byte, j int) int {
	switch q.Format {
	case Q8_0:
		return int(int8(row[j/32*34+2+j%32]))
	case Q4_0:
		b := row[j/32*18+2+j%16]
		if j%32 >= 16 {
			return int(b >> 4)
		}
		return int(b & 15)
	}
	bit := j * q.Bits
	v := uint(row[bit/8])
	if bit%8+q.Bits > 8 { // the code runs into the next byte (at most 7 + 8 bits in all)
		v |= uint(row[bit/8+1]) << 8
	}
	return int(v>>(bit%8)) & (1<<q.Bits - 1)
}

// blockD is ggml block b's scale d of one packed row.
func (q Quant) blockD(row []byte, b int) float64 {
	at := b * q.BlockBytes()
	return float64(F16Value(binary.LittleEndian.Uint16(row[at:])))
}

// Dequantize64 is the exact float64 of every value of a packed [n, k]
// matrix, row-major [n, k], as the format defines it: scale·q + bias
// (affine; scales and biases [n, k/Group], row-major) or d·q, d·(q − 8).
// packed holds the rows back to back, Width(k) elements each.
func (q Quant) Dequantize64(packed []byte, scales, biases []float64, n, k int) []float64 {
	out := make([]float64, n*k)
	rowBytes := q.Width(k) * q.Storage().Size()
	for r := range n {
		row := packed[r*rowBytes : (r+1)*rowBytes]
		for j := range k {
			c := float64(q.Code(row, j))
			switch q.Format {
			case Affine:
				g := r*(k/q.Group) + j/q.Group
				out[r*k+j] = scales[g]*c + biases[g]
			case Q4_0:
				out[r*k+j] = q.blockD(row, j/32) * (c - 8)
			default:
				out[r*k+j] = q.blockD(row, j/32) * c
			}
		}
	}
	return out
}

// DequantizeF32 is Dequantize64 as the kernels compute it: affine's
// scale·q + bias as one fused multiply-add in float32 (ggml's products are
// exact in float32: an 11-bit d times a code of at most 8 bits).
func (q Quant) DequantizeF32(packed []byte, scales, biases []float64, n, k int) []float32 {
	out := make([]float32, n*k)
	if q.Format != Affine { // exact in float32: the float64 values convert without rounding
		for i, v := range q.Dequantize64(packed, scales, biases, n, k) {
			out[i] = float32(v)
		}
		return out
	}
	rowBytes := q.Width(k) * 4
	for r := range n {
		row := packed[r*rowBytes:]
		for j := range k {
			g := r*(k/q.Group) + j/q.Group
			out[r*k+j] = fma32(float32(scales[g]), float32(q.Code(row, j)), float32(biases[g]))
		}
	}
	return out
}

// fma32 is float32's fused multiply-add computed through float64: x·y is
// exact there, so the only difference from a float32 fma is a double
// rounding when the float64 sum lands on a float32 tie, which the
// reference's parity bound covers (the kernels' order of operations is the
// contract, not this last bit).
func fma32(x, y, z float32) float32 {
	return float32(float64(x)*float64(y) + float64(z))
}

// At64 is value (r, j) of a packed [n, k] matrix given as Reference64's
// inputs (the packed tensor's words or bytes and the tables as float64
// values), exactly as Dequantize64 computes it, and the magnitude that
// bounds the kernels' rounding of it: |scale·q| + |bias| for affine, whose
// one f32 fma rounds within u of that (the bias can cancel the product),
// |w| for ggml (d·q is exact in f32). It reads one value, for the float64
// evaluation of a packed rowwise input's gathers.
func (q Quant) At64(packed, scales, biases []float64, k, r, j int) (v, mag float64) {
	off := r * q.Width(k)
	if q.Format == Affine {
		bit := j * q.Bits
		at := off + bit/32
		word := uint64(uint32(packed[at]))
		if bit%32+q.Bits > 32 { // the code runs into the next word
			word |= uint64(uint32(packed[at+1])) << 32
		}
		c := float64(int(word>>(bit%32)) & (1<<q.Bits - 1))
		g := r*(k/q.Group) + j/q.Group
		sq := scales[g] * c
		return sq + biases[g], math.Abs(sq) + math.Abs(biases[g])
	}
	block := make([]byte, q.BlockBytes())
	for i := range block {
		block[i] = byte(packed[off+j/32*q.BlockBytes()+i])
	}
	v = q.Dequantize64(block, nil, nil, 1, 32)[j%32]
	return v, math.Abs(v)
}
