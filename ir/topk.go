package ir

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/expr"
)

// TopK is a rowwise kernel's top-k selection (docs/topk.md): outputs whose
// whole formula is topk(key, k), topk_index(key, k) or topk_norm(key, k),
// all with the same key and k. Each is a [rows, k] tensor: slot s of a row
// holds the element ranked s-th in the order (key descending, column
// ascending), NaN above +inf, −0 equal to +0 — a total order, so the
// selection is unique and every backend and the Go reference find the
// same columns whenever their keys agree bit for bit.
//
// The kernels select in pass P+1 (beside the write of any per-element
// output): each lane keeps its own best k elements, sorted, in registers or
// local memory (kgen_topk_insert), in one walk of the row; then k rounds of
// a team argmax (kgen_team_topk) over the lanes' heads merge the lists, the
// winning lane moving to its next candidate. Slots past a row of fewer
// than k columns hold −inf (topk), −1 (topk_index) and 0 (topk_norm).
type TopK struct {
	K       int
	Key     *Expr // per element: the first selection output's step Expr
	Outputs []TopKOutput
}

// TopKWhat is what a selection output holds.
type TopKWhat int

// The selection outputs.
const (
	TopKValues TopKWhat = iota // topk: the keys themselves
	TopKIndex                  // topk_index: the columns, i32
	TopKNorm                   // topk_norm: the keys over their sum (f32, in slot order)
)

var topkFuncs = map[string]TopKWhat{"topk": TopKValues, "topk_index": TopKIndex, "topk_norm": TopKNorm}

// Func is the formula function of the output kind.
func (w TopKWhat) Func() string {
	for n, x := range topkFuncs {
		if x == w {
			return n
		}
	}
	return "?"
}

// TopKOutput is one selection output. Its step's Expr is the key; the
// step's Source keeps the call.
type TopKOutput struct {
	What TopKWhat
	Step int      // index into Kernel.Steps
	Out  int      // index among the outputs
	Pos  diag.Pos // where the spec calls it
}

// TopKKeyName is the topk stage's one target: the key of one element.
const TopKKeyName = "kgen_key"

// TopKSelection returns a rowwise kernel's top-k selection, nil without
// one (and for other kinds).
func (k *Kernel) TopKSelection() *TopK {
	if r, ok := k.Schedule.(*Rows); ok {
		return r.TopK
	}
	return nil
}

// OutputOf returns the selection output computing step i, if any.
func (t *TopK) OutputOf(step int) (TopKOutput, bool) {
	if t != nil {
		for _, o := range t.Outputs {
			if o.Step == step {
				return o, true
			}
		}
	}
	return TopKOutput{}, false
}

// Has reports whether step i is a selection output.
func (t *TopK) Has(step int) bool {
	_, ok := t.OutputOf(step)
	return ok
}

// IsTopKOutput reports whether the tensor is a [rows, k] selection output
// (its last dimension is the baked k, a number).
func (b Binding) IsTopKOutput() bool {
	if b.Role != Output || len(b.Shape) != 2 {
		return false
	}
	_, err := strconv.Atoi(b.Shape[1])
	return err == nil
}

// topkOutputs takes the selection outputs out of the scheduler's way
// before it classifies, as colOutputs does: each output whose formula is
// one topk call becomes a TopKOutput whose step computes the key. A call
// anywhere else is refused where classify meets it (misplacedTopK).
func (sc *scheduler) topkOutputs() {
	if sc.k.Kind != Rowwise {
		return
	}
	t := &TopK{}
	for i, st := range sc.k.Steps {
		e := st.Expr
		what, ok := topkFuncs[e.Func]
		if !st.Output || e.Op != OpCall || !ok || len(e.Args) != 2 {
			continue
		}
		o := sc.k.OutputIndex(i)
		pos := sc.s.Outputs[o].Map.At(e.Off)
		kv, err := strconv.Atoi(e.Args[1].Text)
		if err != nil || kv < 1 || kv > expr.MaxTopK {
			continue // reported by the formula checker
		}
		if what == TopKIndex && sc.s.Outputs[o].DType.Type != dtype.I32 {
			sc.diags.Addf(pos, "%s: the column indices are stored as i32 (−1 in slots past a short row); declare {name: %s, dtype: i32, formula: …}", e.Func, st.Name)
		}
		if len(t.Outputs) == 0 {
			t.K, t.Key = kv, e.Args[0]
		} else if kv != t.K || sc.k.FormatExpr(e.Args[0]) != sc.k.FormatExpr(t.Key) {
			sc.diags.Addf(pos, "%s(%s, %d) is a second selection: every top-k output of a kernel shares one key and k (here %s, %d); use a let for the key, or write one kernel per selection",
				e.Func, sc.k.FormatExpr(e.Args[0]), kv, sc.k.FormatExpr(t.Key), t.K)
		}
		t.Outputs = append(t.Outputs, TopKOutput{What: what, Step: i, Out: o, Pos: pos})
		sc.k.Steps[i].Expr = e.Args[0]
	}
	if len(t.Outputs) > 0 {
		sc.rows.TopK = t
	}
}

// misplacedTopK refuses a selection call that is not an output's whole
// formula: classify meets only those, topkOutputs took the others. (A
// matmul's epilogue never gets here: the formula checker refuses topk
// there, expr.Checker.NoTopK.)
func (sc *scheduler) misplacedTopK(e *Expr) bool {
	if _, ok := topkFuncs[e.Func]; !ok {
		return false
	}
	sc.diags.Addf(sc.cur.Map.At(e.Off), "%s is k values per row, known only once the whole row is ranked: it must be an output's whole formula (top: %s(p, 8)), not part of a let or of a larger expression", e.Func, e.Func)
	return true
}

// checkTopKKey refuses a key that does not vary along the row (every
// column would tie), and a key of row vectors alone (the same for every
// row).
func (sc *scheduler) checkTopKKey(o TopKOutput, in valueInfo) {
	switch {
	case !in.elem:
		sc.diags.Addf(o.Pos, "%s of a per-row value: every column ties; rank an expression of the row's elements", o.What.Func())
	case !in.tensor:
		sc.diags.Addf(o.Pos, "%s of row-shaped inputs only: the selection is the same for every row; compute it once outside the kernel, or rank an expression of a [rows, cols] input", o.What.Func())
	}
}

// checkTopK refuses what selections do not support: segments, and column
// reductions in the same kernel (each changes the row loop).
func (sc *scheduler) checkTopK() {
	t := sc.rows.TopK
	if t == nil {
		return
	}
	o := t.Outputs[0]
	if len(sc.k.Segments) > 0 {
		sc.diags.Addf(o.Pos, "%s: top-k selections are not supported in a kernel with segments; write one kernel per segment", o.What.Func())
	}
	if c := sc.rows.Cols; c != nil {
		sc.diags.Addf(o.Pos, "%s: a top-k selection and a column reduction (%s) in one kernel are not supported; write two kernels", o.What.Func(), c.Outputs[0].Func())
	}
}

// layOutTopK makes the selection outputs [rows, k] tensors, gives the
// kernel the threadgroup memory of the team argmax (a column and a rank
// per simdgroup) and turns CUDA's let cache off: the selection calls its
// own stage, which takes the inputs, not cached lets.
func layOutTopK(k *Kernel, r *Rows) {
	t := r.TopK
	if t == nil {
		return
	}
	for _, o := range t.Outputs {
		b := k.SegmentBindings(0, Output)[o.Out]
		k.Bindings[b.Index].Shape = Shape{b.Shape[0], strconv.Itoa(t.K)}
	}
	r.ThreadgroupBytes += TopKSharedBytes(k.Threadgroup)
	r.LetCache = nil
}

// TopKSharedBytes is the team argmax's threadgroup memory: a rank and a
// column (u32 each) per simdgroup.
func TopKSharedBytes(tg int) int { return 8 * (tg / SimdWidth) }

// topkStage is the selection's stage: the key of one element, called once
// per element in pass P+1.
func (r *Rows) topkStage(k *Kernel) (Stage, bool) {
	t := r.TopK
	if t == nil {
		return Stage{}, false
	}
	st := Stage{Kind: StageTopK, Suffix: "topk", Level: r.Passes + 1,
		Comment: fmt.Sprintf("the top-%d selection's key for one element", t.K)}
	st.Targets = []Target{{Name: TopKKeyName, Expr: t.Key}}
	st.Deps = k.ElementDeps([]*Expr{t.Key})
	return k.finishStage(st), true
}

// describeTopK is the rounds in words, for Describe; after says whether
// the pass stores outputs first.
func (r *Rows) describeTopK(k *Kernel, after bool) string {
	t := r.TopK
	var outs []string
	for _, o := range t.Outputs {
		outs = append(outs, fmt.Sprintf("%s (%s)", k.Steps[o.Step].Name, o.What.Func()))
	}
	then := ""
	if after {
		then = "then "
	}
	return fmt.Sprintf("%sthe top-%d selection of %s: each lane keeps its best %d in one walk of the row, then %d rounds of a team argmax merge the lanes' lists (key descending, column ascending, NaN first); store %s",
		then, t.K, k.FormatExpr(t.Key), t.K, t.K, strings.Join(outs, ", "))
}
