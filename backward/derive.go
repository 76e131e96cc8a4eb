// Package backward derives a kernel's gradient kernel from its spec
// (`backward:`): reverse-mode differentiation over the formula trees,
// written out as a second spec, <kernel>_backward, that the rest of the
// pipeline (IR, emitters, parity) treats like any other. The derived
// formulas are in the formula language, so `kgen list --json` and the
// generated files' comments show exactly what the backward computes.
//
// Each let, output and row reduction is a named value; the adjoint of a
// value is the sum, over the values that read it, of their adjoint times
// their partial derivative by it (diff.go), a row_sum of that where a
// per-element value reads a per-row one. Lets become shared
// subexpressions, select routes gradients, a function's partial comes
// from its funcs.Table row (Grad), and the conventions at
// non-differentiable points are PyTorch's (funcs.Func.Grad; row_max and
// row_min split the gradient evenly among tied elements, as amax does).
package backward

import (
	"fmt"
	"slices"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/expr"
	"github.com/kgen-dev/kgen/internal/yamlnode"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/spec"
)

// Suffix names the derived kernel, and an output's or input's gradient.
const (
	KernelSuffix = "_backward"
	GradSuffix   = "_grad"
)

// Derive returns specs with each spec's derived backward kernel after it.
// A spec with errors of its own gets none (its errors are reported when
// it is built); what derivation cannot do is reported at `backward:`.
func Derive(specs []*spec.Spec, diags *diag.List) []*spec.Spec {
	var out []*spec.Spec
	names := kernelNames(specs)
	for _, s := range specs {
		out = append(out, s)
		if b := deriveNamed(s, names, diags); b != nil {
			names[b.Kernel.Name] = s.Path
			out = append(out, b)
		}
	}
	return out
}

// DeriveFor is Derive for one spec s of all (an editor's buffer among its
// config's specs): s and its backward kernel, whose name is checked
// against every kernel of all without deriving theirs.
func DeriveFor(s *spec.Spec, all []*spec.Spec, diags *diag.List) []*spec.Spec {
	if b := deriveNamed(s, kernelNames(all), diags); b != nil {
		return []*spec.Spec{s, b}
	}
	return []*spec.Spec{s}
}

// kernelNames maps each spec's kernel name to its file.
func kernelNames(specs []*spec.Spec) map[string]string {
	names := map[string]string{}
	for _, s := range specs {
		names[s.Kernel.Name] = s.Path
	}
	return names
}

// deriveNamed is s's backward spec, nil when s asks for none, has errors
// of its own, cannot be derived, or would take a kernel's name in names.
func deriveNamed(s *spec.Spec, names map[string]string, diags *diag.List) *spec.Spec {
	if s.Backward == nil || len(s.Damaged) > 0 {
		return nil
	}
	var scratch diag.List
	if ir.Build([]*spec.Spec{s}, &scratch); scratch.Len() > 0 {
		return nil
	}
	b := derive(s, diags)
	if b == nil {
		return nil
	}
	if other, taken := names[b.Kernel.Name]; taken {
		diags.Addf(s.Backward.Pos, "the backward kernel's name %s is taken by the kernel of %s; rename one of them", b.Kernel.Name, other)
		return nil
	}
	return b
}

// derive builds the backward spec of s, or reports why it cannot.
func derive(s *spec.Spec, diags *diag.List) *spec.Spec {
	at := s.Backward.Pos
	if !supported(s, diags) {
		return nil
	}
	name := s.Kernel.Name
	if s.Kind == spec.Matmul {
		if s = epilogue(s, diags); s == nil {
			return nil
		}
	}
	targets, ok := targetInputs(s, diags)
	params, pok := paramTargets(s, diags)
	if !ok || !pok || !segmentsAllow(s, targets, params, diags) {
		return nil
	}
	view := s.Kind == spec.Elementwise && len(params) > 0
	if view {
		s = elemRows(s)
	}
	g := newGraph(s)
	for _, f := range s.Let {
		g.lift(f.Name.Name, parse(f), false, f.DType)
	}
	for _, f := range s.Outputs {
		g.lift(f.Name.Name, parse(f), true, f.DType)
	}
	d := &derivation{g: g, s: s, targets: targets, params: params, view: view, adj: map[string][]expr.Node{}, pairs: map[string]pairRead{}, masks: map[string]*mask{}}
	if !d.checkSaved(diags) || !d.seedOutputs(diags) {
		return nil
	}
	if d.adjoints(); d.err != nil {
		diags.Addf(at, "%v", d.err)
		return nil
	}
	b := d.spec(diags)
	if b != nil && len(name+KernelSuffix) > 64 {
		diags.Addf(at, "the backward kernel's name %s is longer than 64 characters; shorten the kernel's name", b.Kernel.Name)
		return nil
	}
	return b
}

// parse reads a formula the forward build has already checked.
func parse(f spec.Formula) expr.Node {
	n, err := expr.Parse(f.Text)
	if err != nil {
		panic(fmt.Sprintf("backward: %s: a checked formula does not parse: %v", f.Name.Name, err))
	}
	return n
}

// supported reports, at its place, what derivation does not offer.
func supported(s *spec.Spec, diags *diag.List) bool {
	ok := true
	for _, o := range s.Outputs {
		if o.At != nil {
			diags.Addf(o.AtPos, "backward of a positioned write (at:) is not offered yet")
			ok = false
		}
	}
	for _, f := range append(slices.Clone(s.Let), s.Outputs...) {
		expr.Walk(parse(f), func(n expr.Node) {
			if ix, isIndex := n.(*expr.Index); isIndex {
				diags.Addf(f.Map.At(ix.Off), "backward through a subscript (%s[…]) is not offered yet (its gradient is a scatter-add)", ix.Name)
				ok = false
				return
			}
			c, isCall := n.(*expr.Call)
			if !isCall {
				return
			}
			if len(c.Fn) > 4 && c.Fn[:4] == "col_" {
				diags.Addf(f.Map.At(c.Off), "backward through %s is not offered yet", c.Fn)
				ok = false
			}
			if expr.TopKFuncs[c.Fn] {
				diags.Addf(f.Map.At(c.Off), "backward through %s is not offered yet (its gradient scatters to the selected columns)", c.Fn)
				ok = false
			}
		})
	}
	return ok
}

// targetInputs are the inputs to differentiate, in the spec's order (a
// listed param is paramTargets'); ok is false after an error.
func targetInputs(s *spec.Spec, diags *diag.List) ([]spec.Input, bool) {
	byName := map[string]spec.Input{}
	var names []string
	for _, in := range s.Inputs {
		byName[in.Name.Name] = in
		names = append(names, in.Name.Name)
	}
	params := map[string]bool{}
	for _, p := range s.Params {
		params[p.Name.Name] = true
		names = append(names, p.Name.Name)
	}
	if s.Backward.Of == nil {
		var out []spec.Input
		for _, in := range s.Inputs {
			if !in.DType.Type.IsInt() {
				out = append(out, in)
			}
		}
		return out, true
	}
	want := map[string]bool{}
	ok := true
	for _, n := range s.Backward.Of {
		in, found := byName[n.Name]
		switch {
		case params[n.Name]:
		case !found:
			diags.Addf(n.Pos, "backward lists %q, which is not an input or a param (constants are baked: they get no gradient)%s", n.Name, diag.Suggest(n.Name, names))
			ok = false
		case in.DType.Type.IsInt():
			diags.Addf(n.Pos, "input %s is an integer (%s): it has no gradient", n.Name, in.DType.Type)
			ok = false
		}
		want[n.Name] = true
	}
	if !ok {
		return nil, false
	}
	var out []spec.Input
	for _, in := range s.Inputs {
		if want[in.Name.Name] {
			out = append(out, in)
		}
	}
	return out, true
}

// fixed is the position map of a derived formula: its every character
// at `backward:`.
func fixed(s *spec.Spec) yamlnode.ScalarMap { return yamlnode.Fixed(s.Backward.Pos) }

// segmentsAllow refuses, in a kernel with segments, the gradients that sum
// over rows: a [cols] input's (a column reduction) and a param's (a total),
// which segments do not offer (each segment would need its own partials and
// combine). The [rows, cols] and [rows] inputs' gradients are per segment
// like the forward: the backward keeps the segments.
func segmentsAllow(s *spec.Spec, targets []spec.Input, params []spec.Param, diags *diag.List) bool {
	if s.Segments == nil {
		return true
	}
	ok := true
	for _, in := range targets {
		if len(in.Dims) == 1 && in.Dims[0] == "cols" {
			diags.Addf(s.Backward.Pos, "the gradient of %s ([cols]) sums over every row, a column reduction, which a kernel with segments does not offer; list the other inputs (backward: [x]) or write one spec per segment", in.Name.Name)
			ok = false
		}
	}
	for _, p := range params {
		diags.Addf(s.Backward.Pos, "the gradient of param %s sums over every element, which a kernel with segments does not offer; write one spec per segment", p.Name.Name)
		ok = false
	}
	return ok
}
