package cfam

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
)

// The top-k selection of a rowwise kernel (ir.TopK, docs/topk.md), in pass
// P+1 after the write's stores: each lane walks its elements once, calls
// the topk stage for each key and keeps its own best k, sorted by (rank
// descending, column ascending) (kgen_topk_insert: registers or local
// memory, k ≤ 64). Then k rounds merge the lanes' lists: round s's team
// argmax (kgen_team_topk) of the lanes' heads is slot s, and the lane that
// held it moves to its next candidate. The team's first lane stores slot
// s; topk_norm's weights wait for the sum of the k keys, which that lane
// keeps in kgen_tv.

// topkHelpers is the selection's block (templates/<dialect>/topk.tmpl)
// when the kernel selects.
func topkHelpers(r *ir.Rows, d *Dialect) []helper {
	if r.TopK == nil {
		return nil
	}
	return []helper{{name: "topk", data: teamData{Wave: d.Wave, HalfWave: d.HalfWave}}}
}

// topkShared declares the team argmax's partials, a rank and a column per
// simdgroup (ir.TopKSharedBytes), at the kernel's scope.
func (rw *rowWriter) topkShared() {
	if rw.r.TopK == nil {
		return
	}
	rw.P(rw.d.Shared, " ", rw.d.Uint, " kgen_tkr[", rw.d.Waves("kThreads"), "]; // the top-k rounds' best rank per ", rw.d.SimdGroup)
	rw.P(rw.d.Shared, " ", rw.d.Uint, " kgen_tkc[", rw.d.Waves("kThreads"), "]; // and its column")
}

// topkRounds writes the lanes' walk, the k merge rounds and the stores of
// the selection outputs when the kernel has the topk stage (the last;
// writePass leaves rw.si at the write stage, so it is looked up by kind).
func (rw *rowWriter) topkRounds() {
	if len(rw.sts) == 0 || rw.sts[len(rw.sts)-1].Kind != ir.StageTopK {
		return
	}
	st := rw.sts[len(rw.sts)-1]
	t, d, u := rw.r.TopK, rw.d, rw.d.Uint
	norm := false
	for _, o := range t.Outputs {
		norm = norm || o.What == ir.TopKNorm
	}
	rw.P(fmt.Sprintf("// Pass %d: the top-%d selection of %s. Each lane keeps its own best %d (rank descending, column ascending), sorted, in one walk of the row.", rw.r.Passes+1, t.K, rw.k.FormatExpr(t.Key), t.K))
	rw.P(u, " kgen_kr[", t.K, "], kgen_kc[", t.K, "]; // this lane's candidates' ranks and columns")
	rw.P(u, " kgen_kn = 0u; // how many")
	rw.rounds = true // pass P+1's loops, without its stores
	d.RowLoops(rw, rw.r.Passes+1, func(vec, _ bool) {
		col := "kgen_j"
		if vec {
			col = "(kgen_j0 + kgen_e)"
		}
		rw.P("C ", ir.TopKKeyName, ";")
		rw.P(rw.stageCallAt(st, []string{ir.TopKKeyName}, vec))
		rw.P("kgen_topk_insert(kgen_topk_rank(", d.ToFloat(ir.TopKKeyName), "), ", col, ", kgen_kr, kgen_kc, kgen_kn, ", t.K, "u);")
	})
	rw.rounds = false
	if norm {
		rw.P("float kgen_tv[", t.K, "]; // the selected keys, for topk_norm's sum (the team's first lane)")
		rw.P(u, " kgen_tn = 0u; // the slots filled: min(k, cols)")
	}
	rw.P(fmt.Sprintf("// Then %d rounds merge the lanes' lists: the team argmax of their heads is slot s; its lane moves to its next candidate.", t.K))
	rw.P(u, " kgen_kh = 0u; // this lane's head: its first candidate not yet taken")
	rw.Block(fmt.Sprintf("for (%s kgen_tr = 0; kgen_tr < %du; ++kgen_tr)", u, t.K), func() {
		rw.P(u, " kgen_br = kgen_kh < kgen_kn ? kgen_kr[kgen_kh] : 0u; // rank 0: none")
		rw.P(u, " kgen_bc = kgen_kh < kgen_kn ? kgen_kc[kgen_kh] : 0xffffffffu;")
		rw.P("const ", u, " kgen_mine = kgen_bc;")
		rw.P("kgen_team_topk(kgen_br, kgen_bc, kgen_tkr, kgen_tkc, kgen_width, kgen_team, kgen_simd, kgen_simd_lane);")
		rw.P("kgen_kh += kgen_br != 0u && kgen_bc == kgen_mine ? 1u : 0u; // a row's columns are distinct: one lane held the winner")
		rw.Block("if (kgen_lane == 0 && kgen_row < "+rw.rows+")", func() {
			rw.P("const float kgen_v = kgen_topk_value(kgen_br); // -inf past a short row")
			if norm {
				rw.P("kgen_tv[kgen_tr] = kgen_v;")
				rw.P("kgen_tn += kgen_br != 0u ? 1u : 0u;")
			}
			for _, o := range t.Outputs {
				b := rw.k.SegmentBindings(0, ir.Output)[o.Out]
				switch o.What {
				case ir.TopKValues:
					rw.P(rw.topkAt(b, "kgen_tr"), " = ", storeCvt(d, b, "kgen_v"), ";")
				case ir.TopKIndex:
					rw.P(rw.topkAt(b, "kgen_tr"), " = kgen_br == 0u ? -1 : (int)kgen_bc;")
				}
			}
		})
	})
	if !norm {
		return
	}
	rw.Block("if (kgen_lane == 0 && kgen_row < "+rw.rows+")", func() {
		rw.P("// topk_norm: the keys over their sum, in float, summed in slot order; empty slots weigh 0.")
		rw.P("float kgen_tsum = 0.0f;")
		rw.Block(fmt.Sprintf("for (%s kgen_tr = 0; kgen_tr < kgen_tn; ++kgen_tr)", u), func() {
			rw.P("kgen_tsum += kgen_tv[kgen_tr];")
		})
		rw.Block(fmt.Sprintf("for (%s kgen_tr = 0; kgen_tr < %du; ++kgen_tr)", u, t.K), func() {
			for _, o := range t.Outputs {
				if o.What == ir.TopKNorm {
					b := rw.k.SegmentBindings(0, ir.Output)[o.Out]
					rw.P(rw.topkAt(b, "kgen_tr"), " = ", storeCvt(d, b, "(kgen_tr < kgen_tn ? kgen_tv[kgen_tr] / kgen_tsum : 0.0f)"), ";")
				}
			}
		})
	})
}

// topkAt is slot s of the row's k values in selection output b.
func (rw *rowWriter) topkAt(b ir.Binding, s string) string {
	row := "kgen_row"
	if rw.d.Offset != rw.d.Uint {
		row = "(" + rw.d.Offset + ")kgen_row"
	}
	return fmt.Sprintf("%s[%s * %du + %s]", rw.k.FormulaName(b), row, rw.r.TopK.K, s)
}
