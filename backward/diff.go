package backward

import (
	"fmt"
	"strings"
	"sync"

	"github.com/kgen-dev/kgen/expr"
	"github.com/kgen-dev/kgen/funcs"
)

// kind of a name in a formula, as far as derivation cares.
type symKind int

const (
	symFloat symKind = iota // a number that may carry a gradient (input, let)
	symConst                // a number without one (param, constant, pi, inf)
	symInt                  // an integer (index, size, integer input or param)
	symBool                 // a boolean let
)

// typeOf is the type of n: Num, Int or Bool (funcs.Type). An integer
// literal counts as Int; it is Num beside a number, as the checker reads it.
func (g *graph) typeOf(n expr.Node) expr.Type {
	switch v := n.(type) {
	case *expr.Number:
		if strings.ContainsAny(v.Text, ".eE") {
			return expr.Num
		}
		return expr.Int
	case *expr.Ident:
		switch g.syms[v.Name] {
		case symInt:
			return expr.Int
		case symBool:
			return expr.Bool
		}
		return expr.Num
	case *expr.Paren:
		return g.typeOf(v.X)
	case *expr.Unary:
		if v.Op == "!" {
			return expr.Bool
		}
		return g.typeOf(v.X)
	case *expr.Binary:
		switch v.Op {
		case "<", "<=", ">", ">=", "==", "!=", "&&", "||":
			return expr.Bool
		}
		if expr.IntOnly[v.Op] || g.typeOf(v.X) == expr.Int && g.typeOf(v.Y) == expr.Int {
			return expr.Int
		}
		return expr.Num
	case *expr.Call:
		if _, isInt := expr.IntConversions[v.Fn]; isInt {
			return expr.Int
		}
		if v.Fn == "select" && len(v.Args) == 3 && g.typeOf(v.Args[1]) == expr.Int && g.typeOf(v.Args[2]) == expr.Int {
			return expr.Int
		}
		return expr.Num
	}
	return expr.Num
}

// d is the partial derivative of n by the name r, every other name held
// constant (nil: zero). Lets are names too, so this is one step of reverse
// mode over the let graph (graph.adjoints).
func (g *graph) d(n expr.Node, r string) expr.Node {
	if g.typeOf(n) != expr.Num || !mentions(n, r) {
		return nil
	}
	switch v := n.(type) {
	case *expr.Ident:
		if v.Name == r {
			return one
		}
	case *expr.Paren:
		return g.d(v.X, r)
	case *expr.Unary:
		return neg(g.d(v.X, r))
	case *expr.Binary:
		return g.dBinary(v, r)
	case *expr.Call:
		return g.dCall(v, r)
	}
	return nil
}

func (g *graph) dBinary(v *expr.Binary, r string) expr.Node {
	da, db := g.d(v.X, r), g.d(v.Y, r)
	switch v.Op {
	case "+":
		return add(da, db)
	case "-":
		return sub(da, db)
	case "*":
		return add(mul(da, v.Y), mul(v.X, db))
	case "/":
		if db == nil {
			return div(da, v.Y)
		}
		// (da - (a / b) db) / b: no b·b to overflow.
		return div(sub(da, mul(&expr.Paren{X: v}, db)), v.Y)
	}
	return nil
}

func (g *graph) dCall(v *expr.Call, r string) expr.Node {
	fn, ok := funcs.Lookup(v.Fn)
	if !ok { // detach(x); f32(i), an integer's image: no gradient
		return nil
	}
	if fn.Bound.Rule == funcs.Select { // select routes the gradient
		da, db := g.d(v.Args[1], r), g.d(v.Args[2], r)
		if da == nil && db == nil {
			return nil
		}
		return call("select", v.Args[0], orZero(da), orZero(db))
	}
	var sum expr.Node
	for i, a := range v.Args {
		da := g.d(a, r)
		if da == nil {
			continue
		}
		sum = add(sum, mul(da, g.partialOf(fn, i, v)))
	}
	return sum
}

// partial is fn's derivative by argument i at the call c, from the table's
// Grad formula with the arguments and the result substituted: the result
// by its let's name when c is a let's whole formula (inv in 1/sqrt's
// derivative), so it is not computed twice.
func partial(fn *funcs.Func, i int, c *expr.Call, name string) expr.Node {
	t := gradTree(fn, i)
	names := argNames(len(c.Args))
	return zeroToNil(substitute(t, func(arg string) expr.Node {
		if arg == "y" && name != "" {
			return ident(name)
		}
		if arg == "y" {
			return &expr.Paren{X: c}
		}
		for j, an := range names {
			if arg == an {
				return &expr.Paren{X: c.Args[j]}
			}
		}
		return nil
	}))
}

// argNames are the names a Grad formula gives the arguments.
func argNames(n int) []string {
	if n == 1 {
		return []string{"x"}
	}
	return []string{"a", "b", "c"}[:n]
}

var (
	gradMu    sync.Mutex
	gradCache = map[string]expr.Node{}
)

// gradTree parses a Grad formula once. A table row whose formula does not
// parse is a kgen bug, which TestGradTable catches.
func gradTree(fn *funcs.Func, i int) expr.Node {
	gradMu.Lock()
	defer gradMu.Unlock()
	key := fmt.Sprintf("%s/%d", fn.Name, i)
	if t, ok := gradCache[key]; ok {
		return t
	}
	t, err := expr.Parse(fn.Grad[i])
	if err != nil {
		panic(fmt.Sprintf("funcs: %s's Grad[%d] %q: %v", fn.Name, i, fn.Grad[i], err))
	}
	gradCache[key] = t
	return t
}

// substitute copies t with each name that sub maps replaced.
func substitute(t expr.Node, sub func(string) expr.Node) expr.Node {
	switch v := t.(type) {
	case *expr.Ident:
		if r := sub(v.Name); r != nil {
			return r
		}
		return v
	case *expr.Paren:
		return &expr.Paren{X: substitute(v.X, sub)}
	case *expr.Unary:
		return &expr.Unary{Op: v.Op, X: substitute(v.X, sub)}
	case *expr.Binary:
		return &expr.Binary{X: substitute(v.X, sub), Op: v.Op, Y: substitute(v.Y, sub)}
	case *expr.Call:
		args := make([]expr.Node, len(v.Args))
		for i, a := range v.Args {
			args[i] = substitute(a, sub)
		}
		return call(v.Fn, args...)
	}
	return t
}

// mentions reports whether name r occurs in n.
func mentions(n expr.Node, r string) bool {
	found := false
	expr.Walk(n, func(m expr.Node) {
		if id, ok := m.(*expr.Ident); ok && id.Name == r {
			found = true
		}
	})
	return found
}
