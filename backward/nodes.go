package backward

import (
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/expr"
)

// The constructors below build derivative trees with the simplifications
// that keep derived formulas short and free of the NaNs a literal zero
// would bring (0 * inf): a nil node is an exact zero, a product by one is
// its other factor, and a double negation cancels.

func ident(name string) *expr.Ident { return &expr.Ident{Name: name} }

func number(text string) *expr.Number { return &expr.Number{Text: text} }

var one = number("1")

// isNum reports whether n is the literal v.
func isNum(n expr.Node, v float64) bool {
	num, ok := n.(*expr.Number)
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(num.Text, 64)
	return err == nil && f == v
}

// zeroToNil maps the literal 0 to nil, the constructors' zero.
func zeroToNil(n expr.Node) expr.Node {
	if n == nil || isNum(n, 0) {
		return nil
	}
	return n
}

func add(a, b expr.Node) expr.Node {
	a, b = zeroToNil(a), zeroToNil(b)
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	if u, ok := b.(*expr.Unary); ok && u.Op == "-" {
		return &expr.Binary{X: a, Op: "-", Y: u.X}
	}
	return &expr.Binary{X: a, Op: "+", Y: b}
}

func sub(a, b expr.Node) expr.Node {
	a, b = zeroToNil(a), zeroToNil(b)
	switch {
	case b == nil:
		return a
	case a == nil:
		return neg(b)
	}
	return &expr.Binary{X: a, Op: "-", Y: b}
}

func neg(a expr.Node) expr.Node {
	a = zeroToNil(a)
	if a == nil {
		return nil
	}
	if u, ok := a.(*expr.Unary); ok && u.Op == "-" {
		return u.X
	}
	if p, ok := a.(*expr.Paren); ok {
		return neg(p.X)
	}
	return &expr.Unary{Op: "-", X: a}
}

func mul(a, b expr.Node) expr.Node {
	a, b = zeroToNil(a), zeroToNil(b)
	switch {
	case a == nil || b == nil:
		return nil
	case isNum(a, 1):
		return b
	case isNum(b, 1):
		return a
	}
	if m := masked(b); m != nil { // a · select(c, 1, 0) = select(c, a, 0)
		return maskWith(m, a)
	}
	if m := masked(a); m != nil {
		return maskWith(m, b)
	}
	if u, ok := a.(*expr.Unary); ok && u.Op == "-" {
		return neg(mul(u.X, b))
	}
	if u, ok := b.(*expr.Unary); ok && u.Op == "-" {
		return neg(mul(a, u.X))
	}
	return &expr.Binary{X: a, Op: "*", Y: b}
}

// mask is select(cond, 1, 0) (keep the other factor where cond holds) or
// select(cond, 0, 1) (where it does not): the derivative of a select by
// one branch.
type mask struct {
	cond   expr.Node
	onTrue bool
}

// masked reports n as a mask: maskOf whose kept value is 1.
func masked(n expr.Node) *mask {
	m := maskOf(n)
	if m == nil {
		return nil
	}
	kept := n.(*expr.Call).Args[2]
	if m.onTrue {
		kept = n.(*expr.Call).Args[1]
	}
	if !isNum(kept, 1) {
		return nil
	}
	return m
}

// maskWith is x where the mask keeps it, else 0: a select, so that x's
// NaN or infinity where the mask drops it never reaches the result (0 · NaN
// would).
func maskWith(m *mask, x expr.Node) expr.Node {
	if m.onTrue {
		return call("select", m.cond, x, number("0"))
	}
	return call("select", m.cond, number("0"), x)
}

// maskOf reports n as x masked, select(cond, x, 0) or select(cond, 0, x).
func maskOf(n expr.Node) *mask {
	c, ok := n.(*expr.Call)
	if !ok || c.Fn != "select" || len(c.Args) != 3 {
		return nil
	}
	switch {
	case isNum(c.Args[2], 0):
		return &mask{c.Args[0], true}
	case isNum(c.Args[1], 0):
		return &mask{c.Args[0], false}
	}
	return nil
}

func div(a, b expr.Node) expr.Node {
	a = zeroToNil(a)
	switch {
	case a == nil:
		return nil
	case isNum(b, 1):
		return a
	}
	if u, ok := a.(*expr.Unary); ok && u.Op == "-" {
		return neg(div(u.X, b))
	}
	return &expr.Binary{X: a, Op: "/", Y: b}
}

func call(fn string, args ...expr.Node) *expr.Call { return &expr.Call{Fn: fn, Args: args} }

// orZero is n, or the literal 0 where a formula needs a value.
func orZero(n expr.Node) expr.Node {
	if n == nil {
		return number("0")
	}
	return n
}

// format writes n in the formula language with the fewest parentheses
// Go's precedence needs: what the derived kernel's formulas read as.
func format(n expr.Node) string {
	var b strings.Builder
	write(&b, n, 0)
	return b.String()
}

// prec is the binding strength of a node as an operand: a binary
// operator's precedence, 6 for a unary operator, 7 for an atom.
func prec(n expr.Node) int {
	switch v := n.(type) {
	case *expr.Binary:
		return precedence(v.Op)
	case *expr.Unary:
		return 6
	case *expr.Paren:
		return prec(v.X)
	}
	return 7
}

func precedence(op string) int {
	switch op {
	case "||":
		return 1
	case "&&":
		return 2
	case "<", "<=", ">", ">=", "==", "!=":
		return 3
	case "+", "-", "|", "^":
		return 4
	}
	return 5
}

// write writes n, parenthesised when it binds looser than min.
func write(b *strings.Builder, n expr.Node, min int) {
	if p, ok := n.(*expr.Paren); ok {
		write(b, p.X, min)
		return
	}
	if prec(n) < min {
		b.WriteByte('(')
		defer b.WriteByte(')')
	}
	switch v := n.(type) {
	case *expr.Number:
		b.WriteString(v.Text)
	case *expr.Ident:
		b.WriteString(v.Name)
	case *expr.Unary:
		b.WriteString(v.Op)
		write(b, v.X, 6)
	case *expr.Binary:
		p := precedence(v.Op)
		write(b, v.X, p)
		b.WriteString(" " + v.Op + " ")
		write(b, v.Y, p+1) // left-associative: a - (b - c) keeps its parentheses
	case *expr.Call:
		b.WriteString(v.Fn + "(")
		for i, a := range v.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			write(b, a, 0)
		}
		b.WriteByte(')')
	}
}
