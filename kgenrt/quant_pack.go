package kgenrt

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Quantize packs the row-major [n, k] float32 weights w in format q, as the
// format's own quantizer does: the packed tensor [n, q.Width(k)] and, for
// affine, the scales and biases [n, k/q.Group] in storage dtype dt (nil for
// ggml, whose d lives in each block). k must be a multiple of q.Group and
// every weight finite.
//
// Affine per group: mx.quantize's rule (affineGroup), bit for bit with MLX's
// CPU backend (e2e/mlx_quant_test.go): the scale and bias are chosen in
// float32 so that 0 is exactly representable, the codes are
// clamp(round((w − bias) / scale)) against that unrounded pair, and only then
// are the scale and bias rounded to dt. Q8_0 per
// block: d = amax / 127, q = roundf(w · (1/d)), halves away from zero
// (ggml's quantize_row_q8_0_ref, byte for byte: e2e/gguf_quant_test.go).
// Q4_0: d = m / −8 with m the value of largest magnitude, q = min(15,
// trunc(w · (1/d) + 8.5)) (quantize_row_q4_0_ref), each step rounded to f32.
func Quantize(q Quant, w []float32, n, k int, dt DType) (packed, scales, biases *Tensor, err error) {
	if err := q.Check(); err != nil {
		return nil, nil, nil, fmt.Errorf("kgenrt: Quantize: %w", err)
	}
	if n < 0 || k < 0 || k%q.Group != 0 || len(w) != n*k {
		return nil, nil, nil, fmt.Errorf("kgenrt: Quantize: %d weights for [%d, %d] (k a multiple of %d)", len(w), n, k, q.Group)
	}
	for i, v := range w {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, nil, nil, fmt.Errorf("kgenrt: Quantize: weight (%d, %d) is %v; only finite weights quantize", i/k, i%k, v)
		}
	}
	rowBytes := q.Width(k) * q.Storage().Size()
	raw := make([]byte, n*rowBytes)
	if q.Format != Affine {
		for r := range n {
			for b := range k / 32 {
				ggmlBlock(q.Format, w[r*k+b*32:r*k+b*32+32], raw[r*rowBytes+b*q.BlockBytes():])
			}
		}
		packed, err = FromBytes(U8, raw, n, q.Width(k))
		return packed, nil, nil, err
	}
	if !dt.IsFloat() {
		return nil, nil, nil, fmt.Errorf("kgenrt: Quantize: affine scales and biases take f32, f16 or bf16, not %s", dt)
	}
	groups := k / q.Group
	if scales, err = New(dt, n, groups); err != nil {
		return nil, nil, nil, err
	}
	if biases, err = New(dt, n, groups); err != nil {
		return nil, nil, nil, err
	}
	for r := range n {
		for g := range groups {
			vals := w[r*k+g*q.Group : r*k+(g+1)*q.Group]
			s, b := affineGroup(vals, q.Bits)
			scales.SetFloat32(r*groups+g, roundTo(dt, s))
			biases.SetFloat32(r*groups+g, roundTo(dt, b))
			for j, v := range vals {
				putCode(raw[r*rowBytes:], g*q.Group+j, q.Bits, affineCode(v, s, b, q.Bits))
			}
		}
	}
	packed, err = FromBytes(U32, raw, n, q.Width(k))
	return packed, scales, biases, err
}

// affineGroup is one group's scale and bias as mx.quantize chooses them,
// in float32 and not yet rounded to the tables' dtype: with lo and hi the
// group's extremes, a first scale s = max((hi − lo) / (2^bits − 1), 1e-7)
// is signed towards the extreme of larger magnitude, the edge e (that
// extreme); q0 = round(e / s), ties to even; unless q0 is 0, the scale
// becomes e / q0 and the bias e, so that e is code q0 and 0 is code 0 of
// the same grid; if q0 is 0, the bias is 0. (MLX's Metal kernel starts its
// maximum at 0, so a group of negative values only gets another pair
// there; its CPU backend, the referee here, takes the true maximum.)
func affineGroup(vals []float32, bits int) (scale, bias float32) {
	lo, hi := vals[0], vals[0]
	for _, v := range vals {
		lo, hi = min(lo, v), max(hi, v)
	}
	const eps = float32(1e-7)
	scale = max((hi-lo)/float32(int(1)<<bits-1), eps)
	edge := hi
	if abs32(lo) > abs32(hi) {
		edge = lo
	} else {
		scale = -scale
	}
	q0 := float32(math.RoundToEven(float64(edge / scale)))
	if q0 == 0 {
		return scale, 0
	}
	return edge / q0, edge
}

// affineCode is value v's code against a group's unrounded scale and bias:
// round((v − bias) / scale), ties to even, clamped to [0, 2^bits − 1].
func affineCode(v, scale, bias float32, bits int) uint {
	c := math.RoundToEven(float64((v - bias) / scale))
	return uint(min(max(c, 0), float64(int(1)<<bits-1)))
}

func abs32(x float32) float32 { return float32(math.Abs(float64(x))) }

// roundTo rounds f to storage dtype dt (ties to even).
func roundTo(dt DType, f float32) float32 {
	switch dt {
	case F16:
		return RoundF16(f)
	case BF16:
		return RoundBF16(f)
	}
	return f
}

// putCode writes code c of value j into a row's little-endian bit stream.
func putCode(row []byte, j, bits int, c uint) {
	bit := j * bits
	v := c << (bit % 8)
	row[bit/8] |= byte(v)
	if bit%8+bits > 8 {
		row[bit/8+1] |= byte(v >> 8)
	}
}

// ggmlBlock writes one block of 32 values in format f at out.
func ggmlBlock(f QuantFormat, vals []float32, out []byte) {
	var amax, vmax float32
	for _, v := range vals {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, vmax = a, v
		}
	}
	d := amax / 127
	if f == Q4_0 {
		d = vmax / -8
	}
	id := float32(0)
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(out, F16Bits(d))
	for j, v := range vals {
		if f == Q8_0 {
			out[2+j] = byte(int8(math.Round(float64(v * id)))) // C's roundf: halves away from zero
			continue
		}
		c := min(15, int(int8(float32(v*id)+8.5))) // the conversion forbids a fused multiply-add, as ggml's reference rounds twice
		if j < 16 {
			out[2+j] |= byte(c)
		} else {
			out[2+j-16] |= byte(c << 4)
		}
	}
}

// Dequantize is the float32 of every weight of packed [n, q.Width(k)] (and
// affine's scales and biases [n, k/q.Group]), row-major [n, k], computed as
// the kernels compute it (DequantizeF32).
func Dequantize(q Quant, packed, scales, biases *Tensor) ([]float32, int, int, error) {
	n, k, err := q.checkPacked(packed, scales, biases)
	if err != nil {
		return nil, 0, 0, err
	}
	var s, b []float64
	if q.HasTables() {
		s, b = scales.Float64s(), biases.Float64s()
	}
	if !packed.Contiguous() || packed.Bytes() == nil {
		return nil, 0, 0, fmt.Errorf("kgenrt: Dequantize reads a dense host tensor; copy a view or a CUDA tensor first")
	}
	return q.DequantizeF32(packed.Bytes(), s, b, n, k), n, k, nil
}

// checkPacked checks a packed tensor and its tables against q and returns
// its n and k.
func (q Quant) checkPacked(packed, scales, biases *Tensor) (n, k int, err error) {
	if err := q.Check(); err != nil {
		return 0, 0, fmt.Errorf("kgenrt: %w", err)
	}
	sh := packed.Shape()
	if packed.DType() != q.Storage() || len(sh) != 2 {
		return 0, 0, fmt.Errorf("kgenrt: a %s tensor is %s [n, width], not %s %v", q, q.Storage(), packed.DType(), sh)
	}
	n, k, ok := sh[0], 0, false
	if k, ok = q.KOf(sh[1]); !ok {
		return 0, 0, fmt.Errorf("kgenrt: a %s tensor's width %d holds no whole number of groups of %d values", q, sh[1], q.Group)
	}
	if !q.HasTables() {
		return n, k, nil
	}
	for _, t := range []*Tensor{scales, biases} {
		if t == nil || !t.DType().IsFloat() || !slices.Equal(t.Shape(), []int{n, k / q.Group}) {
			return 0, 0, fmt.Errorf("kgenrt: %s scales and biases are float [%d, %d] for a packed [%d, %d]", q, n, k/q.Group, n, sh[1])
		}
	}
	return n, k, nil
}

// PackedBytes turns a packed tensor's elements given as float64 values
// (Reference64's inputs: each uint32 word or byte exactly) back into its
// little-endian bytes.
func PackedBytes(q Quant, vals []float64) []byte {
	if q.Storage() == U8 {
		out := make([]byte, len(vals))
		for i, v := range vals {
			out[i] = byte(v)
		}
		return out
	}
	out := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(v))
	}
	return out
}

// DequantizedTensor is Dequantize as an f32 tensor [n, k]: what a
// quantized matmul's CPU reference multiplies by.
func DequantizedTensor(q Quant, packed, scales, biases *Tensor) (*Tensor, error) {
	w, n, k, err := Dequantize(q, packed, scales, biases)
	if err != nil {
		return nil, err
	}
	return FromFloat32(F32, w, n, k)
}

// Dequantize64Values is Dequantize64 over Reference64's inputs: the packed
// tensor's words or bytes and the tables as float64 values.
func Dequantize64Values(q Quant, packed, scales, biases []float64, n, k int) []float64 {
	return q.Dequantize64(PackedBytes(q, packed), scales, biases, n, k)
}
