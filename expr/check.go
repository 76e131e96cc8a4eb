package expr

import (
	"fmt"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/funcs"
)

// Resolver gives the type of a name, or a message saying why the name
// cannot be used here (undefined, defined later, …).
type Resolver func(name string) (Type, string)

// Checker type-checks formulas, reporting problems by offset.
type Checker struct {
	Resolve Resolver
	Rowwise bool // allow row_* reductions
	Report  func(off int, msg string)
}

// Check returns the type of n, or Unknown after reporting why it has none.
func (c *Checker) Check(n Node) Type {
	switch v := n.(type) {
	case *Number:
		return Num
	case *Ident:
		t, why := c.Resolve(v.Name)
		if why != "" {
			c.Report(v.Off, why)
			return Unknown
		}
		return t
	case *Paren:
		return c.Check(v.X)
	case *Unary:
		return c.unary(v)
	case *Binary:
		return c.binary(v)
	case *Call:
		return c.call(v)
	}
	return Unknown
}

func (c *Checker) unary(v *Unary) Type {
	want := Num
	if v.Op == "!" {
		want = Bool
	}
	if t := c.Check(v.X); t != Unknown && t != want {
		c.Report(v.Off, fmt.Sprintf("operator %s needs a %s, not a %s", v.Op, want, t))
	}
	return want
}

func (c *Checker) binary(v *Binary) Type {
	x, y := c.Check(v.X), c.Check(v.Y)
	operand, result := Num, Num
	switch v.Op {
	case "&&", "||":
		operand, result = Bool, Bool
	case "<", "<=", ">", ">=", "==", "!=":
		result = Bool
	}
	for _, side := range []struct {
		t    Type
		name string
	}{{x, "left"}, {y, "right"}} {
		if side.t != Unknown && side.t != operand {
			c.Report(v.OpOff, fmt.Sprintf("the %s operand of %s must be a %s, not a %s", side.name, v.Op, operand, side.t))
		}
	}
	return result
}

func (c *Checker) call(v *Call) Type {
	f, ok := funcs.Lookup(v.Fn)
	if !ok {
		c.Report(v.Off, fmt.Sprintf("unknown function %q%s", v.Fn, diag.Suggest(v.Fn, funcs.Names())))
		for _, a := range v.Args {
			c.Check(a)
		}
		return Unknown
	}
	if f.Reduction && !c.Rowwise {
		c.Report(v.Off, fmt.Sprintf("%s reduces over a row: it is only available in rowwise kernels", v.Fn))
	}
	if len(v.Args) != f.Arity() {
		c.Report(v.Off, fmt.Sprintf("%s takes %d argument%s, got %d", v.Fn, f.Arity(), plural(f.Arity()), len(v.Args)))
	}
	for i, a := range v.Args {
		want := Num
		if i < f.Arity() {
			want = f.Args[i]
		}
		if t := c.Check(a); t != Unknown && t != want {
			c.Report(a.Offset(), fmt.Sprintf("argument %d of %s must be a %s, not a %s", i+1, v.Fn, want, t))
		}
	}
	return f.Result
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Refs returns the names n refers to (not function names), in first-use order.
func Refs(n Node) []string {
	var out []string
	seen := map[string]bool{}
	Walk(n, func(m Node) {
		if id, ok := m.(*Ident); ok && !seen[id.Name] {
			seen[id.Name] = true
			out = append(out, id.Name)
		}
	})
	return out
}
