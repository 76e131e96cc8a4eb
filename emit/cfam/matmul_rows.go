package cfam

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// rowBody writes the row-owning matmul kernel (ir.Matmul.Rows set): a
// threadgroup owns ir.RowTile.BM whole rows of the output. It walks n in
// BN-wide column tiles, each a full K loop like the tiled kernel's, storing
// the accumulators into a threadgroup-memory strip [BM][NMAX]; then each
// simdgroup runs the rowwise passes over BM/4 of the strip's rows: a
// strided float accumulation per lane, a shuffle-xor butterfly across the
// simdgroup (the same shape for every lane map and lane order), the row
// stage of that level, and last the write pass. Rows past m do no element
// work but every lane reaches every matrix operation, barrier and shuffle.
func (mw *matmulWriter) rowBody() {
	w, mm, tg, simd := mw.Writer, mw.mm, mw.tg, mw.simd
	t := mm.Tile
	w.P("using C = float;")
	w.P(fmt.Sprintf("constexpr uint BM = %d, BN = %d, BK = %d, NMAX = %d, kRowsPerSimd = %d;", t.BM, t.BN, t.BK, mm.NMax, t.BM/(t.WM*t.WN)))
	w.P("constexpr uint kThreads = ", t.Threads(), ";")
	slots := mw.slots(t)
	mw.declareStaged(slots)
	for i, b := range mm.B {
		w.P(fmt.Sprintf("threadgroup float kgen_cs%d[BM * NMAX]; // %s of the group's rows, [BM][NMAX]", i, b.Acc))
	}
	for _, s := range slots {
		mw.declare(s)
	}
	w.P("// The launcher takes the split launches for n > NMAX; the whole group leaves together (no matrix is live yet).")
	w.Block("if (args.n > NMAX)", func() { w.P("return;") })
	w.P("const uint kgen_row0 = ", tg, " * BM;")
	w.P("const uint kgen_sn = ", simd, " * 8; // this simdgroup's 8 columns of each column tile")
	w.Block("for (uint kgen_col0 = 0; kgen_col0 < args.n; kgen_col0 += BN)", func() {
		for i := range mm.B {
			w.P(fmt.Sprintf("simdgroup_float8x8 kgen_acc%d = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);", i))
		}
		w.Block("for (uint kgen_k0 = 0; kgen_k0 < args.k; kgen_k0 += BK)", func() {
			w.P("// Stage this step's slices, zeros outside the matrices.")
			for _, s := range slots {
				mw.stageSlot(s)
			}
			w.P("threadgroup_barrier(mem_flags::mem_threadgroup);")
			w.Block("for (uint kgen_kk = 0; kgen_kk < BK; kgen_kk += 8)", func() {
				w.P("simdgroup_matrix<", slots[0].typ, ", 8, 8> kgen_a;")
				mw.fragLoad("kgen_a", slots[0], "0", "kgen_kk")
				for i, s := range slots[1:] {
					w.Bare(func() {
						w.P("simdgroup_matrix<", s.typ, ", 8, 8> kgen_b;")
						mw.fragLoad("kgen_b", s, "kgen_kk", "kgen_sn")
						w.P(fmt.Sprintf("simdgroup_multiply_accumulate(kgen_acc%d, kgen_a, kgen_b, kgen_acc%d);", i, i))
					})
				}
			})
			w.P("threadgroup_barrier(mem_flags::mem_threadgroup);")
		})
		w.P("// NMAX is a multiple of BN, so the strip holds every column tile of n <= NMAX.")
		for i := range mm.B {
			w.P(fmt.Sprintf("simdgroup_store(kgen_acc%d, kgen_cs%d, NMAX, ulong2(kgen_col0 + kgen_sn, 0));", i, i))
		}
	})
	w.P("threadgroup_barrier(mem_flags::mem_threadgroup);")
	mw.rowLoop()
}

// rowPassBody is the split's second phase (ir.Split.Rows): the row-owning
// kernel's passes, with the accumulators read from the workspace. Metal
// and CUDA (ir.SplitCUDA) write it alike, in their dialect's spellings.
func (mw *matmulWriter) rowPassBody(t ir.Tile) {
	mw.P("using C = float;")
	mw.P(fmt.Sprintf("constexpr %s BM = %d, kRowsPerSimd = %d;", mw.d.Uint, t.BM, t.RowsPerWarp()))
	mw.P("const ", mw.d.Uint, " kgen_row0 = ", mw.tg, " * BM;")
	mw.rowLoop()
}

// rowLoop runs the row passes of each of this simdgroup's rows.
func (mw *matmulWriter) rowLoop() {
	w := mw.Writer
	u := mw.d.Uint
	w.P("const ", u, " kgen_lane = ", mw.tid, " % 32;")
	mw.paramLocals()
	w.Block("for ("+u+" kgen_q = 0; kgen_q < kRowsPerSimd; ++kgen_q)", func() {
		w.P("const ", u, " kgen_r = ", mw.simd, " * kRowsPerSimd + kgen_q, kgen_i = kgen_row0 + kgen_r;")
		w.P("// Past the last row: no element work, but the shuffles stay uniform.")
		w.P("const ", u, " kgen_cols = kgen_i < args.m ? args.n : 0;")
		mw.rowPasses()
	})
}

// paramLocals declares each param as a local of its formula type: f32 as
// C, i32 and u32 as int (u32 wrapping, as the formulas read it).
func (mw *matmulWriter) paramLocals() {
	for _, p := range mw.k.Params() {
		if p.Type != dtype.F32 {
			mw.P("const int ", p.Name, " = (int)args.", p.Name, ";")
			continue
		}
		mw.P("const C ", p.Name, " = ", mw.d.Cvt("C", "args."+p.Name), ";")
	}
}

// rowPasses writes the stages of one row in order: per-row lets, reduction
// passes over the strip, and the write pass.
func (mw *matmulWriter) rowPasses() {
	w, r := mw.Writer, mw.mm.Rows
	for _, st := range mw.k.Stages() {
		switch st.Kind {
		case ir.StageRowLets:
			var outs []string
			for _, t := range st.Targets {
				ty := "C"
				if t.Bool {
					ty = "bool"
				}
				w.P(ty, " ", t.Name, ";")
				outs = append(outs, t.Name)
			}
			w.P(mw.rowCall(st, outs))
		case ir.StagePass:
			w.P("// Pass ", st.Level, ".")
			var reds []int
			var terms []string
			for i, red := range r.Reductions {
				if red.Level == st.Level {
					reds = append(reds, i)
					terms = append(terms, fmt.Sprintf("kgen_t%d", i))
					w.P(fmt.Sprintf("float kgen_a%d = %s; // %s(%s)", i, identity(mw.d, red.Op), red.Op.Func(), mw.k.FormatExpr(red.Arg)))
				}
			}
			mw.unrollRow()
			w.Block(mw.columnLoop(), func() {
				w.P("C ", strings.Join(terms, ", "), ";")
				w.P(mw.rowCall(st, terms))
				for j, i := range reds {
					if op := r.Reductions[i].Op; op.Sums() {
						w.P(fmt.Sprintf("kgen_a%d += %s;", i, terms[j]))
					} else {
						w.P(fmt.Sprintf("kgen_a%d = f%s(kgen_a%d, %s);", i, op.Combine(), i, terms[j]))
					}
				}
			})
			for _, i := range reds {
				op := r.Reductions[i].Op
				if mw.rowTeam > 0 {
					mw.teamReduce(i, op)
					continue
				}
				w.Block("for ("+mw.d.LaneOffset+" kgen_o = 16; kgen_o > 0; kgen_o /= 2)", func() {
					if op.Sums() {
						w.P(fmt.Sprintf("kgen_a%d += %s;", i, mw.d.ShuffleXor(fmt.Sprintf("kgen_a%d", i), "kgen_o")))
					} else {
						w.P(fmt.Sprintf("kgen_a%d = f%s(kgen_a%d, %s);", i, op.Combine(), i, mw.d.ShuffleXor(fmt.Sprintf("kgen_a%d", i), "kgen_o")))
					}
				})
				v := fmt.Sprintf("kgen_a%d", i)
				if op.Divides() {
					v += " / float(args.n)"
				}
				w.P("const C ", ir.ReductionName(i), " = ", v, ";")
			}
		case ir.StageWrite:
			w.P("// Pass ", st.Level, ": write.")
			outs := mw.k.BindingsOf(ir.Output)
			var names []string
			for _, b := range outs {
				names = append(names, "kgen_o_"+b.Name)
			}
			mw.unrollRow()
			w.Block(mw.columnLoop(), func() {
				w.P("C ", strings.Join(names, ", "), ";")
				w.P(mw.rowCall(st, names))
				for i, b := range outs {
					w.P(b.Name, "[kgen_i * args.n + kgen_j] = ", mw.d.Cvt(mw.d.TypeName(b.DType), names[i]), ";")
				}
			})
		}
	}
}

// columnLoop is the head of a row pass's loop over this thread's columns:
// strided by a warp, or by the block when a block owns the row.
func (mw *matmulWriter) columnLoop() string {
	stride := "32"
	if mw.rowTeam > 0 {
		stride = fmt.Sprint(mw.rowTeam)
	}
	return "for (" + mw.d.Uint + " kgen_j = kgen_lane; kgen_j < kgen_cols; kgen_j += " + stride + ")"
}

// teamReduce finishes reduction i over a block that owns the row: the
// shuffle butterfly in each warp, then the warps' partials in warp order
// (kgen_team_<op>, templates/cuda/team_reduce.tmpl; every thread gets the
// same value).
func (mw *matmulWriter) teamReduce(i int, op ir.ReduceOp) {
	v := teamCall(op, fmt.Sprintf("kgen_a%d", i), fmt.Sprint(mw.rowTeam), "0", "kgen_simd", "kgen_tid % 32")
	if op.Divides() {
		v += " / float(args.n)"
	}
	mw.P("const C ", ir.ReductionName(i), " = ", v, ";")
}

// teamRowPassBody is the CUDA split's second phase (CUDA only: blockIdx,
// gridDim): a block of rowTeam threads owns one row at a time, looping over
// the rows gridDim.x apart (the loop's bound is uniform over the block, so
// its barriers are too).
func (mw *matmulWriter) teamRowPassBody() {
	mw.P("using C = float;")
	teamScratch(mw.Writer, mw.d, fmt.Sprint(mw.rowTeam/32))
	mw.P("const ", mw.d.Uint, " kgen_lane = ", mw.tid, "; // the thread's first column")
	mw.paramLocals()
	mw.Block("for ("+mw.d.Uint+" kgen_i = blockIdx.x; kgen_i < args.m; kgen_i += gridDim.x)", func() {
		mw.P("const ", mw.d.Uint, " kgen_cols = args.n;")
		mw.rowPasses()
	})
}

// unrollRow asks for the lane's column loop to be unrolled where the
// dialect says so (CUDA: a warp owns a whole row of up to 14336 columns,
// and unrolled iterations have their workspace loads in flight together;
// the sums keep their order).
func (mw *matmulWriter) unrollRow() {
	if mw.d.RowUnroll != "" {
		mw.P(mw.d.RowUnroll)
	}
}

// rowCall calls stage st at element (kgen_i, kgen_j) of the strip's row
// kgen_r, with extra appended (the targets).
func (mw *matmulWriter) rowCall(st ir.Stage, extra []string) string {
	ins := mw.k.ElementInputs(0)
	var args []string
	for _, a := range st.Args {
		switch a.Kind {
		case ir.ArgInput:
			args = append(args, mw.d.Cvt("C", ins[a.Index].Name+"["+elemIndex(ins[a.Index])+"]"))
		case ir.ArgAcc:
			args = append(args, mw.accAt(a.Index))
		case ir.ArgIndex:
			args = append(args, matmulIndexArg(a.Name))
		default: // params, per-row lets and reductions: locals by name
			args = append(args, a.Name)
		}
	}
	return st.Name + "(" + strings.Join(append(args, extra...), ", ") + ");"
}
