package cfam

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
)

// plainGemvBody writes a plain matmul's matrix-vector phase (ir.Gemv with
// Plain, ir/matmul_gemv.go) for m <= ir.GemvRows: per K block of 32
// lanes × one 16-byte chunk of A, the threadgroup stages A's m rows of the
// block (whole chunks where the rows allow, zeros past k), then each lane
// reads its chunk of every row from threadgroup memory and its chunk of
// each of the simdgroup's COLS columns of every B from device memory, and
// adds the products to its (column, row) sums; a simd_sum per (row,
// column) and the epilogue then finish as in the quantized form
// (gemvStore). A column past n repeats the last (never stored), so every
// lane reaches every simd_sum and barrier.
func (mw *matmulWriter) plainGemvBody(g ir.Gemv) {
	w, mm, tid, tg := mw.Writer, mw.mm, mw.tid, mw.tg
	a := mw.k.Bindings[mm.A.Binding]
	ta := mw.d.TypeName(a.DType)
	w.P("using C = float;")
	w.P(fmt.Sprintf("constexpr uint ROWS = %d, COLS = %d, SIMDS = %d;", ir.GemvRows, ir.GemvCols, g.Simds))
	w.P(fmt.Sprintf("constexpr uint KV = %d / sizeof(%s), KB = 32u * KV; // a lane's slice of K per block (16 bytes of A), the block", ir.StageVecBytes, ta))
	w.P("// A's rows < m of one K block, [ROWS][KB] (rows past m are never staged nor read).")
	w.P(fmt.Sprintf("threadgroup uint4 kgen_xs_raw[ROWS * KB * sizeof(%s) / 16];", ta))
	w.P(fmt.Sprintf("threadgroup %s* kgen_xs = (threadgroup %s*)kgen_xs_raw;", ta, ta))
	w.P("const uint kgen_lane = ", tid, " % 32u, kgen_col0 = (", tg, " * SIMDS + ", tid, " / 32u) * COLS;")
	if !mm.A.ColMajor {
		w.P("const bool kgen_va = args.k % KV == 0; // A's rows of whole 16-byte chunks")
	}
	for i, b := range mm.B {
		w.P(fmt.Sprintf("float kgen_acc%d[COLS][ROWS] = {};", i))
		mw.gemvVecCheck(i, b)
	}
	w.Block("for (uint kgen_k0 = 0; kgen_k0 < args.k; kgen_k0 += KB)", func() {
		mw.gemvStageA(ta, "kgen_k0")
		w.P("threadgroup_barrier(mem_flags::mem_threadgroup);")
		w.P("const uint kgen_kc = kgen_k0 + kgen_lane * KV; // this lane's slice")
		for i, b := range mm.B {
			w.P("// ", b.Acc, ": ", b.Name, "'s values of this lane's slice for each column, then the products with every row.")
			w.P("// Lanes past k have no slice: nothing to read.")
			w.Block("if (kgen_kc < args.k)", func() {
				w.P("float kgen_w[COLS][KV];")
				if b.ColMajor {
					mw.gemvColMajorB(i, b)
				} else {
					mw.gemvRowMajorB(i, b)
				}
				w.Block("for (uint kgen_i = 0; kgen_i < ROWS; ++kgen_i)", func() {
					w.Block("if (kgen_i < args.m)", func() {
						w.Block("for (uint kgen_x = 0; kgen_x < KV; ++kgen_x)", func() {
							w.P("const float kgen_a = float(kgen_xs[kgen_i * KB + kgen_lane * KV + kgen_x]);")
							w.Block("for (uint kgen_c = 0; kgen_c < COLS; ++kgen_c)", func() {
								w.P(fmt.Sprintf("kgen_acc%d[kgen_c][kgen_i] = %s(kgen_a, kgen_w[kgen_c][kgen_x], kgen_acc%d[kgen_c][kgen_i]);", i, mw.d.FloatFunc("fma"), i))
							})
						})
					})
				})
			})
		}
		w.P("threadgroup_barrier(mem_flags::mem_threadgroup);")
	})
	mw.gemvStore()
}

// gemvVecCheck writes B i's uniform check that its vector loads are whole
// and aligned: a column-major B's rows (k) of whole 16-byte chunks, a
// row-major B's rows (n) of whole COLS-column vectors.
func (mw *matmulWriter) gemvVecCheck(i int, b ir.Operand) {
	tb := mw.d.TypeName(mw.k.Bindings[b.Binding].DType)
	if b.ColMajor {
		mw.P(fmt.Sprintf("const bool kgen_vb%d = args.k %% (%d / sizeof(%s)) == 0 && KV * sizeof(%s) %% 16 == 0;", i, ir.StageVecBytes, tb, tb))
		return
	}
	mw.P(fmt.Sprintf("const bool kgen_vb%d = args.n %% COLS == 0;", i))
}

// gemvStageA writes the staging of A's rows < m of the K block [k0, k0 +
// KB) into kgen_xs, [ROWS][KB]: one 16-byte chunk (KV elements) per thread
// per step, element by element where the row is not whole chunks (or A is
// column-major) and zeros past k. The plain and the quantized matrix-vector
// forms share it.
func (mw *matmulWriter) gemvStageA(ta, k0 string) {
	w, mm := mw.Writer, mw.mm
	a := mw.k.Bindings[mm.A.Binding]
	at := func(c string) string {
		if mm.A.ColMajor {
			return mw.elemAt(a, "("+c+")", "kgen_i", "args.m")
		}
		return mw.elemAt(a, "kgen_i", c, "args.k")
	}
	w.Block("for (uint kgen_e = "+mw.tid+"; kgen_e < args.m * (KB / KV); kgen_e += SIMDS * 32u)", func() {
		w.P("const uint kgen_i = kgen_e / (KB / KV), kgen_c = " + k0 + " + kgen_e % (KB / KV) * KV;")
		w.P(fmt.Sprintf("threadgroup %s* kgen_dst = kgen_xs + kgen_i * KB + kgen_e %% (KB / KV) * KV;", ta))
		scalar := func() {
			w.Block("for (uint kgen_x = 0; kgen_x < KV; ++kgen_x)", func() {
				w.P(fmt.Sprintf("kgen_dst[kgen_x] = kgen_c + kgen_x < args.k ? %s[%s] : %s(0);", mm.A.Name, at("kgen_c + kgen_x"), ta))
			})
		}
		w.P("// A chunk wholly past k is never read: no lane's slice starts there.")
		w.Block("if (kgen_c < args.k)", func() {
			if mm.A.ColMajor {
				scalar()
				return
			}
			w.IfElse("kgen_va", func() {
				w.P(fmt.Sprintf("*(threadgroup uint4*)kgen_dst = *(device const uint4*)(%s + %s);", mm.A.Name, at("kgen_c")))
			}, scalar)
		})
	})
}

// gemvColMajorB loads a column-major B's (stored [n, k]) slice of each
// column: 16-byte chunks of its k run, zeros past k.
func (mw *matmulWriter) gemvColMajorB(i int, b ir.Operand) {
	w := mw.Writer
	bb := mw.k.Bindings[b.Binding]
	tb := mw.d.TypeName(bb.DType)
	w.Block("for (uint kgen_c = 0; kgen_c < COLS; ++kgen_c)", func() {
		w.P("const uint kgen_j = min(kgen_col0 + kgen_c, args.n - 1u); // a column past n repeats the last; never stored")
		w.IfElse(fmt.Sprintf("kgen_vb%d && kgen_kc < args.k", i), func() {
			w.Block(fmt.Sprintf("for (uint kgen_v = 0; kgen_v < KV; kgen_v += %d / sizeof(%s))", ir.StageVecBytes, tb), func() {
				w.P(fmt.Sprintf("const uint4 kgen_raw = *(device const uint4*)(%s + %s);", b.Name, mw.elemAt(bb, "kgen_j", "kgen_kc + kgen_v", "args.k")))
				w.Block(fmt.Sprintf("for (uint kgen_x = 0; kgen_x < %d / sizeof(%s); ++kgen_x)", ir.StageVecBytes, tb), func() {
					w.P(fmt.Sprintf("kgen_w[kgen_c][kgen_v + kgen_x] = float(((thread const %s*)&kgen_raw)[kgen_x]);", tb))
				})
			})
		}, func() {
			w.Block("for (uint kgen_x = 0; kgen_x < KV; ++kgen_x)", func() {
				w.P(fmt.Sprintf("kgen_w[kgen_c][kgen_x] = kgen_kc + kgen_x < args.k ? float(%s[%s]) : 0.0f;", b.Name, mw.elemAt(bb, "kgen_j", "kgen_kc + kgen_x", "args.k")))
			})
		})
	})
}

// gemvRowMajorB loads a row-major B's (stored [k, n]) slice: for each k of
// the slice, the COLS columns of its row in one vector load where n is
// whole vectors and the columns are inside n; zeros past k.
func (mw *matmulWriter) gemvRowMajorB(i int, b ir.Operand) {
	w := mw.Writer
	bb := mw.k.Bindings[b.Binding]
	tb := mw.d.TypeName(bb.DType)
	w.Block("for (uint kgen_x = 0; kgen_x < KV; ++kgen_x)", func() {
		w.P("const uint kgen_kk = kgen_kc + kgen_x;")
		w.IfElse(fmt.Sprintf("kgen_kk < args.k && kgen_vb%d && kgen_col0 + COLS <= args.n", i), func() {
			w.P(fmt.Sprintf("const vec<%s, COLS> kgen_r = *(device const vec<%s, COLS>*)(%s + %s);", tb, tb, b.Name, mw.elemAt(bb, "kgen_kk", "kgen_col0", "args.n")))
			w.Block("for (uint kgen_c = 0; kgen_c < COLS; ++kgen_c)", func() {
				w.P("kgen_w[kgen_c][kgen_x] = float(kgen_r[kgen_c]);")
			})
		}, func() {
			w.Block("for (uint kgen_c = 0; kgen_c < COLS; ++kgen_c)", func() {
				w.P(fmt.Sprintf("kgen_w[kgen_c][kgen_x] = kgen_kk < args.k ? float(%s[%s]) : 0.0f;", b.Name, mw.elemAt(bb, "kgen_kk", "min(kgen_col0 + kgen_c, args.n - 1u)", "args.n")))
			})
		})
	})
}
