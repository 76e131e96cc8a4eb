package backward

import (
	"slices"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/expr"
	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/spec"
)

// Saved forward values (`save: [inv]`, spec/save.go): the forward writes
// each named per-row let as an f32 [rows] output <let>_saved, and the
// backward takes it as an input in place of the let's formula. The row
// reductions only that formula read are then pruned with the rest of the
// unused lets, and a saved let's derivative is taken in its value alone
// where the function has such a form (funcs.Func.GradY: rsqrt's
// -0.5·y³, not -0.5·y/x, which would read x's reduction again). The
// saved outputs get no gradient of their own.

// isSavedLet reports whether name is a let the forward saves.
func (g *graph) isSavedLet(name string) bool {
	return slices.ContainsFunc(g.s.Save, func(n spec.Name) bool { return n.Name == name })
}

// checkSaved refuses what save cannot keep: a let whose value changes
// along the row (spec.Parse refuses save outside rowwise kernels).
func (d *derivation) checkSaved(diags *diag.List) bool {
	ok := true
	for _, n := range d.s.Save {
		if !slices.ContainsFunc(d.s.Outputs, func(f spec.Formula) bool { return f.Name.Name == n.Name+spec.SavedSuffix }) {
			ok = false // not a let, or its output's name taken: spec.Parse said so
			continue
		}
		switch v := d.g.value(n.Name); {
		case v == nil || !v.perRow:
			diags.Addf(n.Pos, "save: %s changes along the row; only a per-row let (one value per row, like 1/rms) can be saved", n.Name)
			ok = false
		case d.g.syms[n.Name] != symFloat:
			diags.Addf(n.Pos, "save: %s is not a number", n.Name)
			ok = false
		}
	}
	return ok
}

// savedInputs are the backward's inputs for the saved lets, f32 [rows].
func (d *derivation) savedInputs() []spec.Input {
	var out []spec.Input
	at := d.s.Backward.Pos
	for _, n := range d.s.Save {
		out = append(out, spec.Input{Name: spec.Name{Name: n.Name + spec.SavedSuffix, Pos: at},
			DType: spec.TypeRef{Type: dtype.F32, Pos: at}, Dims: []string{"rows"}, DimsPos: at})
	}
	return out
}

// gradTreeY is fn's derivative in y alone, for a saved let's call; nil
// where the function has none (Grad then applies).
func gradTreeY(fn *funcs.Func) expr.Node {
	if fn.GradY == "" {
		return nil
	}
	t, err := expr.Parse(fn.GradY)
	if err != nil {
		panic("funcs: " + fn.Name + "'s GradY does not parse: " + err.Error())
	}
	return t
}

// value is the graph's value named name, nil if none.
func (g *graph) value(name string) *value {
	for _, v := range g.values {
		if v.name == name {
			return v
		}
	}
	return nil
}

// partialOf is fn's derivative by argument i at the call c: in the result
// alone when c is a saved let's whole formula and fn has that form.
func (g *graph) partialOf(fn *funcs.Func, i int, c *expr.Call) expr.Node {
	name := g.named[c]
	if name != "" && g.isSavedLet(name) {
		if t := gradTreeY(fn); t != nil {
			return zeroToNil(substitute(t, func(a string) expr.Node {
				if a == "y" {
					return ident(name)
				}
				return nil
			}))
		}
	}
	return partial(fn, i, c, name)
}
