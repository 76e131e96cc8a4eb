package cfam

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/launch"
)

// The tiled kernel's staging (ir.Staging): each operand's K step in
// threadgroup memory in its storage type, laid out as stored with padded
// rows, copied in 16-byte chunks where the rows allow, and loaded into
// fragments of its own type (transposed for a column-major operand).

// slot is one operand's staged tile in the tiled kernel.
type slot struct {
	o    ir.Operand
	st   ir.Staging
	tile string // the tile's pointer (kgen_as, kgen_bs<i>)
	ld   string // its padded row length in elements (a constexpr)
	vec  string // the uniform: rows are whole 16-byte chunks
	typ  string // the staged element type
	// r0, c0 are the tile's first row and column as stored; rLim, cLim the
	// operand's rows and columns as stored (cLim is the row length).
	r0, c0, rLim, cLim string
}

// slots are A's and each B's staged tiles on tile t.
func (mw *matmulWriter) slots(t ir.Tile) []slot {
	mm := mw.mm
	a := slot{o: mm.A, st: mm.StageA(t), tile: "kgen_as", ld: "kgen_lda", vec: "kgen_va",
		r0: "kgen_row0", c0: "kgen_k0", rLim: "args.m", cLim: "args.k"}
	if mm.A.ColMajor {
		a.r0, a.c0, a.rLim, a.cLim = a.c0, a.r0, a.cLim, a.rLim
	}
	out := []slot{a}
	for i, b := range mm.B {
		s := slot{o: b, st: mm.StageB(i, t), tile: fmt.Sprint("kgen_bs", i), ld: fmt.Sprint("kgen_ldb", i), vec: fmt.Sprint("kgen_vb", i),
			r0: "kgen_k0", c0: "kgen_col0", rLim: "args.k", cLim: "args.n"}
		if b.ColMajor {
			s.r0, s.c0, s.rLim, s.cLim = s.c0, s.r0, s.cLim, s.rLim
		}
		out = append(out, s)
	}
	for i := range out {
		out[i].typ = "float"
		if !out[i].st.Float {
			out[i].typ = mw.d.TypeName(mw.k.Bindings[out[i].o.Binding].DType)
		}
	}
	return out
}

// declareTiled writes the kernel-scope threadgroup memory of tile t (or
// of any smaller tile): each operand's 16-byte-aligned storage of padded
// rows, and an f32 BM×BN accumulator tile per B for the epilogue.
func (mw *matmulWriter) declareTiled(t ir.Tile) {
	w := mw.Writer
	mw.declareStaged(mw.slots(t))
	for i, b := range mw.mm.B {
		w.P(fmt.Sprintf("threadgroup float kgen_cs%d[%d]; // %s, [BM][BN], for the epilogue", i, t.BM*t.BN, b.Acc))
	}
}

// declareTiles is declareTiled for a kernel whose bodies run on any of
// tiles ts: each staged tile's storage the largest of its sizes.
func (mw *matmulWriter) declareTiles(ts ...ir.Tile) {
	w := mw.Writer
	var all [][]slot
	for _, t := range ts {
		all = append(all, mw.slots(t))
	}
	for i, s := range all[0] {
		var sizes, shapes []string
		for _, sl := range all {
			st := sl[i].st
			sizes = append(sizes, fmt.Sprintf("%d * (%d + %d / sizeof(%s)) * sizeof(%s) / 16", st.Rows, st.Cols, ir.StagePadBytes, s.typ, s.typ))
			shapes = append(shapes, fmt.Sprintf("[%d][%d]", st.Rows, st.Cols))
		}
		w.P(fmt.Sprintf("// %s's tile as stored, %s of %s, each row padded by %d bytes against bank conflicts.", s.o.Name, strings.Join(shapes, " or "), s.typ, ir.StagePadBytes))
		most := sizes[0]
		for _, x := range sizes[1:] {
			most = fmt.Sprintf("(%s) > (%s) ? (%s) : (%s)", most, x, most, x)
		}
		w.P(fmt.Sprintf("threadgroup uint4 %s_raw[%s];", s.tile, most))
	}
	most := 0
	for _, t := range ts {
		most = max(most, t.BM*t.BN)
	}
	for i, b := range mw.mm.B {
		w.P(fmt.Sprintf("threadgroup float kgen_cs%d[%d]; // %s, [BM][BN], for the epilogue", i, most, b.Acc))
	}
}

// declareStaged writes the kernel-scope storage of the staged tiles:
// 16-byte-aligned, of padded rows.
func (mw *matmulWriter) declareStaged(slots []slot) {
	for _, s := range slots {
		mw.P(fmt.Sprintf("// %s's tile as stored, [%d][%d] of %s, each row padded by %d bytes against bank conflicts.", s.o.Name, s.st.Rows, s.st.Cols, s.typ, ir.StagePadBytes))
		mw.P(fmt.Sprintf("threadgroup uint4 %s_raw[%d * (%d + %d / sizeof(%s)) * sizeof(%s) / 16];", s.tile, s.st.Rows, s.st.Cols, ir.StagePadBytes, s.typ, s.typ))
	}
}

// declare writes s's padded row length, its element pointer into the
// storage declareTiled declared, and the uniform vector check.
func (mw *matmulWriter) declare(s slot) {
	w, t := mw.Writer, s.typ
	w.P(fmt.Sprintf("constexpr uint %s = %d + %d / sizeof(%s); // %s's padded rows", s.ld, s.st.Cols, ir.StagePadBytes, t, s.o.Name))
	w.P(fmt.Sprintf("threadgroup %s* %s = (threadgroup %s*)%s_raw;", t, s.tile, t, s.tile))
	if s.st.Vector {
		w.P(fmt.Sprintf("const bool %s = %s %% (%d / sizeof(%s)) == 0; // rows of whole %d-byte chunks", s.vec, s.cLim, ir.StageVecBytes, t, ir.StageVecBytes))
	}
}

// stageSlot writes one K step's copy of s into its tile, zeros outside
// the operand.
func (mw *matmulWriter) stageSlot(s slot) {
	w, t, st := mw.Writer, s.typ, s.st
	b := mw.k.Bindings[s.o.Binding]
	at := func(c string) string { return mw.elemAt(b, "kgen_r", c, s.cLim) }
	if !st.Vector {
		w.Block(fmt.Sprintf("for (uint kgen_e = %s; kgen_e < %du; kgen_e += kThreads)", mw.tid, st.Rows*st.Cols), func() {
			w.P(fmt.Sprintf("const uint kgen_tr = kgen_e / %du, kgen_tc = kgen_e %% %du;", st.Cols, st.Cols))
			w.P("const uint kgen_r = ", s.r0, " + kgen_tr, kgen_c = ", s.c0, " + kgen_tc;")
			val := t + "(" + s.o.Name + "[" + at("kgen_c") + "])"
			if s.o.Quant != nil {
				val = mw.quantAt(s.o, "kgen_r", "kgen_c") // stored [n, k]: row n, column k
			}
			w.P(fmt.Sprintf("%s[kgen_tr * %s + kgen_tc] = (kgen_r < %s && kgen_c < %s) ? %s : %s(0);", s.tile, s.ld, s.rLim, s.cLim, val, t))
		})
		return
	}
	w.Bare(func() {
		w.P(fmt.Sprintf("constexpr uint kgen_v = %d / sizeof(%s), kgen_chunks = %du / kgen_v; // elements per chunk, chunks per row", ir.StageVecBytes, t, st.Cols))
		w.Block(fmt.Sprintf("for (uint kgen_e = %s; kgen_e < %du * kgen_chunks; kgen_e += kThreads)", mw.tid, st.Rows), func() {
			w.P("const uint kgen_tr = kgen_e / kgen_chunks, kgen_tc = kgen_e % kgen_chunks * kgen_v;")
			w.P("const uint kgen_r = ", s.r0, " + kgen_tr, kgen_c = ", s.c0, " + kgen_tc;")
			w.P(fmt.Sprintf("threadgroup %s* kgen_dst = %s + kgen_tr * %s + kgen_tc;", t, s.tile, s.ld))
			w.IfElse(fmt.Sprintf("%s && kgen_r < %s && kgen_c < %s", s.vec, s.rLim, s.cLim), func() {
				w.P(fmt.Sprintf("*(threadgroup uint4*)kgen_dst = *(device const uint4*)(%s + %s);", s.o.Name, at("kgen_c")))
			}, func() {
				w.Block("for (uint kgen_x = 0; kgen_x < kgen_v; ++kgen_x)", func() {
					w.P(fmt.Sprintf("kgen_dst[kgen_x] = (kgen_r < %s && kgen_c + kgen_x < %s) ? %s[%s] : %s(0);", s.rLim, s.cLim, s.o.Name, at("kgen_c + kgen_x"), t))
				})
			})
		})
	})
}

// fragLoad writes the load of the 8×8 fragment at logical (row, col) of
// s's operand (A: m, k; B: k, n) into dst: a column-major operand's tile
// is stored transposed, so its load transposes back.
func (mw *matmulWriter) fragLoad(dst string, s slot, row, col string) {
	if s.o.ColMajor {
		mw.P(fmt.Sprintf("simdgroup_load(%s, %s, %s, ulong2(%s, %s), true);", dst, s.tile, s.ld, row, col))
		return
	}
	mw.P(fmt.Sprintf("simdgroup_load(%s, %s, %s, ulong2(%s, %s));", dst, s.tile, s.ld, col, row))
}

// bigBody writes a tiled kernel with a big tile (ir.Matmul.Big): the
// threadgroup memory of both tiles, the rule's choice, uniform for the
// launch, then the small tile's body or the big one's.
func (mw *matmulWriter) bigBody() {
	w, mm := mw.Writer, mw.mm
	w.P("using C = float;")
	mw.declareTiles(mm.Tile, *mm.Big, *mm.Mid)
	w.P(fmt.Sprintf("// %dx%d tiles where the launcher's grid has them (ir.Matmul.BigRule: %s),", mm.Big.BM, mm.Big.BN, mm.BigRule()))
	w.P(fmt.Sprintf("// %dx%d tiles for a few rows (ir.Matmul.MidRule: %s).", mm.Mid.BM, mm.Mid.BN, mm.MidRule()))
	w.P("const bool kgen_big = ", cSize(mm.BigRule()), " != 0u, kgen_mid = ", cSize(mm.MidRule()), " != 0u;")
	epilogue := func() { mw.epilogue(mw.tid) }
	w.P("if (!kgen_big && !kgen_mid) {")
	w.Indent(func() { mw.tiledCore(mm.Tile, "the epilogue", epilogue) })
	w.P("} else if (kgen_mid) {")
	w.Indent(func() { mw.tiledCore(*mm.Mid, "the epilogue", epilogue) })
	w.P("} else {")
	w.Indent(func() { mw.tiledCore(*mm.Big, "the epilogue", epilogue) })
	w.P("}")
}

// cSize spells size expression e in MSL over the args struct's uints.
func cSize(e *launch.Expr) string {
	switch e.Op {
	case launch.Lit:
		return fmt.Sprint(e.Value, "u")
	case launch.Var:
		return "args." + e.Name
	case launch.Add:
		var parts []string
		for _, a := range e.Args {
			parts = append(parts, cSize(a))
		}
		return "(" + strings.Join(parts, " + ") + ")"
	case launch.Mul:
		return "(" + cSize(e.Args[0]) + " * " + cSize(e.Args[1]) + ")"
	case launch.Div:
		return "(" + cSize(e.Args[0]) + " / " + cSize(e.Args[1]) + ")"
	case launch.CeilDiv:
		return "((" + cSize(e.Args[0]) + " + " + cSize(e.Args[1]) + " - 1u) / " + cSize(e.Args[1]) + ")"
	case launch.Min:
		return "min(" + cSize(e.Args[0]) + ", " + cSize(e.Args[1]) + ")"
	case launch.Max:
		return "max(" + cSize(e.Args[0]) + ", " + cSize(e.Args[1]) + ")"
	}
	panic(fmt.Sprintf("cSize: %s has no MSL spelling here", e))
}
