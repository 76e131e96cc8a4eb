package ir_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

const topkSpec = `
kernel: router
kind: rowwise
dtypes: [f32, bf16]
compute: f32
inputs: [x]
let:
  - e: exp(x - row_max(x))
outputs:
  - y: e
  - {name: w, dtype: f32, formula: "topk_norm(e, 8)"}
  - {name: ids, dtype: i32, formula: "topk_index(e, 8)"}
`

// TestTopKSchedule: the selection outputs are [rows, 8], out of the write
// stage, computed by the last stage (the key), with the team argmax's
// threadgroup memory and no let cache.
func TestTopKSchedule(t *testing.T) {
	k := mustBuild(t, topkSpec)
	sel := k.TopKSelection()
	if sel == nil || sel.K != 8 || len(sel.Outputs) != 2 || k.FormatExpr(sel.Key) != "e" {
		t.Fatalf("selection %+v", sel)
	}
	outs := k.BindingsOf(ir.Output)
	if !slices.Equal(outs[0].Shape, ir.Shape{"rows", "cols"}) || outs[0].IsTopKOutput() {
		t.Errorf("y: shape %v", outs[0].Shape)
	}
	for _, b := range outs[1:] {
		if !slices.Equal(b.Shape, ir.Shape{"rows", "8"}) || !b.IsTopKOutput() {
			t.Errorf("%s: shape %v, want [rows, 8]", b.Name, b.Shape)
		}
	}
	sts := k.Stages()
	last := sts[len(sts)-1]
	if last.Kind != ir.StageTopK || len(last.Targets) != 1 || last.Targets[0].Name != ir.TopKKeyName {
		t.Errorf("last stage %+v; want the topk stage", last)
	}
	for _, st := range sts {
		if st.Kind == ir.StageWrite && len(st.Targets) != 1 {
			t.Errorf("the write stage computes %d targets; want y alone", len(st.Targets))
		}
	}
	r := k.Rows()
	if want := 8*256/32 + ir.TopKSharedBytes(256); r.ThreadgroupBytes != want || len(r.LetCache) != 0 {
		t.Errorf("threadgroup bytes %d (want %d), let cache %v", r.ThreadgroupBytes, want, r.LetCache)
	}
	if d := strings.Join(r.Describe(k), "\n"); !strings.Contains(d, "8 rounds of a team argmax") {
		t.Errorf("Describe does not name the merge rounds:\n%s", d)
	}
}

// TestTopKEvalRows: the float64 row evaluation selects in the order
// (key descending, NaN first, column ascending) and fills short rows.
func TestTopKEvalRows(t *testing.T) {
	k := mustBuild(t, `
kernel: top
kind: rowwise
dtypes: [f32]
inputs: [x]
outputs:
  - v: topk(x, 4)
  - {name: at, dtype: i32, formula: "topk_index(x, 4)"}
  - wn: topk_norm(x, 4)
`)
	nan := math.NaN()
	vals := k.EvalRows([][]float64{{1, 3, nan, 3, -2}}, nil)
	if got := vals[1]; !slices.Equal(got, []float64{2, 1, 3, 0}) {
		t.Errorf("indices %v, want [2 1 3 0]", got)
	}
	if !math.IsNaN(vals[0][0]) || vals[0][1] != 3 || !math.IsNaN(vals[2][0]) {
		t.Errorf("values %v, weights %v: want NaN first, NaN weights", vals[0], vals[2])
	}
	vals = k.EvalRows([][]float64{{1, 3}}, nil)
	if !slices.Equal(vals[1], []float64{1, 0, -1, -1}) || !math.IsInf(vals[0][3], -1) || !slices.Equal(vals[2], []float64{0.75, 0.25, 0, 0}) {
		t.Errorf("short row: values %v, indices %v, weights %v", vals[0], vals[1], vals[2])
	}
}
