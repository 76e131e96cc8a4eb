package ir_test

import (
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestMatmulIndices: row, col, m and n are integers in every matmul form —
// the plain epilogue, the row-owning kernel's stages (row in a per-row let,
// col in the per-element ones), the split's phases (the same stages) and a
// chain's score stage — passed to exactly the stages that read them, and
// evaluated by the float64 reference at the element given.
func TestMatmulIndices(t *testing.T) {
	head := "kernel: k\nkind: matmul\ndtypes: [f32]\nmatmul: {a: x, b: w}\n"
	indexArgs := func(st ir.Stage) string {
		var out []string
		for _, a := range st.Args {
			if a.Kind == ir.ArgIndex {
				if !a.Int {
					t.Errorf("%s: index %s is not an int", st.Name, a.Name)
				}
				out = append(out, a.Name)
			}
		}
		return strings.Join(out, ",")
	}
	k := mustBuild(t, head+"outputs:\n  - y: select(col > row, 0, acc) + f32(m - n)\n")
	if got := indexArgs(k.Stages()[0]); got != "row,col,m,n" {
		t.Errorf("epilogue indices %q", got)
	}
	k = mustBuild(t, head+"let:\n  - r: f32(row) / f32(m)\n  - e: select(col > row, 0, acc)\noutputs:\n  - y: e / row_sum(e) + r\n")
	if k.Matmul().Rows == nil || k.Matmul().Split == nil {
		t.Fatal("want a row-owning matmul with a split form")
	}
	got := map[ir.StageKind]string{}
	for _, st := range k.Stages() {
		got[st.Kind] += indexArgs(st) + ";"
	}
	if got[ir.StagePass] != "row,col;" || got[ir.StageRowLets] != "row,m;" || got[ir.StageWrite] != "row,col;" {
		t.Errorf("row-owning indices %v", got)
	}
	k = mustBuild(t, "kernel: k\nkind: matmul\ndtypes: [f32]\nmatmul: {a: q, b: kc, then: v}\nparams:\n  - {name: d, type: i32}\n"+
		"let:\n  - s: select(col > row + d, -inf, acc)\n  - e: exp(s - row_max(s))\noutputs:\n  - o: acc2 / row_sum(e)\n")
	if sts := k.Stages(); indexArgs(sts[0]) != "row,col" || indexArgs(sts[1]) != "" {
		t.Errorf("chain indices %q, %q", indexArgs(sts[0]), indexArgs(sts[1]))
	}
	k = mustBuild(t, head+"outputs:\n  - y: acc + f32(row * 100 + col * 10 + m - n)\n")
	if v, _ := k.EvalEpilogueBound(ir.MatmulAt{Row: 1, Col: 2, M: 7, N: 3}, nil, []float64{1}, []float64{0}, nil, ir.Rounding{}); v[0] != 125 {
		t.Errorf("indices evaluate to %v, want 125", v)
	}
}
