package backward

import (
	"slices"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/expr"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/spec"
)

// A float param's gradient (`backward: [x, cap]`) is the sum, over every
// element of the launch, of the adjoint times the partial by the param: a
// total_sum output <param>_grad, f32 [1], in the fixed order of the
// column reductions and one more launch (ir/total.go, docs/colwise.md).
// A per-element value's term counts once per element; a per-row value's
// (1/rms reads eps) once per row, at column 0 (select(col == 0, t, 0)),
// so one total_sum holds both without a second kind of reduction.
//
// Only a list names params: `backward: true` still means every
// floating-point input. A norm's eps or RoPE's theta is a setting, not a
// weight; giving every built-in's backward their gradients would add
// launches to each (a total's, and the column passes where there were
// none) for numbers a training loop does not read.

// paramTargets are the float params backward lists, in the spec's order;
// ok is false when a listed name is an integer param (reported).
func paramTargets(s *spec.Spec, diags *diag.List) (out []spec.Param, ok bool) {
	listed := map[string]bool{}
	for _, n := range s.Backward.Of {
		listed[n.Name] = true
	}
	ok = true
	for _, p := range s.Params {
		if !listed[p.Name.Name] {
			continue
		}
		if p.Type.Type.IsInt() {
			at := s.Backward.Pos
			for _, n := range s.Backward.Of {
				if n.Name == p.Name.Name {
					at = n.Pos
				}
			}
			diags.Addf(at, "param %s is an integer (%s): it has no gradient", p.Name.Name, p.Type.Type)
			ok = false
			continue
		}
		out = append(out, p)
	}
	return out, ok
}

// isParamTarget reports whether name is a param being differentiated.
func (d *derivation) isParamTarget(name string) bool {
	return slices.ContainsFunc(d.params, func(p spec.Param) bool { return p.Name.Name == name })
}

// paramTerm is the term c a value v passes to a param: as it is from a
// per-element value, at column 0 only from a per-row one.
func (d *derivation) paramTerm(v *value, c expr.Node) expr.Node {
	if d.g.rowwise && v.perRow {
		return call("select", &expr.Binary{X: ident("col"), Op: "==", Y: number("0")}, c, number("0"))
	}
	return c
}

// paramOutputs is <param>_grad = total_sum(…) for each differentiated
// param that a gradient reaches; nil with ok false after an error.
func (d *derivation) paramOutputs(diags *diag.List) (outs []spec.Formula, ok bool) {
	for _, p := range d.params {
		name := p.Name.Name + GradSuffix
		if d.g.taken[name] {
			diags.Addf(d.listed(p.Name.Name), "backward names param %s's gradient %s, which the spec already uses; rename it", p.Name.Name, name)
			return nil, false
		}
		terms := d.adj[p.Name.Name]
		if len(terms) == 0 {
			diags.Addf(d.listed(p.Name.Name), "no output's gradient reaches param %s (it is read only in conditions or integer operations)", p.Name.Name)
			return nil, false
		}
		sum := sumOf(terms)
		text := format(d.restore(sum))
		if d.g.rowwise && !d.g.varies(sum) { // the same term at every element of a row: still one per element
			text = "select(col >= 0, " + text + ", 0)"
		}
		outs = append(outs, d.formula(name, ir.TotalFunc+"("+text+")", spec.TypeRef{Type: dtype.F32, Pos: d.s.Backward.Pos}))
	}
	return outs, true
}

// elemRows restates an elementwise spec whose backward differentiates a
// param as a rowwise kernel over a [rows, cols] view of its n elements
// (i is row·cols + col, n is rows·cols): a param's gradient is a sum over
// every element, which the rowwise schedule makes deterministic
// (total_sum) and the elementwise one has no reduction for. The caller
// picks any rows × cols = n (the input's own shape when it has one; rows
// of a few thousand columns keep the total's launches short). Its
// threadgroup is kgen's rowwise default.
func elemRows(s *spec.Spec) *spec.Spec {
	e := *s
	e.Kind, e.Threadgroup, e.ThreadgroupPos = spec.Rowwise, spec.DefaultThreadgroup, diag.Pos{}
	rename := func(fs []spec.Formula) []spec.Formula {
		out := make([]spec.Formula, len(fs))
		for i, f := range fs {
			t := substitute(parse(f), func(name string) expr.Node {
				switch name {
				case "i":
					return &expr.Paren{X: &expr.Binary{X: &expr.Binary{X: ident("row"), Op: "*", Y: ident("cols")}, Op: "+", Y: ident("col")}}
				case "n":
					return &expr.Paren{X: &expr.Binary{X: ident("rows"), Op: "*", Y: ident("cols")}}
				}
				return nil
			})
			f.Text, f.Map = format(t), fixed(s)
			out[i] = f
		}
		return out
	}
	e.Let, e.Outputs = rename(s.Let), rename(s.Outputs)
	return &e
}
