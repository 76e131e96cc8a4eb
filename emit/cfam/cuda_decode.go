package cfam

import (
	"fmt"
	"strings"

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
		if p == &dec.Part {
			mw.packPrologue(p.Bindings)
			return
		}
		mw.batchPrologue(p.Bindings)
	}
	c := k.Matmul().Chain.CUDA
	partComment := fmt.Sprintf("launch 1 (flash decoding, kgen_splits > 1): block x is split x %% kgen_splits of the %d rows x / kgen_splits, the partial output, max and sum into the workspaces", c.BM)
	return []entry{
		{name: dec.Part.Entry, kernel: kernelOf(&dec.Part), threads: dec.Part.CUDA.Threadgroup[0], minBlocks: c.PartBlocksPerSM, comment: partComment,
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

// partRow is the workspace row of packed row kgen_pr in this block's
// split: (batch element · kgen_splits + split) · m + row, as Metal's part,
// the batch element kgen_zq + kgen_pr / m (packPrologue).
func (mw *matmulWriter) partRow() string {
	return "((kgen_zq + kgen_pr / args.m) * args." + ir.SplitsField + " + kgen_split) * args.m + kgen_pr % args.m"
}

// packGroup is the part's group (ir.DecodePack) in C.
func (mw *matmulWriter) packGroup() string {
	if p := mw.mm.Chain.CUDA.Pack; p.Group != "" {
		return "args." + p.Group
	}
	return fmt.Sprint(mw.mm.Chain.CUDA.Pack.Const, "u")
}

// packed reports whether the part packs more than one query head.
func (mw *matmulWriter) packed() bool {
	p := mw.mm.Chain.CUDA.Pack
	return p.Group != "" || p.Const > 1
}

// packPrologue is the part's batchPrologue over its packed batch
// (ir.DecodePack): grid z unflattens with the packed axis over the group
// (index kgen_hk, its KV head); a grouped tensor moves to index kgen_hk,
// one read whole to the block's first query head kgen_hk · group (a
// packed row adds its own head, kgen_q_at); kgen_zq is the batch element
// of packed row 0.
func (mw *matmulWriter) packPrologue(bindings []ir.Binding) {
	w, u := mw.Writer, mw.d.Uint
	batch, pack := mw.k.Batch(), mw.mm.Chain.CUDA.Pack
	z := mw.d.Threads[GroupXYZ].Expr + ".z"
	last := batch[pack.Axis]
	hk := "(args." + last + " / " + mw.packGroup() + ")"
	w.P("// Packed batch element ", z, ": the query heads ", last, " sharing a KV head are the block's rows (ir.DecodePack).")
	w.P(u, " kgen_z = ", z, ";")
	w.P("const ", u, " kgen_hk = kgen_z % ", hk, ", kgen_h0 = kgen_hk * ", mw.packGroup(), ";")
	w.P("kgen_z /= ", hk, ";")
	w.P("const unsigned long long kgen_zq = (unsigned long long)kgen_z * args.", last, " + kgen_h0; // the batch element of packed row 0")
	for a := pack.Axis - 1; a > 0; a-- {
		w.P("const ", u, " kgen_b", a, " = kgen_z % args.", batch[a], ";")
		w.P("kgen_z /= args.", batch[a], ";")
	}
	if pack.Axis > 0 {
		w.P("const ", u, " kgen_b0 = kgen_z;")
	}
	for _, b := range bindings {
		if b.Role == ir.Args || len(b.Batch) == 0 {
			continue
		}
		var terms []string
		for j, dim := range b.Batch {
			idx := fmt.Sprint("kgen_b", dim.Axis)
			if dim.Axis == pack.Axis {
				idx = "kgen_h0"
			}
			switch {
			case dim.Axis == pack.Axis && dim.Group == pack.Group && dim.GroupConst == pack.Const:
				idx = "kgen_hk" // the packed group's KV head
			case dim.Group != "":
				idx = "(" + idx + " / args." + dim.Group + ")" // elsewhere the group is 1 (ir.decodePackOf)
			case dim.GroupConst > 0:
				idx = fmt.Sprint("(", idx, " / ", dim.GroupConst, "u)")
			}
			terms = append(terms, idx+" * args."+ir.StrideField(b, j))
		}
		w.P(b.Name, " += ", strings.Join(terms, " + "), ";")
	}
}

// packHeadStride is A's stride along the packed axis, "args.kgen_q_s1".
func (mw *matmulWriter) packHeadStride() string {
	a := mw.k.Bindings[mw.mm.A.Binding]
	for j, d := range a.Batch {
		if d.Axis == mw.mm.Chain.CUDA.Pack.Axis {
			return "args." + ir.StrideField(a, j)
		}
	}
	panic("kgen: a packed part's A has no packed axis (ir.decodePackOf)")
}

// packedQAt defines kgen_q_at over packed rows: row r is query row r % m
// of the block's head r / m (A's stride along the packed axis).
func (mw *matmulWriter) packedQAt() {
	a := mw.k.Bindings[mw.mm.A.Binding]
	s, head := len(a.Batch), mw.packHeadStride()
	row, col := "args."+ir.StrideField(a, s), "args."+ir.StrideField(a, s+1)
	if a := mw.mm.A; a.ColMajor {
		row, col = col, row
	}
	mw.P("auto kgen_q_at = [&](unsigned long long kgen_r, unsigned long long kgen_c) { return kgen_r / args.m * ", head, " + kgen_r % args.m * ", row, " + kgen_c * ", col, "; };")
}

// simtPartials writes the f32 part's partials: lane j's output columns of
// each of the warp's rows, and per row (lane 0, first pass) its max and
// sum, which the butterflies left the same in every lane.
func (mw *matmulWriter) simtPartials() {
	w, ws := mw.Writer, mw.mm.Decode.Space
	w.Block("for (unsigned kgen_r = 0; kgen_r < 16; ++kgen_r)", func() {
		w.P("const unsigned kgen_pr = kgen_row0 + kgen_wr + kgen_r;")
		w.Block("if (kgen_pr < kgen_mend)", func() {
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
