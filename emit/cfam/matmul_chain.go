package cfam

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/ir"
)

// chainBody writes a matmul chain (ir.Chain): a threadgroup owns BM rows;
// per BN-column block of n it computes the block of acc (the row-owning
// kernel's K loop) into threadgroup memory, then each simdgroup streams
// its rows' softmax: the scores, the block max by a shuffle butterfly, the
// new running max, the rescale factor exp(m_old - m_new) of O and l, the
// weights exp(s - m_new) and their sum; then O (an f32 [BM][PMAX] strip)
// is rescaled and O += W·V on simdgroup fragments, V staged BN columns of
// p at a time. Every lane reaches every matrix operation, barrier and
// shuffle; rows past m and columns past n score -INFINITY (weight 0).
func (mw *matmulWriter) chainBody() {
	mw.chainLoop("0", "args.n", mw.chainVecWrite, func() { mw.chainWrite(mw.simd) })
}

// chainLoop writes the chain over keys [from, to), then finish (the
// outputs, or a decode split's partials); or where the launch takes the
// row-vector form (ir.Matmul.ChainTiledRule), chainVec with vecFinish.
func (mw *matmulWriter) chainLoop(from, to string, vecFinish, finish func()) {
	w, mm, tid, tg, simd := mw.Writer, mw.mm, mw.tid, mw.tg, mw.simd
	t, ch := mm.Tile, mm.Chain
	w.P("using C = float;")
	w.P(fmt.Sprintf("constexpr uint BM = %d, BN = %d, BK = %d, PMAX = %d, kRowsPerSimd = %d;", t.BM, t.BN, t.BK, ch.PMax, t.BM/(t.WM*t.WN)))
	w.P("constexpr uint kThreads = ", t.Threads(), ";")
	w.P("threadgroup float kgen_as[BM * BK]; // A's tile, [BM][BK]")
	w.P(fmt.Sprintf("threadgroup float kgen_bs0[BK * BN]; // %s's tile, [BK][BN]", mm.B[0].Name))
	w.P("threadgroup float kgen_ps[BM * BN]; // the block's acc, then its weights, [BM][BN]")
	w.P(fmt.Sprintf("threadgroup float kgen_vs[BN * BN]; // %s's block, [BN][BN]", ch.Then.Name))
	w.P("threadgroup float kgen_fs[BM]; // each row's rescale factor for this block")
	w.P(fmt.Sprintf("threadgroup float kgen_os[BM * PMAX]; // %s of the group's rows, [BM][PMAX]", ch.Then.Acc))
	w.P("// The launcher refuses p > PMAX; the whole group leaves together (no matrix is live yet).")
	w.Block("if (args.p > PMAX)", func() { w.P("return;") })
	w.P("const uint kgen_lane = ", tid, " % 32;")
	mw.paramLocals()
	w.P("// One threadgroup per query row where m <= ", ir.VecRows, " and k <= PMAX (ir.Matmul.ChainTiledRule: ", mm.ChainTiledRule(), "; the launcher's grid follows the same rule).")
	w.Block("if ("+cSize(mm.ChainTiledRule())+" == 0u)", func() {
		mw.chainVec(from, to, vecFinish)
		w.P("return;")
	})
	w.P("const uint kgen_row0 = ", tg, " * BM;")
	w.P("const uint kgen_sn = ", simd, " * 8; // this simdgroup's 8 columns of each block")
	w.Block("for (uint kgen_e = "+tid+"; kgen_e < BM * PMAX; kgen_e += kThreads)", func() { w.P("kgen_os[kgen_e] = 0.0f;") })
	w.P("// Other threads read these zeros even when no block runs (n = 0, every block masked).")
	w.P("threadgroup_barrier(mem_flags::mem_threadgroup);")
	w.P("float kgen_m[kRowsPerSimd], kgen_l[kRowsPerSimd]; // the running max and sum of this simdgroup's rows")
	w.Block("for (uint kgen_q = 0; kgen_q < kRowsPerSimd; ++kgen_q)", func() {
		w.P("kgen_m[kgen_q] = -INFINITY;")
		w.P("kgen_l[kgen_q] = 0.0f;")
	})
	skip := mw.mm.Chain.Skip
	if skip != nil {
		w.P("// The group's rows, for the mask test (ir.BlockSkip).")
		w.P("const long kgen_rlo = long(kgen_row0), kgen_rhi = long(min(args.m, kgen_row0 + BM)) - 1;")
	}
	w.Block("for (uint kgen_col0 = "+from+"; kgen_col0 < "+to+"; kgen_col0 += BN)", func() {
		if skip != nil {
			w.P("// Every score of this block is -INFINITY whatever acc is (the mask, proved over the")
			w.P("// block's rows and columns): its weights would all be 0, so the block is left out.")
			w.P("const long kgen_clo = long(kgen_col0), kgen_chi = long(min(args.n, kgen_col0 + BN)) - 1;")
			w.Block("if ("+skipTest(skip)+")", func() { w.P("continue;") })
		}
		mw.chainScores(tid)
		mw.chainSoftmax(simd)
		mw.chainAccumulate(tid)
	})
	finish()
}

// decodePartBody writes a decode split's first phase (ir.Decode): the
// chain over split y's keys, each row's unnormalised output, running max
// and sum into the workspaces (row (z · splits + y) · m + i).
func (mw *matmulWriter) decodePartBody() {
	g := mw.d.Threads[GroupXYZ].Expr
	mw.P("const uint kgen_key0 = ", g, ".y * args.", ir.ChunkField, ";")
	mw.P("const uint kgen_key1 = min(args.n, kgen_key0 + args.", ir.ChunkField, ");")
	mw.chainLoop("kgen_key0", "kgen_key1", mw.decodeVecPartials, func() {
		w := mw.Writer
		ws := mw.mm.Decode.Space
		w.Block("for (uint kgen_q = 0; kgen_q < kRowsPerSimd; ++kgen_q)", func() {
			w.P("const uint kgen_r = ", mw.simd, " * kRowsPerSimd + kgen_q, kgen_i = kgen_row0 + kgen_r;")
			w.Block("if (kgen_i < args.m)", func() {
				w.P("const uint kgen_w = (", g, ".z * args.", ir.SplitsField, " + ", g, ".y) * args.m + kgen_i;")
				w.Block("for (uint kgen_c = kgen_lane; kgen_c < args.p; kgen_c += 32)", func() {
					w.P(ws[0].Name, "[kgen_w * args.p + kgen_c] = kgen_os[kgen_r * PMAX + kgen_c];")
				})
				w.Block("if (kgen_lane == 0)", func() {
					w.P(ws[1].Name, "[kgen_w] = kgen_m[kgen_q];")
					w.P(ws[2].Name, "[kgen_w] = kgen_l[kgen_q];")
				})
			})
		})
	})
}

// decodeCombineBody writes a decode split's second phase: per output
// element (thread x of the grid, batch element z), the splits' partials
// rescaled to their common max M and summed, a split whose every key was
// masked (max -INFINITY) weighing 0, then the write stage.
func (mw *matmulWriter) decodeCombineBody() {
	w, g := mw.Writer, mw.d.Threads[GroupXYZ].Expr
	ws := mw.mm.Decode.Space
	w.P("using C = float;")
	mw.P("const uint kgen_e = ", g, ".x * ", mw.mm.Decode.Combine.Launch.Threadgroup[0], "u + ", mw.tid, ";")
	w.Block("if (kgen_e >= args.m * args.p)", func() { w.P("return; // no barrier follows") })
	mw.paramLocals()
	w.P("const uint kgen_i = kgen_e / args.p, kgen_c = kgen_e % args.p;")
	w.P("const uint kgen_w0 = ", g, ".z * args.", ir.SplitsField, " * args.m + kgen_i; // split s: kgen_w0 + s * m")
	loop := "for (uint kgen_s = 0; kgen_s < args." + ir.SplitsField + "; ++kgen_s)"
	mw.combineMax(loop, ws[1].Name+"[kgen_w0 + kgen_s * args.m]")
	mw.combineSums(loop, "const uint kgen_w = kgen_w0 + kgen_s * args.m;",
		ws[1].Name+"[kgen_w]", ws[0].Name+"[kgen_w * args.p + kgen_c]", ws[2].Name+"[kgen_w]")
	w.P("const C ", ir.ReductionName(0), " = kgen_lsum;")
	mw.chainStore("kgen_osum")
}

// chainStore writes the chain's write stage at output element (kgen_i,
// kgen_c), acc2 read at acc2 and the row's sum of weights from kgen_r0,
// then each output's store into its view.
func (mw *matmulWriter) chainStore(acc2 string) {
	var names []string
	outs := mw.k.BindingsOf(ir.Output)
	for _, b := range outs {
		names = append(names, "kgen_o_"+b.Name)
	}
	mw.P("C ", strings.Join(names, ", "), ";")
	mw.P(mw.chainCall(mw.k.Stages()[1], acc2, strings.Join(names, ", ")))
	for i, b := range outs {
		mw.P(b.Name, "[", mw.elemAt(b, "kgen_i", "kgen_c", "args.p"), "] = ", mw.d.Cvt(mw.d.TypeName(b.DType), names[i]), ";")
	}
}

// chainScores writes one block's acc = A·B into kgen_ps (the row-owning
// kernel's K loop for one column tile).
func (mw *matmulWriter) chainScores(tid string) {
	w, mm := mw.Writer, mw.mm
	w.P("simdgroup_float8x8 kgen_acc0 = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);")
	w.Block("for (uint kgen_k0 = 0; kgen_k0 < args.k; kgen_k0 += BK)", func() {
		w.P("// Stage this step's slices as float, zeros outside the matrices.")
		mw.stage("kgen_as", "BK", "BM * BK", mm.A, "kgen_row0", "kgen_k0", "args.m", "args.k", tid)
		mw.stage("kgen_bs0", "BN", "BK * BN", mm.B[0], "kgen_k0", "kgen_col0", "args.k", "args.n", tid)
		w.P("threadgroup_barrier(mem_flags::mem_threadgroup);")
		w.Block("for (uint kgen_kk = 0; kgen_kk < BK; kgen_kk += 8)", func() {
			w.P("simdgroup_float8x8 kgen_a, kgen_b;")
			w.P("simdgroup_load(kgen_a, kgen_as, BK, ulong2(kgen_kk, 0));")
			w.P("simdgroup_load(kgen_b, kgen_bs0, BN, ulong2(kgen_sn, kgen_kk));")
			w.P("simdgroup_multiply_accumulate(kgen_acc0, kgen_a, kgen_b, kgen_acc0);")
		})
		w.P("threadgroup_barrier(mem_flags::mem_threadgroup);")
	})
	w.P("simdgroup_store(kgen_acc0, kgen_ps, BN, ulong2(kgen_sn, 0));")
	w.P("threadgroup_barrier(mem_flags::mem_threadgroup);")
}

// chainSoftmax writes the online softmax step of this simdgroup's rows:
// lane l takes column col0 + l of the block.
func (mw *matmulWriter) chainSoftmax(simd string) {
	w := mw.Writer
	st := mw.k.Stages()[0]
	w.Block("for (uint kgen_q = 0; kgen_q < kRowsPerSimd; ++kgen_q)", func() {
		w.P("const uint kgen_r = ", simd, " * kRowsPerSimd + kgen_q, kgen_i = kgen_row0 + kgen_r, kgen_j = kgen_col0 + kgen_lane;")
		w.P("C kgen_s = -INFINITY;")
		w.Block("if (kgen_i < args.m && kgen_j < args.n)", func() {
			w.P(mw.chainCall(st, "kgen_ps[kgen_r * BN + kgen_lane]", "kgen_s"))
		})
		w.P("float kgen_mb = kgen_s;")
		w.Block("for (ushort kgen_o = 16; kgen_o > 0; kgen_o /= 2)", func() {
			w.P("kgen_mb = fmax(kgen_mb, simd_shuffle_xor(kgen_mb, kgen_o));")
		})
		w.P("const float kgen_mnew = fmax(kgen_m[kgen_q], kgen_mb);")
		w.P("// While every score so far is -INFINITY the weights are 0 and nothing rescales.")
		w.P("const bool kgen_none = kgen_mnew == -INFINITY;")
		w.P("const float kgen_f = kgen_none ? 1.0f : kgen_math::exp(kgen_m[kgen_q] - kgen_mnew);")
		w.P("const float kgen_w = kgen_none ? 0.0f : kgen_math::exp(kgen_s - kgen_mnew);")
		w.P("float kgen_sum = kgen_w;")
		w.Block("for (ushort kgen_o = 16; kgen_o > 0; kgen_o /= 2)", func() {
			w.P("kgen_sum += simd_shuffle_xor(kgen_sum, kgen_o);")
		})
		w.P("kgen_l[kgen_q] = kgen_l[kgen_q] * kgen_f + kgen_sum;")
		w.P("kgen_m[kgen_q] = kgen_mnew;")
		w.P("kgen_ps[kgen_r * BN + kgen_lane] = kgen_w;")
		w.Block("if (kgen_lane == 0)", func() { w.P("kgen_fs[kgen_r] = kgen_f;") })
	})
	w.P("threadgroup_barrier(mem_flags::mem_threadgroup);")
}

// chainAccumulate writes O = O·f + W·V for one block: the rescale by
// element, then BN columns of p at a time, each simdgroup one 8×8
// fragment of O over the block's BN rows of V.
func (mw *matmulWriter) chainAccumulate(tid string) {
	w, ch := mw.Writer, mw.mm.Chain
	w.Block("for (uint kgen_e = "+tid+"; kgen_e < BM * args.p; kgen_e += kThreads)", func() {
		w.P("const uint kgen_r = kgen_e / args.p;")
		w.P("kgen_os[kgen_r * PMAX + kgen_e % args.p] *= kgen_fs[kgen_r];")
	})
	w.P("threadgroup_barrier(mem_flags::mem_threadgroup);")
	w.Block("for (uint kgen_c0 = 0; kgen_c0 < args.p; kgen_c0 += BN)", func() {
		mw.stage("kgen_vs", "BN", "BN * BN", ch.Then, "kgen_col0", "kgen_c0", "args.n", "args.p", tid)
		w.P("threadgroup_barrier(mem_flags::mem_threadgroup);")
		w.P("simdgroup_float8x8 kgen_of;")
		w.P("simdgroup_load(kgen_of, kgen_os, PMAX, ulong2(kgen_c0 + kgen_sn, 0));")
		w.Block("for (uint kgen_t = 0; kgen_t < BN; kgen_t += 8)", func() {
			w.P("simdgroup_float8x8 kgen_pw, kgen_v;")
			w.P("simdgroup_load(kgen_pw, kgen_ps, BN, ulong2(kgen_t, 0));")
			w.P("simdgroup_load(kgen_v, kgen_vs, BN, ulong2(kgen_sn, kgen_t));")
			w.P("simdgroup_multiply_accumulate(kgen_of, kgen_pw, kgen_v, kgen_of);")
		})
		w.P("simdgroup_store(kgen_of, kgen_os, PMAX, ulong2(kgen_c0 + kgen_sn, 0));")
		w.P("threadgroup_barrier(mem_flags::mem_threadgroup);")
	})
}

// chainWrite writes the outputs of this simdgroup's rows from O and l.
func (mw *matmulWriter) chainWrite(simd string) {
	w := mw.Writer
	w.Block("for (uint kgen_q = 0; kgen_q < kRowsPerSimd; ++kgen_q)", func() {
		w.P("const uint kgen_r = ", simd, " * kRowsPerSimd + kgen_q, kgen_i = kgen_row0 + kgen_r;")
		w.P("const uint kgen_cols = kgen_i < args.m ? args.p : 0;")
		w.P("const C ", ir.ReductionName(0), " = kgen_l[kgen_q];")
		w.Block("for (uint kgen_c = kgen_lane; kgen_c < kgen_cols; kgen_c += 32)", func() {
			mw.chainStore("kgen_os[kgen_r * PMAX + kgen_c]")
		})
	})
}

// chainCall calls a chain stage with acc (or acc2) at `at`, the indices
// of element (kgen_i, kgen_j) (the score stage's: the output stage reads
// none), the params and the reduction by name, then the targets.
func (mw *matmulWriter) chainCall(st ir.Stage, at, targets string) string {
	var args []string
	for _, a := range st.Args {
		switch a.Kind {
		case ir.ArgAcc:
			args = append(args, at)
		case ir.ArgIndex:
			args = append(args, matmulIndexArg(a.Name))
		default:
			args = append(args, a.Name)
		}
	}
	return st.Name + "(" + strings.Join(append(args, targets), ", ") + ");"
}

// skipTest renders a BlockSkip over the block kgen_rlo..kgen_rhi ×
// kgen_clo..kgen_chi in 64-bit integers: every guard inside the int32
// range (a lone index, param or literal always is), and some term's
// conditions at their minimum.
func skipTest(sk *ir.BlockSkip) string {
	var guards, terms []string
	seen := map[string]bool{}
	for _, g := range sk.Guards {
		lo, hi := linearAt(g, false), linearAt(g, true)
		if len(g.Terms)+int(abs64(g.Row))+int(abs64(g.Col)) <= 1 || seen[lo] {
			continue
		}
		seen[lo] = true
		guards = append(guards, lo+" >= -2147483648l", hi+" <= 2147483647l")
	}
	for _, term := range sk.Terms {
		var conds []string
		for _, c := range term {
			op := " >= 0"
			if c.Strict {
				op = " > 0"
			}
			conds = append(conds, linearAt(c.D, false)+op)
		}
		terms = append(terms, strings.Join(conds, " && "))
	}
	test := strings.Join(terms, ") || (")
	if len(terms) > 1 {
		test = "(" + test + ")"
	}
	if len(guards) == 0 {
		return test
	}
	return strings.Join(guards, " && ") + " && (" + test + ")"
}

func abs64(x int64) int64 { return max(x, -x) }

// linearAt is d's minimum (or maximum) over the block, each index at the
// end its coefficient's sign picks: "kgen_clo - kgen_rhi - long(offset)".
func linearAt(d ir.Linear, max bool) string {
	out := ""
	add := func(c int64, v string) {
		switch {
		case c == 0:
			return
		case out == "" && c == 1:
			out = v
		case out == "" && c == -1:
			out = "-" + v
		case out == "":
			out = fmt.Sprintf("%dl * %s", c, v)
		case c == 1:
			out += " + " + v
		case c == -1:
			out += " - " + v
		case c < 0:
			out += fmt.Sprintf(" - %dl * %s", -c, v)
		default:
			out += fmt.Sprintf(" + %dl * %s", c, v)
		}
	}
	index := func(c int64, lo, hi string) {
		if (c > 0) == max {
			add(c, hi)
			return
		}
		add(c, lo)
	}
	index(d.Row, "kgen_rlo", "kgen_rhi")
	index(d.Col, "kgen_clo", "kgen_chi")
	for _, t := range d.Terms {
		switch t.Name {
		case "":
			add(t.Coef, fmt.Sprintf("%dl", t.Value))
		case "m", "n":
			add(t.Coef, "long(int(args."+t.Name+"))")
		default:
			add(t.Coef, "long("+t.Name+")") // an integer param's local (paramLocals)
		}
	}
	if out == "" {
		return "0l"
	}
	return out
}
