package cfam

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/ir"
)

// hipRowBody writes the HIP GEMM's row-owning kernel (ir.Matmul.Rows set):
// a block owns BM whole rows of the output and runs the rowwise stages in
// order. A pass walks n in BN-wide column tiles, recomputing each tile's
// product (the K loop of the tiled kernel) and folding its terms per
// thread and row in column order; then the TX threads of a row, one
// 16-lane group of a wavefront, combine by a shuffle-xor butterfly, which
// leaves the same value in every lane. Per-row values (lets and
// reductions) live in arrays over the thread's TM rows. The write pass
// recomputes the tiles once more and stores every output. Nothing is kept
// between passes but the per-row values, so any n takes one launch (the
// price: the product once per pass); rows past m fold nothing but every
// thread reaches every barrier and shuffle.
func (mw *matmulWriter) hipRowBody() {
	w, u := mw.Writer, mw.d.Uint
	mw.hipGemmHead()
	w.P("const ", u, " kgen_row0 = ", mw.tg, " * BM; // the block's rows; it owns every column")
	mw.paramLocals()
	mw.accAt = func(i int) string { return fmt.Sprintf("kgen_acc%d[kgen_tr][kgen_tc]", i) }
	w.P("// Per-row values of the thread's TM rows.")
	r := mw.mm.Rows
	for _, st := range mw.k.Stages() {
		if st.Kind == ir.StageRowLets {
			for _, t := range st.Targets {
				w.P(hipRowType(t.Bool, t.Int), " kgen_row_", t.Name, "[TM];")
			}
		}
	}
	for i := range r.Reductions {
		w.P("C kgen_row_", ir.ReductionName(i), "[TM];")
	}
	for _, st := range mw.k.Stages() {
		switch st.Kind {
		case ir.StageRowLets:
			w.P("// ", st.Comment, ".")
			w.Block("for ("+u+" kgen_tr = 0; kgen_tr < TM; ++kgen_tr)", func() {
				mw.hipRowLocals(st)
				var outs []string
				for _, t := range st.Targets {
					w.P(hipRowType(t.Bool, t.Int), " ", t.Name, ";")
					outs = append(outs, t.Name)
				}
				w.P(mw.rowCall(st, outs))
				for _, t := range st.Targets {
					w.P("kgen_row_", t.Name, "[kgen_tr] = ", t.Name, ";")
				}
			})
		case ir.StagePass:
			mw.hipRowPass(st)
		case ir.StageWrite:
			w.P("// Pass ", st.Level, ": write, the product recomputed tile by tile.")
			outs := mw.k.BindingsOf(ir.Output)
			var names []string
			for _, b := range outs {
				names = append(names, "kgen_o_"+b.Name)
			}
			mw.hipColumnTiles(func() {
				mw.hipRowLocals(st)
				w.P("C ", strings.Join(names, ", "), ";")
				w.P(mw.rowCall(st, names))
				for i, b := range outs {
					w.P(b.Name, "[kgen_i * args.n + kgen_j] = ", mw.d.Cvt(mw.d.TypeName(b.DType), names[i]), ";")
				}
			})
		}
	}
}

// hipRowPass writes one reduction pass: each of its reductions folded per
// row over the column tiles, then combined across the row's threads.
func (mw *matmulWriter) hipRowPass(st ir.Stage) {
	w, u := mw.Writer, mw.d.Uint
	r := mw.mm.Rows
	w.P("// Pass ", st.Level, ", the product recomputed tile by tile.")
	var reds []int
	var terms []string
	for i, red := range r.Reductions {
		if red.Level == st.Level {
			reds = append(reds, i)
			terms = append(terms, fmt.Sprintf("kgen_t%d", i))
			w.P(fmt.Sprintf("float kgen_a%d[TM]; // %s(%s)", i, red.Op.Func(), mw.k.FormatExpr(red.Arg)))
			w.P(fmt.Sprintf("for (%s kgen_tr = 0; kgen_tr < TM; ++kgen_tr) kgen_a%d[kgen_tr] = %s;", u, i, identity(mw.d, red.Op)))
		}
	}
	mw.hipColumnTiles(func() {
		mw.hipRowLocals(st)
		w.P("C ", strings.Join(terms, ", "), ";")
		w.P(mw.rowCall(st, terms))
		for j, i := range reds {
			w.P(hipFold(r.Reductions[i].Op, fmt.Sprintf("kgen_a%d[kgen_tr]", i), terms[j]))
		}
	})
	w.P("// Each row's TX threads are consecutive lanes of one wavefront: a butterfly over them.")
	w.Block("for ("+u+" kgen_tr = 0; kgen_tr < TM; ++kgen_tr)", func() {
		for _, i := range reds {
			op := r.Reductions[i].Op
			a := fmt.Sprintf("kgen_a%d[kgen_tr]", i)
			w.P("float kgen_v", i, " = ", a, ";")
			w.P("for (", mw.d.LaneOffset, " kgen_o = TX / 2; kgen_o > 0; kgen_o /= 2) ",
				hipFold(op, fmt.Sprint("kgen_v", i), mw.d.ShuffleXor(fmt.Sprint("kgen_v", i), "kgen_o")))
			v := fmt.Sprint("kgen_v", i)
			if op.Divides() {
				v += " / float(args.n)"
			}
			w.P("kgen_row_", ir.ReductionName(i), "[kgen_tr] = ", v, ";")
		}
	})
}

// hipColumnTiles writes the loop over the row's column tiles: each tile's
// product, then body at each element of the thread's microtile in range.
// Its bounds are the block's, so every thread reaches every barrier.
func (mw *matmulWriter) hipColumnTiles(body func()) {
	mw.Block("for ("+mw.d.Uint+" kgen_col0 = 0; kgen_col0 < args.n; kgen_col0 += BN)", func() {
		mw.hipProduct()
		mw.hipElements(body)
	})
}

// hipRowLocals declares, inside the element or row loop, the per-row
// values stage st reads, from the arrays of row kgen_tr.
func (mw *matmulWriter) hipRowLocals(st ir.Stage) {
	for _, a := range st.Args {
		if a.Kind == ir.ArgRowLet || a.Kind == ir.ArgReduction {
			mw.P("const ", hipRowType(a.Bool, a.Int), " ", a.Name, " = kgen_row_", a.Name, "[kgen_tr];")
		}
	}
}

// hipFold is acc folded with term: a sum, or fmax/fmin (a NaN accumulator
// takes the term, ir.ReduceOp.Fold).
func hipFold(op ir.ReduceOp, acc, term string) string {
	if op.Sums() {
		return acc + " += " + term + ";"
	}
	return acc + " = __builtin_f" + op.Combine() + "f(" + acc + ", " + term + ");"
}

// hipRowType spells a per-row value's type.
func hipRowType(isBool, isInt bool) string {
	switch {
	case isBool:
		return "bool"
	case isInt:
		return "int"
	}
	return "C"
}
