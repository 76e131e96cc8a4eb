package ir

import (
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/spec"
)

// Packed inputs of rowwise kernels: an input declared with `quant:` (the
// matmul B's field, quant.go) is stored exactly as a quantized B is, its
// logical shape [rows, cols] in place of [n, k]: the packed tensor (u32
// words or ggml's blocks, Quant.Width(cols) a row), then for the affine
// format its scales and biases ([rows, cols / group], the variant's dtype,
// <name>_scales and <name>_biases unless named). The tables come after
// every input of the spec, so the spec's inputs keep their indices
// (RefInput, Gather.Input); ElementInputs leaves them out.
//
// A formula reads the input's dequantized value at (row, col): the
// formula checker turns the bare name into the gather name[row, col]
// (gather.go), so the loops load it with scalar reads where each element's
// inputs are loaded, and a subscript name[r, c] reads any element. The
// emitters' readers (emit/cfam's quantElem) compute the value as the
// quantized matmul's do: affine scale·q + bias as one f32 fma, ggml d·q
// (exact in f32).

// checkQuantInput refuses what a packed rowwise input cannot be: any shape
// but [rows, cols], a pinned dtype, a kernel with segments.
func checkQuantInput(s *spec.Spec, in spec.Input, diags *diag.List) bool {
	ok := true
	if in.Dims != nil && Shape(in.Dims).String() != (Shape{"rows", "cols"}).String() {
		diags.Addf(in.DimsPos, "input %s: a quantized input is [rows, cols] (each row's cols values packed in groups along the row, as mx.quantize packs a weight matrix), not %s", in.Name.Name, Shape(in.Dims))
		ok = false
	}
	if in.DType.Pos.Line > 0 {
		diags.Addf(in.DType.Pos, "input %s: a quantized input's storage follows its format (%s); drop dtype", in.Name.Name, in.Quant.Quant)
		ok = false
	}
	if len(s.Segments) > 0 {
		diags.Addf(in.Quant.Pos, "input %s: quantized inputs are not offered with segments", in.Name.Name)
		ok = false
	}
	return ok
}

// quantTables are the scales and biases of the spec's affine inputs, in
// input order, from buffer index first.
func quantTables(s *spec.Spec, first int) []Binding {
	var out []Binding
	for _, in := range s.Inputs {
		if in.Quant != nil {
			out = append(out, tableBindings(in.Quant, Shape{"rows", "cols"}, first+len(out))...)
		}
	}
	return out
}

// refuseQuantInputs refuses `quant:` on the inputs of a kind that reads no
// packed input (elementwise kernels, matmul epilogues).
func refuseQuantInputs(s *spec.Spec, diags *diag.List, kind string) {
	for _, in := range s.Inputs {
		if in.Quant != nil {
			diags.Addf(in.Quant.Pos, "input %s: %s cannot read a quantized input; quant is for a rowwise kernel's [rows, cols] inputs and a matmul's b", in.Name.Name, kind)
		}
	}
}

// QuantTables are the binding indices of packed input binding in's scales
// and biases, -1 for a ggml input (quantTables' order: in input order,
// after every input).
func (k *Kernel) QuantTables(in int) (scales, biases int) {
	if q := k.Bindings[in].Quant; q == nil || !q.HasTables() || k.Bindings[in].Table {
		return -1, -1
	}
	nth := 0
	for _, b := range k.Bindings[:in] {
		if b.Role == Input && b.Quant != nil && !b.Table && b.Quant.HasTables() {
			nth++
		}
	}
	var tables []int
	for i, b := range k.Bindings {
		if b.Role == Input && b.Table && !b.Operand {
			tables = append(tables, i)
		}
	}
	return tables[2*nth], tables[2*nth+1]
}

// IsPacked reports whether binding b is a packed rowwise input or one of
// its tables: read whole, by the gathers of its dequantized values, never
// as a row of cols elements.
func (b Binding) IsPacked() bool { return b.Quant != nil && !b.Operand }

// quantGather is the dequantized value of packed input in at (r, j), its
// tensors given whole (float64 values as Reference64 takes them), and the
// bound on the kernels' rounding of it: u·(|scale·q| + |bias|) for affine
// (one f32 fma, plus f32's subnormal spacing), 0 for ggml.
func (e *rowEval) quantGather(in, r, j int) (v, err float64) {
	b := e.k.Bindings[in]
	tensor := func(i int) []float64 {
		if i < len(e.whole) && e.whole[i] != nil {
			return e.whole[i]
		}
		return e.in[i]
	}
	var s, bs []float64
	if si, bi := e.k.QuantTables(in); si >= 0 {
		s, bs = tensor(si), tensor(bi)
	}
	v, mag := b.Quant.At64(tensor(in), s, bs, e.cols, r, j)
	if !b.Quant.HasTables() {
		return v, 0
	}
	return v, 0x1p-24*mag + 0x1p-149
}
