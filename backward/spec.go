package backward

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/expr"
	"github.com/kgen-dev/kgen/spec"
)

// spec writes the derivation out as the backward kernel's spec: the
// forward's values it needs as lets, then the adjoints, and one output
// per differentiated input.
func (d *derivation) spec(diags *diag.List) *spec.Spec {
	outs := d.gradOutputs(diags)
	if outs == nil {
		return nil
	}
	var lets []spec.Formula
	for _, v := range d.g.values {
		if v.output {
			continue
		}
		text := format(v.tree)
		if v.reduce != "" {
			text = v.reduce + "(" + text + ")"
		}
		if d.g.isSavedLet(v.name) { // the forward's value, read instead of recomputed (saved.go)
			text = v.name + spec.SavedSuffix
		}
		lets = append(lets, d.formula(v.name, text, spec.TypeRef{}))
	}
	lets = prune(append(lets, d.lets...), outs)
	used := map[string]bool{}
	for _, f := range append(slices.Clone(lets), outs...) {
		for _, r := range refs(f.Text) {
			used[r] = true
		}
	}
	b := *d.s
	b.Kernel = spec.Name{Name: d.s.Kernel.Name + KernelSuffix, Pos: d.s.Backward.Pos}
	b.Doc = d.doc(outs)
	b.Inputs = nil
	for _, in := range append(append(slices.Clone(d.s.Inputs), d.savedInputs()...), d.seeds...) {
		if used[in.Name.Name] {
			b.Inputs = append(b.Inputs, in)
		}
	}
	b.Params = slices.DeleteFunc(slices.Clone(d.s.Params), func(p spec.Param) bool { return !used[p.Name.Name] })
	b.Constants = slices.DeleteFunc(slices.Clone(d.s.Constants), func(c spec.Constant) bool { return !used[c.Name.Name] })
	b.Let, b.Outputs = lets, outs
	b.Backward, b.Tolerances, b.Damaged, b.Save = nil, nil, nil, nil
	// A gradient at an infinite input is NaN or ±inf by the order of its
	// operations (x · pow(1 + g, x - 1) at x = -inf, g below f32's
	// epsilon: -inf in f32, NaN in float64), so parity feeds the backward
	// finite inputs, as domain: finite says.
	b.Domain = "finite"
	return &b
}

// gradOutputs is <input>_grad for each differentiated input: the sum of
// its adjoint terms, summed over the rows for a [cols] input (col_sum)
// and over the columns for a [rows] one.
func (d *derivation) gradOutputs(diags *diag.List) []spec.Formula {
	at := d.s.Backward.Pos
	var outs []spec.Formula
	for _, x := range d.targets {
		name := x.Name.Name + GradSuffix
		if d.g.taken[name] {
			diags.Addf(at, "backward names input %s's gradient %s, which the spec already uses; rename it", x.Name.Name, name)
			return nil
		}
		terms := d.adj[x.Name.Name]
		if len(terms) == 0 {
			if d.s.Backward.Of != nil {
				diags.Addf(d.listed(x.Name.Name), "no output's gradient reaches input %s (it is read only in conditions or integer operations)", x.Name.Name)
				return nil
			}
			continue
		}
		sum := sumOf(terms)
		text := format(d.restore(sum))
		switch {
		case slices.Equal(x.Dims, []string{"cols"}):
			text = "col_sum(" + text + ")"
		case slices.Equal(x.Dims, []string{"rows"}):
			if d.g.varies(sum) {
				text = "row_sum(" + text + ")"
			}
		case d.g.rowwise && !d.g.varies(sum):
			// The same gradient for every element of a row: select on col
			// makes the output [rows, cols], as the input is.
			text = "select(col >= 0, " + text + ", 0)"
		}
		outs = append(outs, d.formula(name, text, x.DType))
	}
	pouts, ok := d.paramOutputs(diags)
	if !ok {
		return nil
	}
	outs = append(outs, pouts...)
	if len(outs) == 0 {
		diags.Addf(at, "no output's gradient reaches any floating-point input")
		return nil
	}
	return outs
}

// listed is where backward lists name.
func (d *derivation) listed(name string) diag.Pos {
	for _, n := range d.s.Backward.Of {
		if n.Name == name {
			return n.Pos
		}
	}
	return d.s.Backward.Pos
}

func (d *derivation) doc(outs []spec.Formula) string {
	var grads, seeds []string
	for _, o := range outs {
		grads = append(grads, o.Name.Name)
	}
	for _, s := range d.seeds {
		seeds = append(seeds, s.Name.Name)
	}
	doc := fmt.Sprintf("The gradient of %s (%s) from its outputs' gradients (%s): derived by kgen from %s (backward:).",
		d.s.Kernel.Name, strings.Join(grads, ", "), strings.Join(seeds, ", "), d.s.Path)
	if d.view {
		doc += " A rowwise kernel over a [rows, cols] view of the forward's n elements (any rows × cols = n): a param's gradient is a sum over every element (total_sum)."
	}
	return doc
}

// prune keeps the lets the outputs need, in order.
func prune(lets, outs []spec.Formula) []spec.Formula {
	need := map[string]bool{}
	for _, o := range outs {
		for _, r := range refs(o.Text) {
			need[r] = true
		}
	}
	keep := make([]bool, len(lets))
	for i := len(lets) - 1; i >= 0; i-- {
		if need[lets[i].Name.Name] {
			keep[i] = true
			for _, r := range refs(lets[i].Text) {
				need[r] = true
			}
		}
	}
	var out []spec.Formula
	for i, l := range lets {
		if keep[i] {
			out = append(out, l)
		}
	}
	return out
}

func refs(text string) []string {
	n, err := expr.Parse(text)
	if err != nil {
		panic(fmt.Sprintf("backward: a derived formula does not parse: %q: %v", text, err))
	}
	return expr.Refs(n)
}
