package cfam

import (
	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/ir"
)

// hipChainBody writes the HIP GEMM's chain (ir.Chain, flash attention's
// shape): a block owns BM query rows. For each BN-wide chunk of p's
// columns it streams every block of BN keys: the block's acc (the tiled
// kernel's K loop), the scores (the score stage per element, -INFINITY
// outside [m, n]), and per row the online softmax of Metal's chain: the
// block max and the weights' sum by butterflies over the row's TX threads,
// the new running max, the rescale factor exp(m_old - m_new) of O and l,
// the weights exp(s - m_new). The weights go to LDS with V's block of the
// chunk's columns, and each thread adds its TM×TN microtile of W·V to its
// f32 registers. Last the write stage per element. The scores are
// recomputed per chunk of p (once for p ≤ BN) instead of keeping an O strip
// of every column in LDS, so any p takes one launch. Every thread reaches
// every barrier and shuffle; a row whose every key is masked keeps weights
// 0 and writes 0/0, as Metal's.
func (mw *matmulWriter) hipChainBody() {
	w, u, ch := mw.Writer, mw.d.Uint, mw.mm.Chain
	mw.hipGemmHead()
	if mw.k.Batched() {
		w.P(mw.d.Threads[GroupXYZ].Local)
		mw.batchPrologue(mw.k.Bindings)
	}
	w.P("__shared__ __attribute__((aligned(16))) float kgen_ws[BM][BN + PAD]; // the block's weights, [row][key]")
	w.P("__shared__ __attribute__((aligned(16))) float kgen_vs[BN][BN + PAD]; // ", ch.Then.Name, "'s block, [key][column of the chunk]")
	w.P("const ", u, " kgen_row0 = ", mw.tg, " * BM; // the block's query rows")
	mw.paramLocals()
	if ch.Skip != nil {
		w.P("// The block's rows, for the mask test (ir.BlockSkip).")
		w.P("const long kgen_rlo = long(kgen_row0), kgen_rhi = long(min(args.m, kgen_row0 + BM)) - 1;")
	}
	w.Block("for ("+u+" kgen_c0 = 0; kgen_c0 < args.p; kgen_c0 += BN)", func() {
		w.P("float kgen_m[TM], kgen_l[TM], kgen_o[TM][TN] = {}; // per row: the running max and sum; this thread's part of O")
		w.Block("for ("+u+" kgen_tr = 0; kgen_tr < TM; ++kgen_tr)", func() {
			w.P("kgen_m[kgen_tr] = -__builtin_inff();")
			w.P("kgen_l[kgen_tr] = 0.0f;")
		})
		w.Block("for ("+u+" kgen_col0 = 0; kgen_col0 < args.n; kgen_col0 += BN)", func() {
			if ch.Skip != nil {
				w.P("// Every score of this block is -INFINITY whatever acc is (the mask, proved over the")
				w.P("// block's rows and columns): its weights would all be 0, so the block is left out.")
				w.P("const long kgen_clo = long(kgen_col0), kgen_chi = long(min(args.n, kgen_col0 + BN)) - 1;")
				w.Block("if ("+skipTest(ch.Skip)+")", func() { w.P("continue;") })
			}
			mw.hipProduct()
			mw.hipChainSoftmax()
			mw.hipStage(hipSlice{tile: "kgen_vs", depth: "BN", side: "BN", o: ch.Then, origin: "kgen_c0", extent: "args.p",
				k0: "kgen_col0", kExtent: "args.n", kFastest: ch.Then.ColMajor})
			w.P(mw.d.Barrier)
			mw.hipChainAccumulate()
			w.P(mw.d.Barrier)
		})
		w.P("// The outputs of the chunk's columns.")
		w.Block("for ("+u+" kgen_tr = 0; kgen_tr < TM; ++kgen_tr)", func() {
			w.P("const ", mw.d.Offset, " kgen_i = kgen_row0 + TM * kgen_ty + kgen_tr;")
			w.P("if (kgen_i >= args.m) break;")
			w.P("const C ", ir.ReductionName(0), " = kgen_l[kgen_tr];")
			w.Block("for ("+u+" kgen_tc = 0; kgen_tc < TN; ++kgen_tc)", func() {
				w.P("const ", mw.d.Offset, " kgen_c = kgen_c0 + TN * kgen_tx + kgen_tc;")
				w.P("if (kgen_c >= args.p) break;")
				mw.chainStore("kgen_o[kgen_tr][kgen_tc]")
			})
		})
	})
}

// hipChainSoftmax writes one key block's online softmax step for the
// thread's rows and its weights into kgen_ws.
func (mw *matmulWriter) hipChainSoftmax() {
	w, u := mw.Writer, mw.d.Uint
	st := mw.k.Stages()[0]
	exp := mw.hipExp()
	w.Block("for ("+u+" kgen_tr = 0; kgen_tr < TM; ++kgen_tr)", func() {
		w.P("const ", mw.d.Offset, " kgen_i = kgen_row0 + TM * kgen_ty + kgen_tr;")
		w.P("float kgen_s[TN], kgen_mb = -__builtin_inff();")
		w.Block("for ("+u+" kgen_tc = 0; kgen_tc < TN; ++kgen_tc)", func() {
			w.P("const ", mw.d.Offset, " kgen_j = kgen_col0 + TN * kgen_tx + kgen_tc;")
			w.P("C kgen_sv = -__builtin_inff();")
			w.Block("if (kgen_i < args.m && kgen_j < args.n)", func() {
				w.P(mw.chainCall(st, "kgen_acc0[kgen_tr][kgen_tc]", "kgen_sv"))
			})
			w.P("kgen_s[kgen_tc] = kgen_sv;")
			w.P("kgen_mb = __builtin_fmaxf(kgen_mb, kgen_sv);")
		})
		w.P("for (", mw.d.LaneOffset, " kgen_o = TX / 2; kgen_o > 0; kgen_o /= 2) kgen_mb = __builtin_fmaxf(kgen_mb, ", mw.d.ShuffleXor("kgen_mb", "kgen_o"), ");")
		w.P("const float kgen_mnew = __builtin_fmaxf(kgen_m[kgen_tr], kgen_mb);")
		w.P("// While every score so far is -INFINITY the weights are 0 and nothing rescales.")
		w.P("const bool kgen_none = kgen_mnew == -__builtin_inff();")
		w.P("const float kgen_f = kgen_none ? 1.0f : ", exp, "(kgen_m[kgen_tr] - kgen_mnew);")
		w.P("float kgen_sum = 0.0f;")
		w.Block("for ("+u+" kgen_tc = 0; kgen_tc < TN; ++kgen_tc)", func() {
			w.P("const float kgen_w = kgen_none ? 0.0f : ", exp, "(kgen_s[kgen_tc] - kgen_mnew);")
			w.P("kgen_ws[TM * kgen_ty + kgen_tr][TN * kgen_tx + kgen_tc] = kgen_w;")
			w.P("kgen_sum += kgen_w;")
			w.P("kgen_o[kgen_tr][kgen_tc] *= kgen_f;")
		})
		w.P("for (", mw.d.LaneOffset, " kgen_o = TX / 2; kgen_o > 0; kgen_o /= 2) kgen_sum += ", mw.d.ShuffleXor("kgen_sum", "kgen_o"), ";")
		w.P("kgen_l[kgen_tr] = kgen_l[kgen_tr] * kgen_f + kgen_sum;")
		w.P("kgen_m[kgen_tr] = kgen_mnew;")
	})
}

// hipChainAccumulate writes O += W·V over the block's BN keys: per key the
// thread's TM weights and TN values of V from LDS.
func (mw *matmulWriter) hipChainAccumulate() {
	w, u := mw.Writer, mw.d.Uint
	w.P("#pragma unroll 4")
	w.Block("for ("+u+" kgen_t = 0; kgen_t < BN; ++kgen_t)", func() {
		w.P("float kgen_a[TM], kgen_b[TN];")
		w.P("for (", u, " kgen_tr = 0; kgen_tr < TM; ++kgen_tr) kgen_a[kgen_tr] = kgen_ws[TM * kgen_ty + kgen_tr][kgen_t];")
		w.P("for (", u, " kgen_tc = 0; kgen_tc < TN; ++kgen_tc) kgen_b[kgen_tc] = kgen_vs[kgen_t][TN * kgen_tx + kgen_tc];")
		w.P("for (", u, " kgen_tr = 0; kgen_tr < TM; ++kgen_tr)")
		w.P("    for (", u, " kgen_tc = 0; kgen_tc < TN; ++kgen_tc) kgen_o[kgen_tr][kgen_tc] = __builtin_fmaf(kgen_a[kgen_tr], kgen_b[kgen_tc], kgen_o[kgen_tr][kgen_tc]);")
	})
}

// hipExp is exp as the kernel's math mode spells it in HIP (the funcs
// table's CUDA column through hipSpell): the weights' exp, whose prelude
// block the weights let already brings.
func (mw *matmulWriter) hipExp() string {
	f, _ := funcs.Lookup("exp")
	return mw.d.Spell(f, mw.k.Math).Name
}
