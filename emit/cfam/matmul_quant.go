package cfam

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgenrt"
)

// Quantized Bs (ir/quant.go). The tiled kernels stage a quantized B like
// any other, one element per thread per step, dequantized as it is read
// (quantAt); the matrix-vector phase (gemvBody) reads whole 32-value chunks
// of packed words with vector loads.

// quantView is the quant template block's view: the formats kernel k reads.
type quantView struct{ Affine, Q4_0, Q8_0 bool }

// quantHelpers is the quant block for a kernel with quantized Bs.
func quantHelpers(k *ir.Kernel) []helper {
	if !k.Quantized() {
		return nil
	}
	var qs []*kgenrt.Quant
	for _, b := range k.Matmul().B {
		qs = append(qs, b.Quant)
	}
	return []helper{{name: "quant", data: quantViewOf(qs)}}
}

// packedHelpers is the quant_elem block (one value's readers) for a
// rowwise kernel with packed inputs (ir/quant_rows.go).
func packedHelpers(k *ir.Kernel) []helper {
	var qs []*kgenrt.Quant
	for _, b := range k.BindingsOf(ir.Input) {
		if b.IsPacked() && !b.Table {
			qs = append(qs, b.Quant)
		}
	}
	if len(qs) == 0 {
		return nil
	}
	return []helper{{name: "quant_elem", data: quantViewOf(qs)}}
}

// quantRow is the pointer to row n (one output column's k values) of
// quantized operand o.
func quantRow(o ir.Operand, n string) string {
	return packedRow(*o.Quant, o.Name, n, "args.k")
}

// packedRow is the pointer to row n of packed tensor name, whose rows hold
// width values (a size field's spelling).
func packedRow(q kgenrt.Quant, name, n, width string) string {
	unit := q.BlockBytes() // per 32 values: a ggml block's bytes, or affine's Bits words
	if q.Format == kgenrt.Affine {
		unit = q.Bits
	}
	return fmt.Sprintf("(%s + %s * (%s / 32u * %du))", name, n, width, unit)
}

// quantAt is the f32 of logical element (kk, n) of quantized operand o
// (stored [n, k], its k contiguous): scale·q + bias as one fma (affine),
// or the block's exact d·q, read by the dialect's quant template (Metal's
// staging and HIP's GEMM both call it; the conversions are the dialect's).
func (mw *matmulWriter) quantAt(o ir.Operand, n, kk string) string {
	t := packedTensor{q: *o.Quant, name: o.Name, width: "args.k"}
	if o.Scales >= 0 {
		t.scales, t.biases = mw.k.Bindings[o.Scales].Name, mw.k.Bindings[o.Biases].Name
	}
	return quantElem(mw.d, t, n, kk)
}

// packedTensor is what quantElem reads: a packed tensor's format, name,
// tables ("" for ggml) and its rows' width in values.
type packedTensor struct {
	q                           kgenrt.Quant
	name, scales, biases, width string
}

// quantElem is the f32 of element (n, kk) of packed tensor t, in dialect
// d: scale·q + bias as one fma (affine), or the block's exact d·q. The
// quantized matmuls and the packed rowwise inputs (ir/quant_rows.go) read
// their values through it, so both round them the same way.
func quantElem(d *Dialect, t packedTensor, n, kk string) string {
	row := packedRow(t.q, t.name, n, t.width)
	switch t.q.Format {
	case kgenrt.Q4_0:
		return fmt.Sprintf("kgen_q4_0(%s, %s)", row, kk)
	case kgenrt.Q8_0:
		return fmt.Sprintf("kgen_q8_0(%s, %s)", row, kk)
	}
	g := fmt.Sprintf("%s * (%s / %du) + %s / %du", n, t.width, t.q.Group, kk, t.q.Group)
	return fmt.Sprintf("%s(%s, %s, %s)", d.FloatFunc("fma"), d.ToFloat(t.scales+"["+g+"]"),
		d.FloatCast(fmt.Sprintf("kgen_affine_code(%s, %s, %du)", row, kk, t.q.Bits)), d.ToFloat(t.biases+"["+g+"]"))
}

// quantView is the view of the packed formats a list of tensors reads.
func quantViewOf(qs []*kgenrt.Quant) quantView {
	var v quantView
	for _, q := range qs {
		if q != nil {
			v.Affine = v.Affine || q.Format == kgenrt.Affine
			v.Q4_0 = v.Q4_0 || q.Format == kgenrt.Q4_0
			v.Q8_0 = v.Q8_0 || q.Format == kgenrt.Q8_0
		}
	}
	return v
}

// gemvBody writes the matrix-vector phase (ir.Gemv) for m <= ir.GemvRows:
// each simdgroup owns GemvCols output columns for every row; its lanes
// walk k in 32-value chunks, lane l taking chunks l, l + 32, …: per chunk
// and column the packed codes are loaded once (affine: 16-byte vector
// loads when bits is a multiple of 4; ggml: the block's 2-byte words),
// dequantized to 32 floats with the group's scale and bias loaded once, and
// multiplied with each row of x, summed in f32. A simd_sum per (row,
// column) then gives every lane the totals, and lane l runs the epilogue
// for row l % 8 of column l / 8.
func (mw *matmulWriter) gemvBody(g ir.Gemv) {
	if g.Plain {
		mw.plainGemvBody(g)
		return
	}
	w, mm, tid, tg := mw.Writer, mw.mm, mw.tid, mw.tg
	w.P("using C = float;")
	w.P(fmt.Sprintf("constexpr uint ROWS = %d, COLS = %d, SIMDS = %d;", ir.GemvRows, ir.GemvCols, g.Simds))
	w.P("const uint kgen_lane = ", tid, " % 32u, kgen_col0 = (", tg, " * SIMDS + ", tid, " / 32u) * COLS;")
	for i := range mm.B {
		w.P(fmt.Sprintf("float kgen_acc%d[COLS][ROWS] = {};", i))
	}
	w.P("float kgen_w[32];")
	ta := mw.d.TypeName(mw.k.Bindings[mm.A.Binding].DType)
	w.P(fmt.Sprintf("constexpr uint KV = %d / sizeof(%s), KB = 32u * 32u; // 16 bytes of A; the K block, a 32-value chunk per lane", ir.StageVecBytes, ta))
	w.P("// A's rows < m of one K block, [ROWS][KB], shared by the threadgroup's simdgroups (rows past m are never staged nor read).")
	w.P(fmt.Sprintf("threadgroup uint4 kgen_xs_raw[ROWS * KB * sizeof(%s) / 16];", ta))
	w.P(fmt.Sprintf("threadgroup %s* kgen_xs = (threadgroup %s*)kgen_xs_raw;", ta, ta))
	if !mm.A.ColMajor {
		w.P("const bool kgen_va = args.k % KV == 0; // A's rows of whole 16-byte chunks")
	}
	w.Block("for (uint kgen_b0 = 0; kgen_b0 < args.k; kgen_b0 += KB)", func() {
		mw.gemvStageA(ta, "kgen_b0")
		w.P("threadgroup_barrier(mem_flags::mem_threadgroup);")
		w.P("const uint kgen_k0 = kgen_b0 + kgen_lane * 32u; // this lane's chunk")
		w.Block("if (kgen_k0 < args.k)", func() {
			w.Block("for (uint kgen_c = 0; kgen_c < COLS; ++kgen_c)", func() {
				w.P("const uint kgen_j = min(kgen_col0 + kgen_c, args.n - 1u); // a column past n repeats the last; never stored")
				for i, b := range mm.B {
					w.P("// ", b.Acc, ": ", ir.QuantText(mw.k, b))
					w.P("{")
					w.Indent(func() { mw.gemvRows(i, b) })
					w.P("}")
				}
			})
		})
		w.P("threadgroup_barrier(mem_flags::mem_threadgroup);")
	})
	mw.gemvStore()
}

// gemvRows loads one chunk of B i and adds its products with every row of
// x (staged in threadgroup memory) to the lane's sums.
func (mw *matmulWriter) gemvRows(i int, b ir.Operand) {
	w := mw.Writer
	mw.gemvChunk(b)
	w.Block("for (uint kgen_i = 0; kgen_i < ROWS; ++kgen_i)", func() {
		w.Block("if (kgen_i < args.m)", func() {
			w.P("float kgen_s = 0.0f;")
			w.Block("for (uint kgen_e = 0; kgen_e < 32u; ++kgen_e)", func() {
				w.P("kgen_s = ", mw.d.FloatFunc("fma"), "(float(kgen_xs[kgen_i * KB + kgen_lane * 32u + kgen_e]), kgen_w[kgen_e], kgen_s);")
			})
			w.P(fmt.Sprintf("kgen_acc%d[kgen_c][kgen_i] += kgen_s;", i))
		})
	})
}

// gemvStore reduces the lanes' sums and runs the epilogue, lane l for row
// l % 8 of column l / 8.
func (mw *matmulWriter) gemvStore() {
	w, mm := mw.Writer, mw.mm
	w.P("// Every lane gets each (row, column) total (rows past m have none: a uniform bound); lane l keeps row l % ROWS of column l / ROWS.")
	for i := range mm.B {
		w.P(fmt.Sprintf("float kgen_t%d = 0.0f;", i))
		w.Block("for (uint kgen_c = 0; kgen_c < COLS; ++kgen_c)", func() {
			w.Block("for (uint kgen_i = 0; kgen_i < min(ROWS, args.m); ++kgen_i)", func() {
				w.P(fmt.Sprintf("const float kgen_v = simd_sum(kgen_acc%d[kgen_c][kgen_i]);", i))
				w.Block("if (kgen_lane == kgen_c * ROWS + kgen_i)", func() { w.P(fmt.Sprintf("kgen_t%d = kgen_v;", i)) })
			})
		})
	}
	w.P("const uint kgen_i = kgen_lane % ROWS, kgen_j = kgen_col0 + kgen_lane / ROWS;")
	w.Block("if (kgen_i < args.m && kgen_j < args.n)", func() {
		mw.storeElement(func(i int) string { return fmt.Sprintf("kgen_t%d", i) })
	})
}

// gemvChunk loads the 32 values of quantized operand o at row kgen_j,
// k = kgen_k0 … kgen_k0 + 31, into kgen_w as f32.
func (mw *matmulWriter) gemvChunk(o ir.Operand) {
	w, q, row := mw.Writer, o.Quant, quantRow(o, "kgen_j")
	switch q.Format {
	case kgenrt.Affine:
		g := fmt.Sprintf("kgen_j * (args.k / %du) + kgen_k0 / %du", q.Group, q.Group)
		scales, biases := mw.k.Bindings[o.Scales].Name, mw.k.Bindings[o.Biases].Name
		w.P(fmt.Sprintf("const float kgen_scale = float(%s[%s]), kgen_bias = float(%s[%s]);", scales, g, biases, g))
		w.P(fmt.Sprintf("uint kgen_words[%d]; // the chunk's %d-bit codes: %d words", q.Bits, q.Bits, q.Bits))
		w.P(fmt.Sprintf("device const uint* kgen_p = %s + kgen_k0 / 32u * %du;", row, q.Bits))
		switch {
		case q.Bits%4 == 0:
			w.Block(fmt.Sprintf("for (uint kgen_v = 0; kgen_v < %du; ++kgen_v)", q.Bits/4), func() {
				w.P("const uint4 kgen_x = ((device const uint4*)kgen_p)[kgen_v]; // 16 bytes")
				w.P("kgen_words[4u * kgen_v] = kgen_x.x, kgen_words[4u * kgen_v + 1u] = kgen_x.y, kgen_words[4u * kgen_v + 2u] = kgen_x.z, kgen_words[4u * kgen_v + 3u] = kgen_x.w;")
			})
		default:
			w.Block(fmt.Sprintf("for (uint kgen_v = 0; kgen_v < %du; ++kgen_v)", q.Bits), func() { w.P("kgen_words[kgen_v] = kgen_p[kgen_v];") })
		}
		w.P(fmt.Sprintf("kgen_affine_unpack32<%du>(kgen_words, kgen_w);", q.Bits))
		w.Block("for (uint kgen_e = 0; kgen_e < 32u; ++kgen_e)", func() {
			w.P("kgen_w[kgen_e] = ", mw.d.FloatFunc("fma"), "(kgen_scale, kgen_w[kgen_e], kgen_bias);")
		})
	case kgenrt.Q4_0:
		w.P("device const uchar* kgen_blk = ", row, " + kgen_k0 / 32u * 18u;")
		w.P("device const ushort* kgen_h = (device const ushort*)kgen_blk; // 2-byte words: blocks are 2-byte aligned")
		w.P("const float kgen_d = kgen_ggml_d(kgen_blk);")
		w.Block("for (uint kgen_v = 0; kgen_v < 8u; ++kgen_v)", func() {
			w.P("const uint kgen_x = kgen_h[1u + kgen_v]; // bytes 2v and 2v + 1 of the codes")
			w.P("kgen_w[2u * kgen_v] = kgen_d * (float(kgen_x & 15u) - 8.0f);")
			w.P("kgen_w[2u * kgen_v + 1u] = kgen_d * (float((kgen_x >> 8) & 15u) - 8.0f);")
			w.P("kgen_w[2u * kgen_v + 16u] = kgen_d * (float((kgen_x >> 4) & 15u) - 8.0f);")
			w.P("kgen_w[2u * kgen_v + 17u] = kgen_d * (float(kgen_x >> 12) - 8.0f);")
		})
	case kgenrt.Q8_0:
		w.P("device const uchar* kgen_blk = ", row, " + kgen_k0 / 32u * 34u;")
		w.P("device const ushort* kgen_h = (device const ushort*)kgen_blk; // 2-byte words: blocks are 2-byte aligned")
		w.P("const float kgen_d = kgen_ggml_d(kgen_blk);")
		w.Block("for (uint kgen_v = 0; kgen_v < 16u; ++kgen_v)", func() {
			w.P("const ushort kgen_x = kgen_h[1u + kgen_v];")
			w.P("kgen_w[2u * kgen_v] = kgen_d * float(as_type<char>(uchar(kgen_x & 255u)));")
			w.P("kgen_w[2u * kgen_v + 1u] = kgen_d * float(as_type<char>(uchar(kgen_x >> 8)));")
		})
	}
}
