package ir

import (
	"fmt"
	"strings"
)

// Stage is one stage function's work: the targets it computes and what
// they need.
type Stage struct {
	Name    string
	Comment string
	Targets []Target
	Deps    Deps
	Row     bool // a per-row stage: its targets are per-row lets
}

// Target is one value a stage computes.
type Target struct {
	Name string // the output parameter
	Expr *Expr
	Bool bool
}

// Stages lists the stage functions: per pass p a function returning the
// terms of its reductions for one element, per level the per-row lets, and
// the write function returning the outputs for one element.
func (k *Kernel) Stages() []Stage {
	r := k.Rows
	var out []Stage
	for p := 0; p <= r.Passes; p++ {
		if steps, d := k.RowDeps(p); len(steps) > 0 {
			st := Stage{Name: fmt.Sprintf("%s_row%d", k.Name, p), Row: true, Deps: d,
				Comment: fmt.Sprintf("per-row values available after pass %d", p)}
			if p == 0 {
				st.Comment = "per-row values of the params and constants alone"
			}
			for _, i := range steps {
				s := k.Steps[i]
				st.Targets = append(st.Targets, Target{Name: s.Name, Expr: s.Expr, Bool: s.Expr.Bool})
			}
			out = append(out, st)
		}
		if p == r.Passes {
			break
		}
		st := Stage{Name: fmt.Sprintf("%s_pass%d", k.Name, p+1),
			Comment: fmt.Sprintf("pass %d: the terms of its reductions for one element", p+1)}
		var exprs []*Expr
		for i, red := range r.Reductions {
			if red.Level == p+1 {
				st.Targets = append(st.Targets, Target{Name: fmt.Sprintf("kgen_t%d", i), Expr: red.Arg})
				exprs = append(exprs, red.Arg)
			}
		}
		st.Deps = k.ElementDeps(exprs)
		out = append(out, st)
	}
	st := Stage{Name: k.Name + "_write", Comment: fmt.Sprintf("pass %d: the outputs of one element", r.Passes+1)}
	var exprs []*Expr
	for _, s := range k.Steps {
		if s.Output {
			st.Targets = append(st.Targets, Target{Name: s.Name, Expr: s.Expr})
			exprs = append(exprs, s.Expr)
		}
	}
	st.Deps = k.ElementDeps(exprs)
	return append(out, st)
}

// StageArgs lists a stage's value parameters by Name: inputs, params,
// per-row lets, reductions.
func (k *Kernel) StageArgs(st Stage) (names []string, bools []bool) {
	for i, b := range k.SegmentBindings(0, Input) {
		if st.Deps.Inputs[i] {
			names, bools = append(names, k.FormulaName(b)), append(bools, false)
		}
	}
	for i, p := range k.Params() {
		if st.Deps.Params[i] {
			names, bools = append(names, p.Name), append(bools, false)
		}
	}
	for _, i := range st.Deps.RowLets {
		names, bools = append(names, k.Steps[i].Name), append(bools, k.Steps[i].Expr.Bool)
	}
	for _, i := range st.Deps.Reductions {
		names, bools = append(names, ReductionName(i)), append(bools, false)
	}
	return names, bools
}

// FormulaName is a tensor's name in the formulas (without a segment prefix).
func (k *Kernel) FormulaName(b Binding) string {
	if len(k.Rows.Segments) > 0 {
		return strings.TrimPrefix(b.Name, k.Rows.Segments[b.Segment]+"_")
	}
	return b.Name
}
