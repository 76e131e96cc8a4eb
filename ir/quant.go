package ir

import (
	"fmt"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/kgenrt"
	"github.com/kgen-dev/kgen/launch"
	"github.com/kgen-dev/kgen/spec"
)

// Quantized weights: a matmul B declared with `quant:` is read packed, as
// its producer wrote it (kgenrt.QuantFormat), and dequantized where the
// kernel loads it; everything after the load (the f32 products, epilogues,
// row reductions, gated pairs) is the plain matmul's. Its bindings are the
// packed tensor, logical [n, k] (x @ w.T: a quantized B is always stored
// [n, k], each row one output column's k values), then for the affine
// format its scales and biases ([n, k / group], the variant's dtype).

// quantBindings are a quantized B's bindings from buffer index first.
func quantBindings(s *spec.Spec, b spec.Operand, first int, diags *diag.List) []Binding {
	q := b.Quant
	if b.DType.Pos.Line > 0 {
		diags.Addf(b.DType.Pos, "operand %s: a quantized operand's storage follows its format (%s: %s); drop dtype", b.Name.Name, q.Quant, dtype.DType(q.Storage()))
	}
	if b.LayoutPos.Line > 0 && !b.ColMajor {
		diags.Addf(b.LayoutPos, "operand %s: quantized weights are stored [n, k] (x @ w.T, each row one output's k values, as mx.quantize and GGUF store them); drop layout or write col_major", b.Name.Name)
	}
	if m := s.Matmul; len(m.Batch) > 0 {
		diags.Addf(q.Pos, "operand %s: a batched matmul cannot take quantized operands yet; quantize an unbatched matmul's weights", b.Name.Name)
	}
	out := append([]Binding{packedBinding(b.Name.Name, q, Shape{"n", "k"}, first)}, tableBindings(q, Shape{"n", "k"}, first+1)...)
	for i := range out {
		out[i].Operand = true
	}
	return out
}

// packedBinding is a packed tensor's own binding at index: logical shape
// (its last dimension the values along a row, stored Quant.Width of them),
// the format's storage type.
func packedBinding(name string, q *spec.Quant, shape Shape, index int) Binding {
	format := q.Quant
	return Binding{Index: index, Name: name, Role: Input, DType: dtype.DType(q.Storage()), Shape: shape, Quant: &format}
}

// tableBindings are an affine tensor's scales and biases from index first
// (none for ggml, whose d lives in each block): the packed tensor's
// logical shape, one value a group along its last dimension, in the
// variant's dtype.
func tableBindings(q *spec.Quant, shape Shape, first int) []Binding {
	if !q.HasTables() {
		return nil
	}
	format := q.Quant
	var out []Binding
	for _, t := range []spec.Name{q.Scales, q.Biases} {
		out = append(out, Binding{Index: first + len(out), Name: t.Name, Role: Input, Shape: append(Shape(nil), shape...), Quant: &format, Table: true})
	}
	return out
}

// operandOf is the Operand of spec operand o, found by name among k's
// bindings (a quantized B's tables follow it).
func operandOf(k *Kernel, o spec.Operand) Operand {
	op := Operand{Binding: -1, Name: o.Name.Name, ColMajor: o.ColMajor || o.Quant != nil, Acc: o.Acc.Name, Scales: -1, Biases: -1}
	for i, b := range k.Bindings {
		if b.Name == o.Name.Name && b.Role == Input {
			op.Binding = i
		}
	}
	if o.Quant != nil {
		op.Quant = k.Bindings[op.Binding].Quant
		if o.Quant.HasTables() {
			op.Scales, op.Biases = op.Binding+1, op.Binding+2
		}
	}
	return op
}

// Quantized reports whether any B of kernel k is quantized.
func (k *Kernel) Quantized() bool {
	mm := k.Matmul()
	return mm != nil && mm.quantized()
}

// quantized reports whether any B is quantized (before the kernel holds
// its schedule).
func (mm *Matmul) quantized() bool {
	for _, b := range mm.B {
		if b.Quant != nil {
			return true
		}
	}
	return false
}

// StoredWidth is binding b's last stored dimension for logical k values
// along it: a packed tensor's Quant.Width(k), a table's k / group.
func (b Binding) StoredWidth(k int) int {
	switch {
	case b.Quant == nil:
		return k
	case b.Table:
		return k / b.Quant.Group
	}
	return b.Quant.Width(k)
}

// ShapeText is binding b's shape as stored: Shape, except a quantized
// binding's last dim ([n, k·4/32] words, [n, k/32·18] bytes, [n, k/64]
// scales).
func (b Binding) ShapeText() string {
	if b.Quant == nil {
		return b.Shape.String()
	}
	dim := b.Shape[len(b.Shape)-1] // k, or a packed rowwise input's cols
	last := fmt.Sprintf("%s/%d", dim, b.Quant.Group)
	switch {
	case b.Table:
	case b.Quant.Format == kgenrt.Affine:
		last = fmt.Sprintf("%s·%d/32", dim, b.Quant.Bits)
	default:
		last = fmt.Sprintf("%s/32·%d", dim, b.Quant.BlockBytes())
	}
	return Shape(append(append(Shape{}, b.Shape[:len(b.Shape)-1]...), last)).String()
}

// QuantText says how a quantized B is stored and read, for comments.
func QuantText(k *Kernel, o Operand) string {
	q := o.Quant
	if q.Format == kgenrt.Affine {
		return fmt.Sprintf("%s: MLX affine %d-bit, group %d (u32 [n, k·%d/32], codes LSB first), w = %s·q + %s ([n, k/%d])",
			o.Name, q.Bits, q.Group, q.Bits, k.Bindings[o.Scales].Name, k.Bindings[o.Biases].Name, q.Group)
	}
	if q.Format == kgenrt.Q4_0 {
		return fmt.Sprintf("%s: ggml Q4_0 blocks (u8 [n, k/32·18]: f16 d, 16 bytes of nibbles, low = values 0–15), w = d·(q − 8)", o.Name)
	}
	return fmt.Sprintf("%s: ggml Q8_0 blocks (u8 [n, k/32·34]: f16 d, 32 int8), w = d·q", o.Name)
}

// quantDescribe are the schedule's lines on quantized Bs: each one's
// format, then the matrix-vector phase where there is one.
func (mm *Matmul) quantDescribe(k *Kernel) []string {
	var out []string
	for _, b := range mm.B {
		if b.Quant != nil {
			out = append(out, "quantized "+QuantText(k, b)+"; dequantized to f32 as it is staged")
		}
	}
	if mm.Gemv != nil {
		out = append(out, "Metal, "+mm.Gemv.Comment)
	}
	return out
}

// GemvRows is the most rows m the matrix-vector phase takes (a decode
// step's tokens); GemvCols the output columns one simdgroup owns: lane l
// finishes row l % GemvRows of column l / GemvRows, so the two fill 32
// lanes.
const GemvRows, GemvCols = 8, 4

// Gemv is quantized weights' matrix-vector launch: where m <= GemvRows a
// tiled kernel would spend most of its 32-row tiles on rows past m and
// stage the packed weights through threadgroup memory one value per
// thread; this one streams each weight once from device memory, Simds
// simdgroups of GemvCols columns per threadgroup. It takes the kernel's
// own bindings (no workspace).
type Gemv struct {
	Phase
	Simds int
	// Plain: the Bs are plain elements (matmul_gemv.go), not quantized.
	Plain bool
}

// gemvOf lays out the matrix-vector phase of a matmul whose Bs are all
// quantized or all plain (matmul_gemv.go), with a plain epilogue: row
// reductions, chains and batched kernels keep their own launches (they
// need whole rows or blocks), as does a mix of quantized and plain Bs.
// Both forms run GemvSimds simdgroups per threadgroup sharing each K
// block of A (x) staged in threadgroup memory: at m = 1, n = k = 128, MLX
// 4-bit, x is read from device once per 32 columns instead of once per
// column per row, 338 -> 90 device bytes per output. It is Metal's: the
// GPU ports launch their own entry point for any m (PortPhases is for
// column reductions), so a ROCm port's HIP GEMM serves m <= GemvRows too.
func gemvOf(k *Kernel, mm *Matmul) *Gemv {
	if mm.Rows != nil || mm.Chain != nil || len(mm.Batch) > 0 {
		return nil
	}
	quantized := 0
	for _, b := range mm.B {
		if b.Quant != nil {
			quantized++
		}
	}
	if quantized != 0 && quantized != len(mm.B) {
		return nil
	}
	plain := quantized == 0
	var from []int
	for i := range k.Bindings {
		from = append(from, i)
	}
	threads := GemvSimds * SimdWidth
	groups := launch.Ceil(launch.V("n"), launch.N(GemvSimds*GemvCols))
	l := launch.Launch{Grid: [3]*launch.Expr{launch.Times(groups, launch.N(threads)), launch.N(1), launch.N(1)}, Threadgroup: [3]int{threads, 1, 1}}
	comment := fmt.Sprintf("m <= %d (decode): the matrix-vector form, %d output columns per simdgroup, %d simdgroups per threadgroup sharing x's m rows staged one K block at a time, each weight read once with 16-byte loads (affine) and dequantized in registers",
		GemvRows, GemvCols, GemvSimds)
	if plain {
		comment = fmt.Sprintf("m <= %d (decode): the matrix-vector form, %d output columns per simdgroup, %d simdgroups per threadgroup sharing A's m rows staged one K block at a time, each lane a 16-byte slice of K, every B element read once, simd_sum per output",
			GemvRows, GemvCols, GemvSimds)
	}
	return &Gemv{Phase: newPhase(k, nil, "gemv", comment, Tile{}, from, nil, l), Simds: GemvSimds, Plain: plain}
}
