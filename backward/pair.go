package backward

import (
	"fmt"

	"github.com/kgen-dev/kgen/expr"
	"github.com/kgen-dev/kgen/spec"
)

// A pair read (pair_half(x), pair_interleaved(x): RoPE) makes element j's
// value depend on x at the paired column p(j). Its gradient therefore
// lands on x at p(j): the adjoint term of element p(j), which is element
// j's own term because pairing is an involution. So derivation reads each
// pair call as a variable of its own (a placeholder), and the term it gets
// is moved to the paired column by atPair: every per-element input read
// at the paired element, col replaced by the paired column, per-element
// lets inlined and moved likewise.

// pairRead is one distinct pair call of a kernel (one layout and width per
// kernel, which the forward's build checked).
type pairRead struct {
	call  *expr.Call
	input string
}

// withPlaceholders returns tree with every pair call replaced by its
// placeholder's name, registering the placeholders.
func (d *derivation) withPlaceholders(tree expr.Node) expr.Node {
	return rewrite(tree, func(n expr.Node) expr.Node {
		c, ok := n.(*expr.Call)
		if !ok {
			return nil
		}
		if _, isPair := expr.PairFuncs[c.Fn]; !isPair {
			return nil
		}
		input := c.Args[0].(*expr.Ident).Name
		name := "g_pair_" + input
		if _, seen := d.pairs[name]; !seen {
			name = d.g.fresh(name)
			d.pairs[name] = pairRead{call: c, input: input}
			d.g.syms[name] = symFloat
			d.g.perElem[name] = true
		}
		return ident(name)
	})
}

// pairedColumn is the name of an integer let holding the column paired
// with col by c (made on first use, with pair_half's clamped half width
// as a per-row let before it).
func (d *derivation) pairedColumn(c *expr.Call) expr.Node {
	if d.pcol == "" {
		def := pairedColumn(c)
		if len(c.Args) == 2 {
			d.pwidth = d.g.fresh("g_pair_h")
			d.g.syms[d.pwidth] = symInt
			d.lets = append(d.lets, d.formula(d.pwidth, format(halfWidth(c)), spec.TypeRef{}))
			def = pairedColumnOf(ident(d.pwidth))
		}
		d.pcol = d.g.fresh("g_pair_col")
		d.g.syms[d.pcol] = symInt
		d.g.perElem[d.pcol] = true
		d.lets = append(d.lets, d.formula(d.pcol, format(def), spec.TypeRef{}))
	}
	return ident(d.pcol)
}

// halfWidth is pair_half(x, w)'s h = clamp(w, 0, cols) / 2.
func halfWidth(c *expr.Call) expr.Node {
	w, cols := &expr.Paren{X: c.Args[1]}, ident("cols")
	clamped := call("select", &expr.Binary{X: w, Op: "<", Y: number("0")}, number("0"),
		call("select", &expr.Binary{X: w, Op: ">", Y: cols}, cols, w))
	return &expr.Binary{X: clamped, Op: "/", Y: number("2")}
}

// pairedColumnOf is the split-halves pairing over half width h: col + h
// below h, col - h in [h, 2h), col itself from 2h on (ir.PairColWidth).
func pairedColumnOf(h expr.Node) expr.Node {
	col, two := ident("col"), number("2")
	bin := func(a expr.Node, op string, b expr.Node) expr.Node { return &expr.Binary{X: a, Op: op, Y: b} }
	return call("select", bin(col, "<", h), bin(col, "+", h),
		call("select", bin(col, "<", bin(two, "*", h)), bin(col, "-", h), col))
}

// pairedColumn is the column paired with col by c, in the formula
// language (ir.PairCol, ir.PairColWidth).
func pairedColumn(c *expr.Call) expr.Node {
	if expr.PairFuncs[c.Fn] == "interleaved" {
		return &expr.Binary{X: ident("col"), Op: "^", Y: number("1")}
	}
	if len(c.Args) == 2 {
		return pairedColumnOf(&expr.Paren{X: halfWidth(c)})
	}
	return pairedColumnOf(&expr.Paren{X: &expr.Binary{X: ident("cols"), Op: "/", Y: number("2")}})
}

// atPair is n evaluated at the column paired by c. A name it cannot move
// (a [cols] input, whose paired element no formula can read) is an error.
func (d *derivation) atPair(n expr.Node, c *expr.Call) (expr.Node, error) {
	var err error
	var move func(expr.Node) expr.Node
	move = func(n expr.Node) expr.Node {
		return rewrite(n, func(m expr.Node) expr.Node {
			if c2, isCall := m.(*expr.Call); isCall && expr.PairFuncs[c2.Fn] != "" {
				return c2.Args[0]
			}
			id, ok := m.(*expr.Ident)
			if !ok {
				return nil
			}
			switch {
			case id.Name == "col":
				return d.pairedColumn(c)
			case d.pairs[id.Name].call != nil: // x at p(p(j)) = x at j
				return ident(d.pairs[id.Name].input)
			case !d.g.perElem[id.Name]:
				return nil // the row's value, the same at every column
			case d.g.trees[id.Name] != nil:
				return &expr.Paren{X: move(d.g.trees[id.Name])}
			case d.isRowVector(id.Name):
				err = fmt.Errorf("the gradient through %s needs [cols] input %s at the paired column, which no formula can read", c.Fn, id.Name)
				return nil
			}
			args := []expr.Node{id} // an input (or output gradient) at the paired element
			args = append(args, c.Args[1:]...)
			return call(c.Fn, args...)
		})
	}
	out := move(n)
	return out, err
}

// restore puts the pair calls back where placeholders stand in n.
func (d *derivation) restore(n expr.Node) expr.Node {
	if len(d.pairs) == 0 || n == nil {
		return n
	}
	return rewrite(n, func(m expr.Node) expr.Node {
		if id, ok := m.(*expr.Ident); ok && d.pairs[id.Name].call != nil {
			return d.pairs[id.Name].call
		}
		return nil
	})
}

// isRowVector reports a [cols] input.
func (d *derivation) isRowVector(name string) bool {
	for _, in := range d.s.Inputs {
		if in.Name.Name == name {
			return len(in.Dims) == 1 && in.Dims[0] == "cols"
		}
	}
	return false
}

// rewrite copies n, replacing each node for which f returns non-nil (its
// children are not visited); a subtree with nothing replaced is returned
// as it is, so graph.named still knows a let's call by its node.
func rewrite(n expr.Node, f func(expr.Node) expr.Node) expr.Node {
	if r := f(n); r != nil {
		return r
	}
	switch v := n.(type) {
	case *expr.Paren:
		if x := rewrite(v.X, f); x != v.X {
			return &expr.Paren{X: x}
		}
	case *expr.Unary:
		if x := rewrite(v.X, f); x != v.X {
			return &expr.Unary{Op: v.Op, X: x}
		}
	case *expr.Binary:
		if x, y := rewrite(v.X, f), rewrite(v.Y, f); x != v.X || y != v.Y {
			return &expr.Binary{X: x, Op: v.Op, Y: y}
		}
	case *expr.Call:
		args := make([]expr.Node, len(v.Args))
		same := true
		for i, a := range v.Args {
			args[i] = rewrite(a, f)
			same = same && args[i] == a
		}
		if same { // the node itself: graph.named knows a let's call by it
			return v
		}
		return call(v.Fn, args...)
	}
	return n
}
