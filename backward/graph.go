package backward

import (
	"fmt"
	"slices"

	"github.com/kgen-dev/kgen/expr"
	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/spec"
)

// value is one named value of the forward kernel: a let, an output, or a
// value derivation names itself (a reduction's argument, the reduction, a
// max's tie count). Reductions are lifted out of the formulas into values
// of their own so each has a name its adjoint can be attached to.
type value struct {
	name   string
	tree   expr.Node // the formula; a reduction's argument as a name
	reduce string    // row_sum, row_mean, row_max, row_min: tree is its argument
	ties   string    // a row_max/row_min value's tie count (a value's name)
	output bool
	perRow bool
	dtype  spec.TypeRef // an output's pinned dtype
}

// graph is the forward kernel as derivation sees it.
type graph struct {
	s       *spec.Spec
	rowwise bool
	syms    map[string]symKind
	perElem map[string]bool // names whose value changes along a row
	values  []*value
	// named maps a call that is a let's whole formula to the let's name.
	named map[*expr.Call]string
	taken map[string]bool // every name in use, for fresh ones
}

func newGraph(s *spec.Spec) *graph {
	g := &graph{s: s, rowwise: s.Kind == spec.Rowwise, syms: map[string]symKind{},
		perElem: map[string]bool{}, taken: map[string]bool{}, named: map[*expr.Call]string{}}
	for _, n := range []string{"row", "col", "rows", "cols", "i", "n"} {
		g.syms[n] = symInt
		g.taken[n] = true
	}
	g.perElem["col"] = true
	g.perElem["i"] = true
	g.syms["pi"], g.syms["inf"] = symConst, symConst
	for _, in := range s.Inputs {
		g.taken[in.Name.Name] = true
		g.syms[in.Name.Name] = symFloat
		if in.DType.Type.IsInt() {
			g.syms[in.Name.Name] = symInt
		}
		if !slices.Equal(in.Dims, []string{"rows"}) {
			g.perElem[in.Name.Name] = true
		}
	}
	for _, p := range s.Params {
		g.taken[p.Name.Name] = true
		g.syms[p.Name.Name] = symConst
		if p.Type.Type.IsInt() {
			g.syms[p.Name.Name] = symInt
		}
	}
	for _, c := range s.Constants {
		g.taken[c.Name.Name] = true
		g.syms[c.Name.Name] = symConst
	}
	for _, f := range append(slices.Clone(s.Let), s.Outputs...) {
		g.taken[f.Name.Name] = true
	}
	return g
}

// fresh returns an unused name built from base.
func (g *graph) fresh(base string) string {
	name := base
	for i := 2; g.taken[name]; i++ {
		name = fmt.Sprintf("%s%d", base, i)
	}
	g.taken[name] = true
	return name
}

// add appends a value, classifying it.
func (g *graph) add(v *value) {
	switch {
	case v.reduce != "":
		v.perRow = true
	default:
		v.perRow = g.rowwise && !g.varies(v.tree)
	}
	if !v.perRow {
		g.perElem[v.name] = true
	}
	if c, ok := v.tree.(*expr.Call); ok && !v.output && v.reduce == "" {
		g.named[c] = v.name
	}
	if !v.output {
		g.syms[v.name] = symFloat
		if t := g.typeOf(v.tree); t == expr.Int {
			g.syms[v.name] = symInt
		} else if t == expr.Bool {
			g.syms[v.name] = symBool
		}
	}
	g.values = append(g.values, v)
}

// varies reports whether n changes along a row (elementwise: always).
func (g *graph) varies(n expr.Node) bool {
	if !g.rowwise {
		return true
	}
	switch v := n.(type) {
	case *expr.Ident:
		return g.perElem[v.Name]
	case *expr.Paren:
		return g.varies(v.X)
	case *expr.Unary:
		return g.varies(v.X)
	case *expr.Binary:
		return g.varies(v.X) || g.varies(v.Y)
	case *expr.Call:
		if fn, ok := funcs.Lookup(v.Fn); ok && fn.Reduction {
			return false // one value per row
		}
		return slices.ContainsFunc(v.Args, g.varies)
	}
	return false
}

// lift adds the formula f as a value after lifting every reduction in
// its tree into values of its own.
func (g *graph) lift(name string, tree expr.Node, output bool, dt spec.TypeRef) {
	tree = g.liftReductions(tree)
	g.add(&value{name: name, tree: tree, output: output, dtype: dt})
}

func (g *graph) liftReductions(n expr.Node) expr.Node {
	switch v := n.(type) {
	case *expr.Paren:
		return &expr.Paren{X: g.liftReductions(v.X)}
	case *expr.Unary:
		return &expr.Unary{Op: v.Op, X: g.liftReductions(v.X)}
	case *expr.Binary:
		return &expr.Binary{X: g.liftReductions(v.X), Op: v.Op, Y: g.liftReductions(v.Y)}
	case *expr.Call:
		args := make([]expr.Node, len(v.Args))
		for i, a := range v.Args {
			args[i] = g.liftReductions(a)
		}
		if fn, ok := funcs.Lookup(v.Fn); ok && fn.Reduction {
			return g.reduction(v.Fn, args[0])
		}
		return call(v.Fn, args...)
	}
	return n
}

// reduction adds the values of op(arg): the argument (unless a bare
// name), the reduction, and for max and min the count of the row's
// elements equal to it (their gradient is split evenly among ties, as
// PyTorch's amax splits it): a count, through which no gradient flows.
func (g *graph) reduction(op string, arg expr.Node) expr.Node {
	argName := ""
	if id, ok := arg.(*expr.Ident); ok && g.syms[id.Name] == symFloat {
		argName = id.Name
	} else {
		argName = g.fresh("g_arg")
		g.add(&value{name: argName, tree: arg})
	}
	r := &value{name: g.fresh("g_" + op[4:]), tree: ident(argName), reduce: op}
	g.add(r)
	if op == "row_max" || op == "row_min" {
		r.ties = g.fresh("g_ties")
		eq := &expr.Binary{X: ident(argName), Op: "==", Y: ident(r.name)}
		g.add(&value{name: r.ties, tree: call("select", eq, one, number("0")), reduce: "row_sum"})
		g.syms[r.ties] = symConst
	}
	return ident(r.name)
}
