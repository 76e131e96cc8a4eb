package parity

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgenrt"
)

// Quantized Bs (ir/quant.go). Their packed words or blocks are drawn by
// quantizing uniform weights with kgenrt.Quantize (the format's own rule),
// then adversarial groups overwrite some; the reference dequantizes them
// exactly as the format defines (kgenrt.Quant.Dequantize64) and multiplies
// as for any B.

// storedCount is binding b's stored elements at these sizes: the product
// of its Shape's sizes, the last through Binding.StoredWidth (a packed
// tensor's words or bytes, a table's groups).
func storedCount(b ir.Binding, sizes map[string]int) int {
	n := 1
	for j, d := range b.Shape {
		if j == len(b.Shape)-1 {
			n *= b.StoredWidth(sizes[d])
			continue
		}
		n *= sizes[d]
	}
	return n
}

// QuantMatmulShapes are a quantized matmul's (M, N, K) for group g (K must
// be a multiple of g): one group, a few and 33 (2112 values at g = 64:
// more chunks than a simdgroup's 32 lanes take in one step of the
// matrix-vector phase, so lanes loop unevenly); every m the matrix-vector
// phase takes at its edges (1, 3, 8) and the tiled kernel's (9, 33, 64, a
// partial tile); n a lone column, a partial simdgroup and threadgroup
// (7, 33), several; empty outputs.
func QuantMatmulShapes(g int) []MatmulShape {
	return []MatmulShape{
		{1, 1, g}, {1, 7, 3 * g}, {3, 33, g}, {8, 33, 2 * g}, {1, 40, 33 * g}, {8, 9, 33 * g},
		{9, 8, g}, {33, 40, 3 * g}, {64, 96, 2 * g}, {40, 17, 17 * g},
		{0, 7, g}, {7, 0, g}, {9, 1000, g},
	}
}

// quantGroup is the largest group of k's quantized Bs (0: none): the unit
// the shapes' K must be a multiple of.
func quantGroup(k *ir.Kernel) int {
	g := 0
	for _, b := range k.Matmul().B {
		if b.Quant != nil {
			g = max(g, b.Quant.Group)
		}
	}
	return g
}

// quantInputs draws every quantized B's packed tensor and tables: weights
// uniform in [-MatmulRange, MatmulRange] through kgenrt.Quantize with the
// variant's dtype for the tables. Unless plain, adversarial groups follow
// in row order (each needs n ≥ its index + 1): row 0's first group gets
// scale 0 (every weight its bias), row 1's all-maximum codes, row 2's a
// NaN scale (a NaN column of the output), row 3's a +Inf scale (±Inf, or
// NaN where a code is 0 or x is 0; both left out for kernels that reduce
// across columns), row 4's a subnormal scale; for ggml
// the same on d (an f16), with row 1 the codes' extremes (−8 and 7, −128
// and 127).
func quantInputs(r *rand.Rand, k *ir.Kernel, v ir.Variant, sizes map[string]int, vals [][]float64, plain bool) {
	n, kk := sizes["n"], sizes["k"]
	for _, op := range k.Matmul().B {
		if op.Quant == nil {
			continue
		}
		// A NaN or infinite weight column poisons every row that reduces
		// across columns (a row norm, a softmax): the whole output would
		// be NaN and the check vacuous. Such kernels get the finite
		// adversarial groups only.
		mm := k.Matmul()
		p, s, b := drawPacked(r, *op.Quant, v, n, kk, plain, mm.Rows == nil && mm.Chain == nil)
		vals[op.Binding] = p
		if op.Quant.HasTables() {
			vals[op.Scales], vals[op.Biases] = s, b
		}
	}
}

// packedInputs draws every packed input of a rowwise kernel (ir's
// quant_rows.go) and its tables as quantInputs draws a B, [rows, cols]
// for [n, k]; a kernel that reduces along its rows gets the finite
// adversarial groups only.
func packedInputs(r *rand.Rand, k *ir.Kernel, v ir.Variant, sizes map[string]int, vals [][]float64, plain bool) {
	for _, b := range k.BindingsOf(ir.Input) {
		if !b.IsPacked() || b.Table {
			continue
		}
		p, s, bs := drawPacked(r, *b.Quant, v, sizes[b.Shape[0]], sizes[b.Shape[1]], plain, len(k.Rows().Reductions) == 0)
		vals[b.Index] = p
		if si, bi := k.QuantTables(b.Index); si >= 0 {
			vals[si], vals[bi] = s, bs
		}
	}
}

// drawPacked is one packed [n, kk] tensor's words or bytes and its tables
// (nil for ggml) as float64 values: uniform weights through
// kgenrt.Quantize, then unless plain the adversarial groups (quantInputs),
// the non-finite ones where nonFinite.
func drawPacked(r *rand.Rand, q kgenrt.Quant, v ir.Variant, n, kk int, plain, nonFinite bool) (packed, s, b []float64) {
	w := make([]float32, n*kk)
	for i, x := range Inputs(r, n*kk, dtype.F32, MatmulRange, false) {
		w[i] = float32(x)
	}
	p, scales, biases, err := kgenrt.Quantize(q, w, n, kk, kgenrt.DType(v.DType))
	if err != nil {
		panic(err) // the shapes are multiples of the group by construction
	}
	raw := p.Bytes()
	if q.HasTables() {
		s, b = scales.Float64s(), biases.Float64s()
	}
	if !plain && kk > 0 {
		adversarialGroups(q, raw, s, b, n, kk, subnormal(q, v.DType), nonFinite)
	}
	return packedValues(q, raw), s, b
}

// subnormal is a subnormal scale of q's tables (the variant's dtype) or of
// a ggml block's f16 d.
func subnormal(q kgenrt.Quant, t dtype.DType) float64 {
	if !q.HasTables() || t == dtype.F16 {
		return 0x1p-20 // f16's normals start at 2^-14
	}
	return 0x1p-130 // bf16's and f32's at 2^-126
}

// adversarialGroups overwrites the first group of rows 0–4 (quantInputs).
func adversarialGroups(q kgenrt.Quant, raw []byte, s, b []float64, n, kk int, tiny float64, nonFinite bool) {
	rowBytes := len(raw) / max(n, 1)
	scale := []float64{0, -1, math.NaN(), math.Inf(1), tiny}
	for row := range min(n, len(scale)) {
		if !nonFinite && (row == 2 || row == 3) {
			continue
		}
		if q.HasTables() {
			g := row * (kk / q.Group)
			if row == 1 {
				for j := range q.Group {
					setCode(q, raw[row*rowBytes:], j, 1<<q.Bits-1)
				}
				continue
			}
			s[g] = scale[row]
			continue
		}
		block := raw[row*rowBytes:]
		if row == 1 {
			for j := range 32 {
				setCode(q, block, j, map[bool]int{true: 0, false: 1<<q.Bits - 1}[j%2 == 0])
			}
			continue
		}
		bits := kgenrt.F16Bits(float32(scale[row]))
		block[0], block[1] = byte(bits), byte(bits>>8)
	}
}

// setCode writes code c of value j of a packed row (for the adversarial
// groups: any code the format can hold). ggml's Q8_0 codes are int8 bytes,
// so 0 and 255 are 0 and −1 there; Q4_0's nibbles 0 and 15 are −8 and 7.
func setCode(q kgenrt.Quant, row []byte, j, c int) {
	switch q.Format {
	case kgenrt.Q8_0:
		row[2+j] = byte(c - 128) // 0 → −128, 255 → 127
	case kgenrt.Q4_0:
		at, shift := 2+j%16, 4*(j/16)
		row[at] = row[at]&^(15<<shift) | byte(c<<shift)
	default:
		for bit := range q.Bits {
			at, pos := (j*q.Bits+bit)/8, (j*q.Bits+bit)%8
			row[at] = row[at]&^(1<<pos) | byte((c>>bit)&1)<<pos
		}
	}
}

// packedValues are a packed tensor's words or bytes as float64 values (the
// check's inputs are float64, encoded by the binding's dtype).
func packedValues(q kgenrt.Quant, raw []byte) []float64 {
	if q.Storage() == kgenrt.U8 {
		out := make([]float64, len(raw))
		for i, c := range raw {
			out[i] = float64(c)
		}
		return out
	}
	out := make([]float64, len(raw)/4)
	for i := range out {
		out[i] = float64(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

// operandValues are B operand op's values as the reference multiplies
// them, in op's layout, and the magnitudes its bound multiplies by: a
// plain B's stored values, both. A quantized B's are its exact
// dequantization ([n, k], col-major) and |scale·q| + |bias| for affine
// (the kernels' one fma rounds within u of that) or |w| for ggml (d·q is
// exact in f32).
func operandValues(c *check, op ir.Operand) (vals, mags []float64) {
	if op.Quant == nil {
		return c.vals[op.Binding], c.vals[op.Binding]
	}
	q := *op.Quant
	n, kk := c.sizes["n"], c.sizes["k"]
	var s, b []float64
	if q.HasTables() {
		s, b = c.vals[op.Scales], c.vals[op.Biases]
	}
	raw := kgenrt.PackedBytes(q, c.vals[op.Binding])
	vals = q.Dequantize64(raw, s, b, n, kk)
	if !q.HasTables() {
		return vals, vals
	}
	mags = make([]float64, len(vals))
	for i := range vals {
		g := i/kk*(kk/q.Group) + i%kk/q.Group
		mags[i] = math.Abs(s[g]*float64(q.Code(raw[i/kk*q.Width(kk)*4:], i%kk))) + math.Abs(b[g])
	}
	return vals, mags
}

// gammaOf is the dot-product bound's γ for kk products with op: γ_K, or
// γ_{K+1} for an affine B, whose dequantization rounds once more per
// weight: |fl(w) − w| ≤ u·mag, so |Σ a·fl(w) − Σ a·w| ≤ γ_K Σ|a|(1+u)mag +
// u Σ|a|mag ≤ γ_{K+1} Σ|a|·mag.
func gammaOf(kk int, op ir.Operand) float64 {
	if op.Quant != nil && op.Quant.HasTables() {
		kk++
	}
	return float64(kk) * 0x1p-24 / (1 - float64(kk)*0x1p-24)
}

// roundedWeightsBound is the dot-product bound of K products with weights
// the port rounds before multiplying (ir.Kernel.QuantWeightRounding: the
// CUDA tensor cores take them in the storage type): |ŵ − w| ≤ u'·mag + η,
// and the products of a stored x and ŵ are exact in f32, so
// |fl(Σ a·ŵ) − Σ a·w| ≤ γ_K Σ|a||ŵ| + Σ|a||ŵ − w|
// ≤ (γ_K(1 + u') + u') Σ|a|·mag + (γ_K + 1) η Σ|a|.
func roundedWeightsBound(kk int, unit, abs, sa, suma float64) float64 {
	g := float64(kk) * 0x1p-24 / (1 - float64(kk)*0x1p-24)
	return (g*(1+unit)+unit)*sa + (g+1)*abs*suma
}

// packedGroup is the largest group of a rowwise kernel's packed inputs (0:
// none): the unit its shapes' cols must be a multiple of.
func packedGroup(k *ir.Kernel) int {
	g := 0
	for _, b := range k.BindingsOf(ir.Input) {
		if b.IsPacked() {
			g = max(g, b.Quant.Group)
		}
	}
	return g
}
