package cfam

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
)

// totalEntry is the third launch of a kernel with total_sum outputs
// (ir.Cols.Total), none otherwise.
func totalEntry(k *ir.Kernel, d *Dialect) []entry {
	c := k.ColReductions()
	if !c.HasTotal() {
		return nil
	}
	p := &c.Total
	pk := *k
	pk.Bindings, pk.Variants = p.Bindings, p.Variants
	return []entry{{name: p.Entry, kernel: &pk, comment: p.Comment, body: func(w *Writer) { totalSum(w, k, d) }}}
}

// totalSum writes the total launch's body: one group of ir.TotalWays
// threads; way t folds the column sums the combine left in row 0 of the
// workspace, columns t, t + TotalWays, … in order from 0, then way 0 folds
// the ways in order and stores. rows = 0 (no partials) gives 0.
func totalSum(w *Writer, k *ir.Kernel, d *Dialect) {
	c, u := k.ColReductions(), d.Uint
	if l := d.Threads[LocalID].Local; l != "" {
		w.P(l)
	}
	w.P(fmt.Sprintf("constexpr %s kWays = %d; // ir.TotalWays", u, ir.TotalWays))
	w.P(d.Shared, " float kgen_part[kWays];")
	outs := k.SegmentBindings(0, ir.Output)
	first := true
	for i, o := range c.Outputs {
		if !o.Whole {
			continue
		}
		if !first {
			w.P(d.Barrier, " // the next output reuses kgen_part")
		}
		first = false
		ws, b := ir.WorkspaceName(i), outs[o.Out]
		a, r := fmt.Sprintf("kgen_a%d", i), fmt.Sprintf("kgen_r%d", i)
		w.P("// ", b.Name, " = ", k.Steps[o.Step].Source)
		w.P("float ", a, " = 0.0f;")
		w.Block(fmt.Sprintf("for (%s kgen_j = kgen_tid; args.%s > 0u && kgen_j < args.cols; kgen_j += kWays)", u, ir.ChunksField), func() {
			w.P(a, " = ", d.AddRN(a, ws+"[kgen_j]"), ";")
		})
		w.P("kgen_part[kgen_tid] = ", a, ";")
		w.P(d.Barrier)
		w.Block("if (kgen_tid == 0u)", func() {
			w.P("float ", r, " = 0.0f;")
			w.Block(fmt.Sprintf("for (%s kgen_w = 0; kgen_w < kWays; ++kgen_w)", u), func() {
				w.P(r, " = ", d.AddRN(r, "kgen_part[kgen_w]"), ";")
			})
			w.P(b.Name, "[0] = ", storeCvt(d, b, r), ";")
		})
	}
}
