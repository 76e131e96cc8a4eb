package cfam

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/ir"
)

// The HIP dialect's matmul: kgen's tiled SIMT GEMM on the IR's plan
// (ir.HIPGemm, its tile and launch), in the templated body with the
// dialect's entry points. Per block one BM×BN tile of the output, the tile
// index the block's x in row-major order; per thread a TM×TN microtile of
// f32 accumulators for each B. The K loop stages A's and every B's BK-deep
// slice in LDS as f32, k-major, zero outside the matrices, each operand
// read along its contiguous axis (coalesced) whatever its layout; then
// every thread multiplies its microtile from LDS with FMAs. The epilogue
// is Metal's (storeElement: the stage function per element with its
// inputs, params and indices), from the thread's registers, for each
// element inside [m, n]. No thread leaves early: every one reaches every
// barrier. The row-owning kernel (hip_gemm_rows.go) and the chain
// (hip_gemm_chain.go) reuse the K loop (hipProduct) and the staging.

// hipGemmDescribe replaces the header's schedule, grid and block size
// (Metal's) with the ROCm plan's.
func hipGemmDescribe(k *ir.Kernel, v *view) {
	mm := k.Matmul()
	if mm.ROCm == nil {
		return
	}
	v.Schedule = mm.ROCm.Describe(k, mm)
	v.Threads = mm.ROCm.Threads()
	v.Grid = strings.Join(k.Grid(ir.ROCm), ", ")
}

// hipGemmBody writes the kernel function's body: one output tile per
// block, the tile index the block's x in row-major order; or with row
// reductions the row-owning kernel (hip_gemm_rows.go).
func (mw *matmulWriter) hipGemmBody() {
	if mw.mm.Chain != nil {
		mw.hipChainBody()
		return
	}
	if mw.mm.Rows != nil {
		mw.hipRowBody()
		return
	}
	w, u := mw.Writer, mw.d.Uint
	mw.hipGemmHead()
	if mw.k.Batched() {
		w.P(mw.d.Threads[GroupXYZ].Local)
		mw.batchPrologue(mw.k.Bindings)
	}
	w.P("const ", u, " kgen_tiles_n = (args.n + BN - 1) / BN;")
	w.P("const ", u, " kgen_row0 = (", mw.tg, " / kgen_tiles_n) * BM, kgen_col0 = (", mw.tg, " % kgen_tiles_n) * BN;")
	mw.hipProduct()
	w.P("// The epilogue at each element of the microtile inside [m, n].")
	mw.hipElements(func() {
		mw.storeElement(func(i int) string { return fmt.Sprintf("kgen_acc%d[kgen_tr][kgen_tc]", i) })
	})
}

// hipGemmHead writes the plan's constants, the LDS slices and the
// thread's place in the tile.
func (mw *matmulWriter) hipGemmHead() {
	g, d, w := mw.mm.ROCm, mw.d, mw.Writer
	u := d.Uint
	w.P("using C = float;")
	w.P(fmt.Sprintf("constexpr %s BM = %d, BN = %d, BK = %d, TM = %d, TN = %d, PAD = %d;", u, g.BM, g.BN, g.BK, g.TM, g.TN, g.Pad))
	w.P("constexpr ", u, " kThreads = ", g.Threads(), ", TX = BN / TN; // TX threads across the tile's columns")
	w.P("static_assert(kThreads == (BM / TM) * TX, \"one thread per microtile\");")
	w.P(d.Threads[LocalID].Local)
	w.P("// The operands' K slices as float, k-major: [kk][row of A] and [kk][column of B].")
	w.P("__shared__ __attribute__((aligned(16))) float kgen_as[BK][BM + PAD]; // ", mw.mm.A.Name, "'s slice")
	for i, b := range mw.mm.B {
		w.P(fmt.Sprintf("__shared__ __attribute__((aligned(16))) float kgen_bs%d[BK][BN + PAD]; // %s's slice", i, b.Name))
	}
	w.P("// This thread's microtile: rows kgen_row0 + TM * kgen_ty + r, columns kgen_col0 + TN * kgen_tx + c.")
	w.P("const ", u, " kgen_tx = ", mw.tid, " % TX, kgen_ty = ", mw.tid, " / TX;")
}

// hipProduct writes the accumulators of the tile at (kgen_row0,
// kgen_col0): zeroed, then the K loop.
func (mw *matmulWriter) hipProduct() {
	w, d := mw.Writer, mw.d
	for i := range mw.mm.B {
		w.P(fmt.Sprintf("float kgen_acc%d[TM][TN] = {};", i))
	}
	w.Block("for ("+d.Uint+" kgen_k0 = 0; kgen_k0 < args.k; kgen_k0 += BK)", func() {
		mw.hipStage(kSlice("kgen_as", "BM", mw.mm.A, "kgen_row0", "args.m", !mw.mm.A.ColMajor))
		for i, b := range mw.mm.B {
			mw.hipStage(kSlice(fmt.Sprintf("kgen_bs%d", i), "BN", b, "kgen_col0", "args.n", b.ColMajor || b.Quant != nil))
		}
		w.P(d.Barrier)
		mw.hipMultiply()
		w.P(d.Barrier)
	})
}

// hipElements writes the loops over the thread's microtile, element
// (kgen_i, kgen_j) at accumulator [kgen_tr][kgen_tc], running body where
// it is inside [m, n]. Rows and columns rise with kgen_tr and kgen_tc, so
// the first out of range ends its loop.
func (mw *matmulWriter) hipElements(body func()) {
	w, d := mw.Writer, mw.d
	w.Block("for ("+d.Uint+" kgen_tr = 0; kgen_tr < TM; ++kgen_tr)", func() {
		w.P("const ", d.Offset, " kgen_i = kgen_row0 + TM * kgen_ty + kgen_tr;")
		w.P("if (kgen_i >= args.m) break;")
		w.Block("for ("+d.Uint+" kgen_tc = 0; kgen_tc < TN; ++kgen_tc)", func() {
			w.P("const ", d.Offset, " kgen_j = kgen_col0 + TN * kgen_tx + kgen_tc;")
			w.P("if (kgen_j >= args.n) break;")
			body()
		})
	})
}

// hipSlice is one operand's slice to stage: tile[kk][x] ([depth][side +
// PAD]) is the operand's logical (origin + x, k0 + kk) for A (x a row) or
// (k0 + kk, origin + x) for a B (x a column), zero outside extent × kExtent.
// A chain's V is a B whose k is the keys (k0 kgen_col0, kExtent args.n)
// and whose x is p's columns.
type hipSlice struct {
	tile, depth, side           string
	o                           ir.Operand
	origin, extent, k0, kExtent string
	// kFastest: the operand's k is its contiguous axis in memory (A
	// row-major [m, k], a B column-major [n, k]); consecutive threads
	// then take consecutive kk, else consecutive x.
	kFastest bool
}

// kSlice is the K loop's slice of operand o: BK deep from kgen_k0.
func kSlice(tile, side string, o ir.Operand, origin, extent string, kFastest bool) hipSlice {
	return hipSlice{tile: tile, depth: "BK", side: side, o: o, origin: origin, extent: extent, k0: "kgen_k0", kExtent: "args.k", kFastest: kFastest}
}

// hipStage writes the staging of slice sl, every thread a strided share.
func (mw *matmulWriter) hipStage(sl hipSlice) {
	u, off, o := mw.d.Uint, mw.d.Offset, sl.o
	x, kk := "("+sl.origin+" + kgen_x)", "("+sl.k0+" + kgen_kk)"
	mw.Block("for ("+u+" kgen_e = "+mw.tid+"; kgen_e < "+sl.depth+" * "+sl.side+"; kgen_e += kThreads)", func() {
		var at string
		if sl.kFastest {
			mw.P("const ", u, " kgen_x = kgen_e / ", sl.depth, ", kgen_kk = kgen_e % ", sl.depth, ";")
			at = "(" + off + ")" + x + " * " + sl.kExtent + " + " + kk
		} else {
			mw.P("const ", u, " kgen_kk = kgen_e / ", sl.side, ", kgen_x = kgen_e % ", sl.side, ";")
			at = "(" + off + ")" + kk + " * " + sl.extent + " + " + x
		}
		if mw.k.Batched() { // a strided view: the stored (row, column) at the view's strides
			b, bx, bk := mw.k.Bindings[o.Binding], "("+off+")"+x, "("+off+")"+kk
			at = mw.elemAt(b, bx, bk, "") // A [m, k]; a column-major B stored [n, k]
			if (o.Binding == mw.mm.A.Binding) == o.ColMajor {
				at = mw.elemAt(b, bk, bx, "") // A stored [k, m]; a B [k, n]
			}
		}
		val := mw.d.ToFloat(o.Name + "[" + at + "]")
		if o.Quant != nil {
			val = mw.quantAt(o, x, kk)
		}
		mw.P(sl.tile, "[kgen_kk][kgen_x] = (", x, " < ", sl.extent, " && ", kk, " < ", sl.kExtent, ") ? ", val, " : 0.0f;")
	})
}

// hipMultiply writes one staged K slice's FMAs: per kk the thread's TM
// values of A and TN of each B from LDS, then TM·TN FMAs per B.
func (mw *matmulWriter) hipMultiply() {
	w := mw.Writer
	w.P("#pragma unroll")
	w.Block("for ("+mw.d.Uint+" kgen_kk = 0; kgen_kk < BK; ++kgen_kk)", func() {
		w.P("float kgen_a[TM];")
		w.P("#pragma unroll")
		w.P("for (", mw.d.Uint, " kgen_tr = 0; kgen_tr < TM; ++kgen_tr) kgen_a[kgen_tr] = kgen_as[kgen_kk][TM * kgen_ty + kgen_tr];")
		for i := range mw.mm.B {
			w.Bare(func() {
				w.P("float kgen_b[TN];")
				w.P("#pragma unroll")
				w.P(fmt.Sprintf("for (%s kgen_tc = 0; kgen_tc < TN; ++kgen_tc) kgen_b[kgen_tc] = kgen_bs%d[kgen_kk][TN * kgen_tx + kgen_tc];", mw.d.Uint, i))
				w.P("#pragma unroll")
				w.P("for (", mw.d.Uint, " kgen_tr = 0; kgen_tr < TM; ++kgen_tr)")
				w.P("#pragma unroll")
				w.P(fmt.Sprintf("    for (%s kgen_tc = 0; kgen_tc < TN; ++kgen_tc) kgen_acc%d[kgen_tr][kgen_tc] = __builtin_fmaf(kgen_a[kgen_tr], kgen_b[kgen_tc], kgen_acc%d[kgen_tr][kgen_tc]);", mw.d.Uint, i, i))
			})
		}
	})
}
