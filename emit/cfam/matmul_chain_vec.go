package cfam

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
)

// chainVec writes the chain's row-vector form (ir.VecRows) over keys
// [from, to): query row kgen_i is the threadgroup's; simdgroup s scores
// keys from + s, from + s + S, …, lane l holding q[l + 32t] and reading
// k[l + 32t] of each key from device memory, the score a simd_sum; each
// simdgroup keeps its running max, sum and output columns l + 32t in
// registers; then the simdgroups' partials meet once in threadgroup memory
// (kgen_os for the outputs, kgen_ps for the maxima and sums), rescaled to
// their common max kgen_mx (combineMax, combineSums: the split combine's
// rule), and finish writes each output column c (kgen_c) from kgen_osum
// (the row's weighted sum at that max) and kgen_lsum.
func (mw *matmulWriter) chainVec(from, to string, finish func()) {
	w, mm := mw.Writer, mw.mm
	a, b, v := mm.A, mm.B[0], mm.Chain.Then
	w.P("constexpr uint S = kThreads / 32, PL = PMAX / 32; // simdgroups; columns per lane")
	w.P("const uint kgen_i = ", mw.tg, ";")
	w.P("float kgen_qv[PL], kgen_ov[PL]; // q's columns and this simdgroup's output columns kgen_lane + 32t")
	w.Block("for (uint kgen_t = 0; kgen_t < PL; ++kgen_t)", func() {
		w.P("const uint kgen_c = kgen_lane + 32 * kgen_t;")
		w.P("kgen_qv[kgen_t] = kgen_i < args.m && kgen_c < args.k ? ", mw.operandValue(a, "kgen_i", "kgen_c", "args.m", "args.k"), " : 0.0f;")
		w.P("kgen_ov[kgen_t] = 0.0f;")
	})
	w.P("float kgen_vm = -INFINITY, kgen_vl = 0.0f; // this simdgroup's running max and sum")
	skip := mm.Chain.Skip
	w.Block(fmt.Sprintf("for (uint kgen_j = %s + %s; kgen_i < args.m && kgen_j < %s; kgen_j += S)", from, mw.simd, to), func() {
		if skip != nil {
			w.P("// A key the score's mask hides from this row weighs 0 whatever acc is (ir.BlockSkip over one row and key).")
			w.P("const long kgen_rlo = long(kgen_i), kgen_rhi = kgen_rlo, kgen_clo = long(kgen_j), kgen_chi = kgen_clo;")
			w.Block("if ("+skipTest(skip)+")", func() { w.P("continue;") })
		}
		w.P("float kgen_d = 0.0f;")
		mw.laneColumns("args.k", "kgen_d = fma(kgen_qv[kgen_t], "+mw.operandValue(b, "kgen_c", "kgen_j", "args.k", "args.n")+", kgen_d);")
		w.P("const float kgen_acc = simd_sum(kgen_d);")
		w.P("C kgen_s;")
		w.P(mw.chainCall(mw.k.Stages()[0], "kgen_acc", "kgen_s"))
		w.P("const float kgen_mnew = fmax(kgen_vm, kgen_s);")
		w.P("// While every score so far is -INFINITY the weights are 0 and nothing rescales.")
		w.P("const bool kgen_none = kgen_mnew == -INFINITY;")
		w.P("const float kgen_f = kgen_none ? 1.0f : kgen_math::exp(kgen_vm - kgen_mnew);")
		w.P("const float kgen_w = kgen_none ? 0.0f : kgen_math::exp(kgen_s - kgen_mnew);")
		w.P("kgen_vl = kgen_vl * kgen_f + kgen_w;")
		w.P("kgen_vm = kgen_mnew;")
		mw.laneColumns("args.p", "kgen_ov[kgen_t] = fma(kgen_w, "+mw.operandValue(v, "kgen_j", "kgen_c", "args.n", "args.p")+", kgen_ov[kgen_t] * kgen_f);")
	})
	w.P("// The simdgroups' partials, then each output column's combine.")
	mw.laneColumns("args.p", "kgen_os["+mw.simd+" * PMAX + kgen_c] = kgen_ov[kgen_t];")
	w.Block("if (kgen_lane == 0)", func() {
		w.P("kgen_ps[", mw.simd, "] = kgen_vm;")
		w.P("kgen_ps[S + ", mw.simd, "] = kgen_vl;")
	})
	w.P("threadgroup_barrier(mem_flags::mem_threadgroup);")
	w.Block("if (kgen_i >= args.m)", func() { w.P("return; // no barrier follows") })
	const loop = "for (uint kgen_q = 0; kgen_q < S; ++kgen_q)"
	mw.combineMax(loop, "kgen_ps[kgen_q]")
	w.Block("for (uint kgen_c = "+mw.tid+"; kgen_c < args.p; kgen_c += kThreads)", func() {
		mw.combineSums(loop, "// A simdgroup whose every key was masked (max -INFINITY) weighs 0.",
			"kgen_ps[kgen_q]", "kgen_os[kgen_q * PMAX + kgen_c]", "kgen_ps[S + kgen_q]")
		finish()
	})
}

// combineMax writes kgen_mx, the largest of the partial maxima at max over
// loop's partials (a decode's splits, a row's simdgroups).
func (mw *matmulWriter) combineMax(loop, max string) {
	mw.P("float kgen_mx = -INFINITY;")
	mw.Block(loop, func() { mw.P("kgen_mx = fmax(kgen_mx, ", max, ");") })
}

// combineSums writes kgen_osum and kgen_lsum: loop's partial outputs out
// and sums sum, each rescaled from its max to kgen_mx (a partial whose
// every key was masked, max -INFINITY, weighing 0); first is the loop
// body's first line (an index or a comment).
func (mw *matmulWriter) combineSums(loop, first, max, out, sum string) {
	mw.P("float kgen_osum = 0.0f, kgen_lsum = 0.0f;")
	mw.Block(loop, func() {
		mw.P(first)
		mw.P("const float kgen_f = kgen_mx == -INFINITY ? 0.0f : kgen_math::exp(", max, " - kgen_mx);")
		mw.P("kgen_osum += ", out, " * kgen_f;")
		mw.P("kgen_lsum += ", sum, " * kgen_f;")
	})
}

// laneColumns writes stmt for each of this lane's columns kgen_c =
// kgen_lane + 32t (register slot kgen_t) below limit.
func (mw *matmulWriter) laneColumns(limit, stmt string) {
	mw.Block("for (uint kgen_t = 0; kgen_t < PL; ++kgen_t)", func() {
		mw.P("const uint kgen_c = kgen_lane + 32 * kgen_t;")
		mw.Block("if (kgen_c < "+limit+")", func() { mw.P(stmt) })
	})
}

// chainVecWrite is the whole chain's finish of the row-vector form: the
// write stage of element (kgen_i, kgen_c).
func (mw *matmulWriter) chainVecWrite() {
	mw.P("const C ", ir.ReductionName(0), " = kgen_lsum;")
	mw.chainStore("kgen_osum")
}

// decodeVecPartials is the decode part's finish of the row-vector form:
// the row's partial output, max and sum into the workspaces, as the tiled
// part writes them.
func (mw *matmulWriter) decodeVecPartials() {
	g, ws := mw.d.Threads[GroupXYZ].Expr, mw.mm.Decode.Space
	mw.P("const uint kgen_w = (", g, ".z * args.", ir.SplitsField, " + ", g, ".y) * args.m + kgen_i;")
	mw.P(ws[0].Name, "[kgen_w * args.p + kgen_c] = kgen_osum;")
	mw.Block("if (kgen_c == 0)", func() {
		mw.P(ws[1].Name, "[kgen_w] = kgen_mx;")
		mw.P(ws[2].Name, "[kgen_w] = kgen_lsum;")
	})
}
