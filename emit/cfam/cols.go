package cfam

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
)

// The column reductions of a rowwise kernel (ir.Cols): the write pass folds
// each [cols] output's term into its chunk's partials (colFold), and a
// second entry point, the combine, folds the partials over the chunks.

// colFold folds term t (the value v, in the compute type) at column col
// into row kgen_chunk of its output's workspace: the chunk's first row
// stores, the later rows add (fmax, fmin). Only this lane touches the
// element, row after row, so no other thread races it.
func (rw *rowWriter) colFold(t ir.Target, v, col string) {
	c := rw.k.ColReductions()
	w := 0
	for i, o := range c.Outputs {
		if o.Out == t.OutIndex {
			w = i
		}
	}
	ws := fmt.Sprintf("%s[%s * args.cols + %s]", ir.WorkspaceName(w), offset(rw.d, "kgen_chunk"), col)
	rw.P(ws, " = kgen_ci == 0u ? ", rw.d.ToFloat(v), " : ", combine(rw.d, c.Outputs[w].Op, ws, rw.d.ToFloat(v)), ";")
}

// combine spells one fold step of op in float: a + b (never contracted:
// Dialect.AddRN), or fmax/fmin (NaN ignored, the first operand kept on
// ties).
func combine(d *Dialect, op ir.ReduceOp, a, b string) string {
	if op.Sums() {
		return d.AddRN(a, b)
	}
	return d.FloatFunc("f"+op.Combine()) + "(" + a + ", " + b + ")"
}

// noteKind names a column-reducing kernel's prose (title_rowwise_cols,
// launch_rowwise_cols): it launches twice.
func (rows) noteKind(k *ir.Kernel, _ *Dialect) string {
	if k.ColReductions() != nil {
		return "rowwise_cols"
	}
	return k.Kind.String()
}

// entries is a column-reducing kernel's second launch (its first is the
// kernel's own entry point): the combine, in both dialects.
func (rows) entries(k *ir.Kernel, d *Dialect) []entry {
	c := k.ColReductions()
	if c == nil {
		return nil
	}
	p := &c.Combine
	pk := *k
	pk.Bindings, pk.Variants = p.Bindings, p.Variants
	return append([]entry{{name: p.Entry, kernel: &pk, comment: p.Comment, body: func(w *Writer) { colCombine(w, k, d) }}}, totalEntry(k, d)...)
}

// colCombine writes the combine's body: column group·ColCombineCols + lane
// of its ColWays ways; way w folds chunks w, w + ColWays, … from the
// identity, then way 0 folds the ways in order, finishes (col_mean divides
// by rows) and stores. rows = 0 leaves the identity: 0, NaN for the mean,
// -inf and +inf.
func colCombine(w *Writer, k *ir.Kernel, d *Dialect) {
	c, u := k.ColReductions(), d.Uint
	for _, ix := range []ThreadIndex{LocalID} {
		if l := d.Threads[ix].Local; l != "" {
			w.P(l)
		}
	}
	w.P(fmt.Sprintf("constexpr %s kWays = %d, kCols = %d; // ir.ColWays, ir.ColCombineCols", u, ir.ColWays, ir.ColCombineCols))
	w.P(d.Shared, " float kgen_part[kWays * kCols];")
	w.P("const ", u, " kgen_lane = kgen_tid % kCols;")
	w.P("const ", u, " kgen_way = kgen_tid / kCols;")
	w.P("const ", u, " kgen_j = ", d.Threads[GroupID].Expr, " * kCols + kgen_lane;")
	w.P("const bool kgen_in = kgen_j < args.cols;")
	outs := k.SegmentBindings(0, ir.Output)
	for i, o := range c.Outputs {
		ws, b := ir.WorkspaceName(i), outs[o.Out]
		id := identity(d, o.Op)
		a, r := fmt.Sprintf("kgen_a%d", i), fmt.Sprintf("kgen_r%d", i)
		w.P("// ", b.Name, " = ", k.Steps[o.Step].Source)
		w.P("float ", a, " = ", id, ";")
		w.Block(fmt.Sprintf("for (%s kgen_c = kgen_way; kgen_in && kgen_c < args.%s; kgen_c += kWays)", u, ir.ChunksField), func() {
			w.P(a, " = ", combine(d, o.Op, a, fmt.Sprintf("%s[%s * args.cols + kgen_j]", ws, offset(d, "kgen_c"))), ";")
		})
		w.P("kgen_part[kgen_way * kCols + kgen_lane] = ", a, ";")
		w.P(d.Barrier)
		w.Block("if (kgen_way == 0u && kgen_in)", func() {
			w.P("float ", r, " = ", id, ";")
			w.Block(fmt.Sprintf("for (%s kgen_w = 0; kgen_w < kWays; ++kgen_w)", u), func() {
				w.P(r, " = ", combine(d, o.Op, r, "kgen_part[kgen_w * kCols + kgen_lane]"), ";")
			})
			v := r
			if o.Op.Divides() {
				v = r + " / " + d.FloatCast("args.rows")
			}
			if o.Whole { // the column's sum, for the total launch (totalSum); rows = 0 leaves no partials
				w.P("if (args.", ir.ChunksField, " > 0u) ", ws, "[kgen_j] = ", v, ";")
				return
			}
			w.P(b.Name, "[kgen_j] = ", storeCvt(d, b, v), ";")
		})
		if i+1 < len(c.Outputs) {
			w.P(d.Barrier, " // the next output reuses kgen_part")
		}
	}
}

// offset widens an index to the dialect's element offset type, where it
// is wider than the index type.
func offset(d *Dialect, i string) string {
	if d.Offset == d.Uint {
		return i
	}
	return "(" + d.Offset + ")" + i
}

// identity spells a reduction's starting value in float.
func identity(d *Dialect, op ir.ReduceOp) string {
	switch id := op.Identity(); {
	case id > 0:
		return d.PosInf
	case id < 0:
		return d.NegInf
	}
	return "0.0f"
}
