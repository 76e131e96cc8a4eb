package cfam

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
)

// cudaDecodeEntries are the CUDA chain's flash-decoding phases (ir.Decode,
// launched by the CUDA port when kgen_splits > 1): the part, the chain
// kernel over one split's keys (cudaChain with part), and the combine.
// The workspace rows and the combine's arithmetic are Metal's
// (decodePartBody, decodeCombineBody), so parity judges both ports by the
// same order.
func cudaDecodeEntries(k *ir.Kernel, d *Dialect) []entry {
	dec := k.Matmul().Decode
	kernelOf := func(p *ir.Phase) *ir.Kernel {
		pk := *k
		pk.Bindings, pk.Variants = p.Bindings, p.Variants
		return &pk
	}
	prologue := func(mw *matmulWriter, p *ir.Phase) {
		for _, ix := range []ThreadIndex{LocalID, GroupXYZ} {
			if l := d.Threads[ix].Local; l != "" {
				mw.P(l)
			}
		}
		mw.batchPrologue(p.Bindings)
	}
	c := k.Matmul().Chain.CUDA
	partComment := fmt.Sprintf("launch 1 (flash decoding, kgen_splits > 1): block x is split x %% kgen_splits of the %d rows x / kgen_splits, the partial output, max and sum into the workspaces", c.BM)
	return []entry{
		{name: dec.Part.Entry, kernel: kernelOf(&dec.Part), threads: dec.Part.CUDA.Threadgroup[0], comment: partComment,
			body: func(w *Writer) {
				mw := newMatmulWriter(w, k, d)
				prologue(mw, &dec.Part)
				mw.cudaChain(true)
			}},
		{name: dec.Combine.Entry, kernel: kernelOf(&dec.Combine), threads: dec.Combine.CUDA.Threadgroup[0], comment: dec.Combine.Comment,
			body: func(w *Writer) {
				mw := newMatmulWriter(w, k, d)
				prologue(mw, &dec.Combine)
				mw.cudaDecodeCombine()
			}},
	}
}

// partRow is the workspace row of query row kgen_i in this block's split:
// (batch element · kgen_splits + split) · m + row, as Metal's part.
func (mw *matmulWriter) partRow() string {
	return "((unsigned long long)" + mw.d.Threads[GroupXYZ].Expr + ".z * args." + ir.SplitsField + " + kgen_split) * args.m + kgen_i"
}

// simtPartials writes the f32 part's partials: lane j's output columns of
// each of the warp's rows, and per row (lane 0, first pass) its max and
// sum, which the butterflies left the same in every lane.
func (mw *matmulWriter) simtPartials() {
	w, ws := mw.Writer, mw.mm.Decode.Space
	w.Block("for (unsigned kgen_r = 0; kgen_r < 16; ++kgen_r)", func() {
		w.P("const unsigned kgen_i = kgen_row0 + kgen_wr + kgen_r;")
		w.Block("if (kgen_i < kgen_mend)", func() {
			w.P("#pragma unroll")
			w.Block("for (unsigned kgen_cc = 0; kgen_cc < D / 32; ++kgen_cc)", func() {
				w.P("const unsigned kgen_c = kgen_p0 + kgen_lane + 32 * kgen_cc;")
				w.Block("if (kgen_c < args.p)", func() {
					w.P(ws[0].Name, "[(", mw.partRow(), ") * args.p + kgen_c] = kgen_o[kgen_r][kgen_cc];")
				})
			})
			w.Block("if (kgen_p0 == 0 && kgen_lane == 0)", func() {
				w.P(ws[1].Name, "[", mw.partRow(), "] = kgen_mx[kgen_r];")
				w.P(ws[2].Name, "[", mw.partRow(), "] = kgen_l[kgen_r];")
			})
		})
	})
}

// cudaDecodeCombine writes the combine: per output element (thread x of
// the grid, batch element z), M = the splits' largest max, each split
// weighted by exp(M_s − M) (0 when every split's keys were masked: M is
// -inf), O and l summed in split order, then the chain's write stage.
func (mw *matmulWriter) cudaDecodeCombine() {
	w, g := mw.Writer, mw.d.Threads[GroupXYZ].Expr
	ws := mw.mm.Decode.Space
	exp := mw.expSpelling()
	w.P("using C = float;")
	w.P("const float kgen_ninf = ", mw.d.NegInf, ";")
	w.P("const unsigned kgen_e = ", g, ".x * ", mw.mm.Decode.Combine.Launch.Threadgroup[0], "u + ", mw.tid, ";")
	w.Block("if (kgen_e >= args.m * args.p)", func() { w.P("return; // no barrier follows") })
	w.P("const unsigned kgen_i = kgen_e / args.p, kgen_c = kgen_e % args.p;")
	w.P("const unsigned long long kgen_w0 = (unsigned long long)", g, ".z * args.", ir.SplitsField, " * args.m + kgen_i; // split s: kgen_w0 + s * m")
	w.P("float kgen_mx = kgen_ninf;")
	w.Block("for (unsigned kgen_s = 0; kgen_s < args."+ir.SplitsField+"; ++kgen_s)", func() {
		w.P("kgen_mx = fmaxf(kgen_mx, ", ws[1].Name, "[kgen_w0 + (unsigned long long)kgen_s * args.m]);")
	})
	w.P("float kgen_osum = 0.0f, kgen_lsum = 0.0f;")
	w.Block("for (unsigned kgen_s = 0; kgen_s < args."+ir.SplitsField+"; ++kgen_s)", func() {
		w.P("const unsigned long long kgen_w = kgen_w0 + (unsigned long long)kgen_s * args.m;")
		w.P("const float kgen_f = kgen_mx == kgen_ninf ? 0.0f : ", exp, "(", ws[1].Name, "[kgen_w] - kgen_mx);")
		w.P("kgen_osum += ", ws[0].Name, "[kgen_w * args.p + kgen_c] * kgen_f;")
		w.P("kgen_lsum += ", ws[2].Name, "[kgen_w] * kgen_f;")
	})
	w.P("const C ", ir.ReductionName(0), " = kgen_lsum;")
	mw.writeOut("kgen_osum")
}
