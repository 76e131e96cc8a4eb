package backward

import (
	"slices"
	"strings"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/expr"
	"github.com/kgen-dev/kgen/spec"
)

// derivation is one backward kernel being derived.
type derivation struct {
	g       *graph
	s       *spec.Spec
	targets []spec.Input
	params  []spec.Param // the float params differentiated (params.go)
	// view marks an elementwise forward derived as a rowwise kernel over a
	// [rows, cols] view of its elements (elemRows).
	view bool
	// adj holds each name's adjoint terms, summed when the name is reached.
	adj map[string][]expr.Node
	// seeds are the gradient inputs, one per floating-point output.
	seeds []spec.Input
	// lets are the adjoint lets, in the order they are computed.
	lets []spec.Formula
	// pairs are the pair reads' placeholders by name (pair.go); pcol and
	// pwidth name the lets of the paired column and pair_half's half width.
	pairs        map[string]pairRead
	pcol, pwidth string
	// err is the first thing derivation found it cannot do.
	err error
	// masks are the adjoint lets that are zero where a select dropped
	// their value (select(c, x, 0)): their terms keep the select outside
	// the product, so a partial that is NaN where the forward's select
	// dropped it (0 / 0 in an unused branch) gives 0, not 0 · NaN.
	masks map[string]*mask
}

// seedOutputs makes each floating-point output's gradient an input,
// <output>_grad, and its adjoint.
func (d *derivation) seedOutputs(diags *diag.List) bool {
	at := d.s.Backward.Pos
	for _, v := range d.g.values {
		if !v.output || v.dtype.Type.IsInt() || d.g.typeOf(v.tree) != expr.Num || d.s.IsSaved(v.name) { // a saved let's output has no gradient
			continue
		}
		name := v.name + GradSuffix
		if d.g.taken[name] {
			diags.Addf(at, "backward names output %s's gradient %s, which the spec already uses; rename it", v.name, name)
			return false
		}
		d.g.taken[name] = true
		d.g.syms[name] = symFloat
		in := spec.Input{Name: spec.Name{Name: name, Pos: at}, DType: spec.TypeRef{Type: v.dtype.Type, Pos: at}}
		if v.perRow {
			in.Dims, in.DimsPos = []string{"rows"}, at
		} else {
			d.g.perElem[name] = true
		}
		d.seeds = append(d.seeds, in)
		d.adj[v.name] = []expr.Node{ident(name)}
	}
	if len(d.seeds) == 0 {
		diags.Addf(at, "backward needs a floating-point output to take the gradient of")
		return false
	}
	return true
}

// adjoints walks the values from last to first, giving each its adjoint
// and passing it on to the names its formula reads.
func (d *derivation) adjoints() {
	g := d.g
	for i := len(g.values) - 1; i >= 0; i-- {
		v := g.values[i]
		if g.syms[v.name] == symConst || len(d.adj[v.name]) == 0 {
			continue
		}
		a := d.adjointOf(v.name)
		m := d.maskFor(a)
		if v.reduce != "" {
			d.throughReduction(v, a)
			continue
		}
		tree := d.withPlaceholders(v.tree)
		for _, r := range expr.Refs(tree) {
			if p := d.pairs[r]; p.call != nil {
				d.throughPair(p, masking(m, mul(a, g.d(tree, r))))
				continue
			}
			if !d.differentiable(r) {
				continue
			}
			c := masking(m, mul(a, g.d(tree, r)))
			if c == nil {
				continue
			}
			if d.isParamTarget(r) {
				d.adj[r] = append(d.adj[r], d.paramTerm(v, c))
				continue
			}
			if g.rowwise && !v.perRow && !g.perElem[r] { // a per-row value read by every element
				c = d.sumOverRow(c)
			}
			d.adj[r] = append(d.adj[r], c)
		}
	}
}

// maskFor is the mask of the adjoint a, if it is a masked let.
func (d *derivation) maskFor(a expr.Node) *mask {
	if id, ok := a.(*expr.Ident); ok {
		return d.masks[id.Name]
	}
	return nil
}

// masking applies m (nil: none) to the term c.
func masking(m *mask, c expr.Node) expr.Node {
	if m == nil || c == nil {
		return c
	}
	return maskWith(m, c)
}

// throughPair passes the term c of a pair read to its input, at the
// paired column.
func (d *derivation) throughPair(p pairRead, c expr.Node) {
	if c == nil || !d.differentiable(p.input) {
		return
	}
	moved, err := d.atPair(c, p.call)
	if err != nil {
		if d.err == nil {
			d.err = err
		}
		return
	}
	d.adj[p.input] = append(d.adj[p.input], moved)
}

// adjointOf sums name's adjoint terms into a let (one bare name needs
// none) and returns the name to read it by.
func (d *derivation) adjointOf(name string) expr.Node {
	terms := d.adj[name]
	if len(terms) == 1 {
		if id, ok := terms[0].(*expr.Ident); ok {
			return id
		}
	}
	sum := sumOf(terms)
	let := d.g.fresh("g_d_" + strings.TrimPrefix(name, "g_"))
	d.g.syms[let] = symFloat
	if d.g.varies(sum) {
		d.g.perElem[let] = true
		d.g.trees[let] = sum
	}
	if m := maskOf(sum); m != nil {
		d.masks[let] = m
	}
	d.lets = append(d.lets, d.formula(let, format(d.restore(sum)), spec.TypeRef{}))
	return ident(let)
}

func sumOf(terms []expr.Node) expr.Node {
	var sum expr.Node
	for _, t := range terms {
		sum = add(sum, t)
	}
	return sum
}

// throughReduction passes a reduction's adjoint a to its argument: whole
// for row_sum, divided by cols for row_mean, to the elements equal to the
// result (split evenly among ties) for row_max and row_min.
func (d *derivation) throughReduction(v *value, a expr.Node) {
	arg := v.tree.(*expr.Ident).Name
	c := a
	switch v.reduce {
	case "row_mean":
		c = div(a, call("f32", ident("cols")))
	case "row_max", "row_min":
		hit := call("select", &expr.Binary{X: ident(arg), Op: "==", Y: ident(v.name)}, one, number("0"))
		c = mul(a, div(hit, ident(v.ties)))
	}
	if d.differentiable(arg) {
		d.adj[arg] = append(d.adj[arg], c)
	}
}

// sumOverRow is the row's sum of the per-element term c; a term the same
// for every element is that term times cols.
func (d *derivation) sumOverRow(c expr.Node) expr.Node {
	if d.g.varies(c) {
		return call("row_sum", c)
	}
	return mul(c, call("f32", ident("cols")))
}

// differentiable reports whether name carries a gradient to collect:
// a let or a value of the forward, or an input being differentiated.
func (d *derivation) differentiable(name string) bool {
	if d.isParamTarget(name) {
		return true
	}
	if d.g.syms[name] != symFloat {
		return false
	}
	for _, in := range d.s.Inputs {
		if in.Name.Name == name {
			return slices.ContainsFunc(d.targets, func(t spec.Input) bool { return t.Name.Name == name })
		}
	}
	return !strings.HasSuffix(name, GradSuffix) || !slices.ContainsFunc(d.seeds, func(t spec.Input) bool { return t.Name.Name == name })
}

func (d *derivation) formula(name, text string, dt spec.TypeRef) spec.Formula {
	return spec.Formula{Name: spec.Name{Name: name, Pos: d.s.Backward.Pos}, DType: dt, Text: text, Map: fixed(d.s)}
}
