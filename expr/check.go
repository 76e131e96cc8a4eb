package expr

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/funcs"
)

// Resolver gives the type of a name, or a message saying why the name
// cannot be used here (undefined, defined later, …).
type Resolver func(name string) (Type, string)

// Checker type-checks formulas, reporting problems by offset.
type Checker struct {
	Resolve Resolver
	Rowwise bool // allow row_* and col_* reductions
	NoTopK  bool // refuse topk, topk_index and topk_norm, col_* and total_sum where Rowwise holds (a matmul's epilogue)
	// Indexed types the tensor a subscript reads (name[…]), or says why it
	// cannot be read so; nil where the kind has no subscripts.
	Indexed Resolver
	// IndexKind names the kind, for the message refusing a subscript.
	IndexKind string
	Report    func(off int, msg string)
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
	case *Index:
		return c.index(v)
	}
	return Unknown
}

// index checks name[e1, …, eN]: a kind that reads by subscript, a name
// the Indexed resolver accepts (how many coordinates it takes is the IR's
// to check), and integer coordinates. Its type is the tensor's element's.
func (c *Checker) index(v *Index) Type {
	for i, a := range v.Args {
		switch t := c.Check(a); t {
		case Num:
			if _, lit := intLiteral(a); lit {
				markInt(a)
				continue
			}
			c.Report(a.Offset(), fmt.Sprintf("coordinate %d of %s[…] must be an integer (row, col, an integer param or input, i32(…)), not a number", i+1, v.Name))
		case Bool:
			c.Report(a.Offset(), fmt.Sprintf("coordinate %d of %s[…] must be an integer, not a boolean", i+1, v.Name))
		}
	}
	if c.Indexed == nil {
		kind := c.IndexKind
		if kind == "" {
			kind = "this"
		}
		c.Report(v.Off, IndexKindMessage(v.Name, kind))
		return Unknown
	}
	t, why := c.Indexed(v.Name)
	if why != "" {
		c.Report(v.Off, why)
		return Unknown
	}
	return t
}

func (c *Checker) unary(v *Unary) Type {
	want := Num
	if v.Op == "!" {
		want = Bool
	}
	t := c.Check(v.X)
	if v.Op == "-" && t == Int {
		return Int
	}
	if t != Unknown && t != want {
		c.Report(v.Off, fmt.Sprintf("operator %s needs a %s, not a %s", v.Op, want, t))
	}
	return want
}

// intLiteral reports whether n is an integer literal (digits only, maybe
// negated or parenthesized), which takes the type of an integer beside it.
func intLiteral(n Node) (*Number, bool) {
	switch v := n.(type) {
	case *Number:
		return v, strings.Trim(v.Text, "0123456789") == ""
	case *Paren:
		return intLiteral(v.X)
	case *Unary:
		if v.Op == "-" {
			return intLiteral(v.X)
		}
	}
	return nil, false
}

// markInt types the integer literal n as an integer.
func markInt(n Node) {
	Walk(n, func(m Node) {
		if num, ok := m.(*Number); ok {
			num.Int = true
		}
	})
}

// unify types an integer literal beside an integer as an integer (row + 1,
// col > 0), so literals need no conversion.
func unify(xn, yn Node, x, y Type) (Type, Type) {
	if _, lit := intLiteral(yn); lit && x == Int && y == Num {
		markInt(yn)
		y = Int
	}
	if _, lit := intLiteral(xn); lit && y == Int && x == Num {
		markInt(xn)
		x = Int
	}
	return x, y
}

func (c *Checker) binary(v *Binary) Type {
	x, y := unify(v.X, v.Y, c.Check(v.X), c.Check(v.Y))
	operand, result := Num, Num
	if x == Int || y == Int {
		operand, result = Int, Int
	}
	switch v.Op {
	case "&&", "||":
		operand, result = Bool, Bool
	case "<", "<=", ">", ">=", "==", "!=":
		result = Bool
	}
	if IntOnly[v.Op] && operand != Int {
		c.Report(v.OpOff, intOnlyMessage(v.Op, x, y))
		return Unknown
	}
	if (v.Op == "/" || v.Op == "%") && operand == Int {
		if num, lit := intLiteral(v.Y); lit && strings.Trim(num.Text, "0") == "" {
			c.Report(v.Y.Offset(), fmt.Sprintf("integer %s by zero", map[string]string{"/": "division", "%": "remainder"}[v.Op]))
			return Unknown
		}
	}
	if (x == Int && y == Num) || (x == Num && y == Int) {
		c.Report(v.OpOff, fmt.Sprintf("operator %s mixes an integer and a number: convert the integer with f32(…)", v.Op))
		return Unknown
	}
	for _, side := range []struct {
		t    Type
		name string
	}{{x, "left"}, {y, "right"}} {
		if side.t != Unknown && side.t != operand {
			c.Report(v.OpOff, fmt.Sprintf("the %s operand of %s must be %s, not %s", side.name, v.Op, a(operand), a(side.t)))
		}
	}
	return result
}

// intOnlyMessage explains an integer operator applied to something else.
func intOnlyMessage(op string, x, y Type) string {
	msg := fmt.Sprintf("operator %s takes integers (indices, sizes, int params and inputs, i32(…)), not numbers", op)
	switch {
	case x == Bool || y == Bool:
		msg = fmt.Sprintf("operator %s takes integers, not booleans", op)
	case op == "^":
		msg += " (for a power use pow(a, b))"
	case op == "&" || op == "|":
		msg += fmt.Sprintf(" (for logic use %s%s)", op, op)
	case op == "%":
		msg += " (for numbers write x - floor(x / y) * y)"
	}
	return msg
}

func (c *Checker) call(v *Call) Type {
	if v.Fn == ToFloat {
		return c.toFloat(v)
	}
	if _, ok := IntConversions[v.Fn]; ok {
		return c.toInt(v)
	}
	if _, ok := PairFuncs[v.Fn]; ok {
		return c.pair(v)
	}
	if TopKFuncs[v.Fn] {
		return c.topk(v)
	}
	if v.Fn == Detach {
		return c.detach(v)
	}
	if v.Fn == "select" && len(v.Args) == 3 {
		t, _ := c.intSelect(v)
		return t
	}
	f, ok := funcs.Lookup(v.Fn)
	if !ok {
		c.Report(v.Off, fmt.Sprintf("unknown function %q%s", v.Fn, diag.Suggest(v.Fn, funcs.Names())))
		for _, a := range v.Args {
			c.Check(a)
		}
		return Unknown
	}
	if f.Reduction && (!c.Rowwise || c.NoTopK && !strings.HasPrefix(v.Fn, "row_")) { // a matmul's epilogue reduces rows only
		what := "reduces over a row"
		if strings.HasPrefix(v.Fn, "col_") {
			what = "reduces a column over the rows"
		}
		if strings.HasPrefix(v.Fn, "total_") {
			what = "reduces over every element of the launch"
		}
		c.Report(v.Off, fmt.Sprintf("%s %s: it is only available in rowwise kernels", v.Fn, what))
	}
	if len(v.Args) != f.Arity() {
		c.Report(v.Off, fmt.Sprintf("%s takes %d argument%s, got %d", v.Fn, f.Arity(), plural(f.Arity()), len(v.Args)))
	}
	for i, a := range v.Args {
		want := Num
		if i < f.Arity() {
			want = f.Args[i]
		}
		t := c.Check(a)
		if t == Int && want == Num {
			c.Report(a.Offset(), fmt.Sprintf("argument %d of %s must be a number, not an integer: convert it with f32(…)", i+1, v.Fn))
		} else if t != Unknown && t != want {
			c.Report(a.Offset(), fmt.Sprintf("argument %d of %s must be a %s, not a %s", i+1, v.Fn, want, t))
		}
	}
	return f.Result
}

// detach checks detach(x): one number, which it is.
func (c *Checker) detach(v *Call) Type {
	for _, arg := range v.Args {
		if t := c.Check(arg); t != Num && t != Unknown {
			c.Report(arg.Offset(), fmt.Sprintf("detach takes a number, not %s", a(t)))
		}
	}
	if len(v.Args) != 1 {
		c.Report(v.Off, fmt.Sprintf("detach takes 1 argument, got %d", len(v.Args)))
	}
	return Num
}

// toFloat checks f32(x): one integer argument, a number result.
func (c *Checker) toFloat(v *Call) Type {
	if len(v.Args) != 1 {
		c.Report(v.Off, fmt.Sprintf("f32 takes 1 argument, got %d", len(v.Args)))
		for _, a := range v.Args {
			c.Check(a)
		}
		return Num
	}
	switch t := c.Check(v.Args[0]); t {
	case Num:
		if _, lit := intLiteral(v.Args[0]); lit {
			markInt(v.Args[0])
			return Num
		}
		c.Report(v.Args[0].Offset(), "f32 converts an integer (an index, a size, an i32 or u32 param); this is already a number")
	case Bool:
		c.Report(v.Args[0].Offset(), "f32 converts an integer, not a boolean (try select(cond, 1, 0))")
	}
	return Num
}

// pair checks pair_interleaved(x), pair_half(x) and pair_half(x, w):
// rowwise only, a first argument naming an input (which one may be paired
// the caller checks) and, for pair_half, an optional integer width w (which
// names it may use the caller checks: values uniform across the row).
func (c *Checker) pair(v *Call) Type {
	if !c.Rowwise {
		c.Report(v.Off, fmt.Sprintf("%s reads the element paired with this one in a row: it is only available in rowwise kernels", v.Fn))
	}
	arity := "1 argument"
	if PairFuncs[v.Fn] == "half" {
		arity = "1 or 2 arguments (x, or x and the rotated width)"
	}
	if len(v.Args) < 1 || len(v.Args) > 2 || len(v.Args) == 2 && PairFuncs[v.Fn] != "half" {
		msg := fmt.Sprintf("%s takes %s, got %d", v.Fn, arity, len(v.Args))
		if len(v.Args) == 2 {
			msg += " (interleaved pairs (2k, 2k+1) need no width: the columns past a partial rotary width pair among themselves; pass them through with select)"
		}
		c.Report(v.Off, msg)
		for _, a := range v.Args {
			c.Check(a)
		}
		return Num
	}
	if len(v.Args) == 2 {
		switch t := c.Check(v.Args[1]); t {
		case Num:
			c.Report(v.Args[1].Offset(), fmt.Sprintf("the width of %s must be an integer (an i32 param, cols, a let of those), not a number", v.Fn))
		case Bool:
			c.Report(v.Args[1].Offset(), fmt.Sprintf("the width of %s must be an integer (an i32 param, cols, a let of those), not a boolean", v.Fn))
		}
	}
	id, ok := v.Args[0].(*Ident)
	if !ok {
		c.Report(v.Args[0].Offset(), fmt.Sprintf("%s takes the name of a [rows, cols] input, not an expression", v.Fn))
		return Num
	}
	c.Check(id) // which inputs may be paired is the IR's to say
	return Num
}

// toInt checks i32(x), i8(x), u8(x): one number or integer argument, an
// integer result.
func (c *Checker) toInt(v *Call) Type {
	if len(v.Args) != 1 {
		c.Report(v.Off, fmt.Sprintf("%s takes 1 argument, got %d", v.Fn, len(v.Args)))
		for _, a := range v.Args {
			c.Check(a)
		}
		return Int
	}
	if t := c.Check(v.Args[0]); t == Bool {
		c.Report(v.Args[0].Offset(), fmt.Sprintf("%s converts a number or an integer, not a boolean (try select(cond, 1, 0))", v.Fn))
	}
	return Int
}

// intSelect checks select(cond, a, b) whose branches are integers: an
// integer. ok is false when neither branch is an integer (the table's
// numeric select applies); the arguments are checked either way.
func (c *Checker) intSelect(v *Call) (Type, bool) {
	cond := c.Check(v.Args[0])
	a, b := unify(v.Args[1], v.Args[2], c.Check(v.Args[1]), c.Check(v.Args[2]))
	if cond != Unknown && cond != Bool {
		c.Report(v.Args[0].Offset(), fmt.Sprintf("argument 1 of select must be a boolean, not a %s", cond))
	}
	for i, t := range []Type{a, b} {
		if t == Bool {
			c.Report(v.Args[i+1].Offset(), fmt.Sprintf("argument %d of select must be a number, not a boolean", i+2))
		}
	}
	switch {
	case a == Int && b == Int:
		return Int, true
	case a == Int || b == Int:
		if a != Unknown && b != Unknown {
			c.Report(v.Off, "select mixes an integer and a number: convert the integer with f32(…)")
		}
		return Unknown, true
	case a == Unknown && b == Unknown:
		return Unknown, true
	}
	return Num, true
}

// IndexKindMessage refuses a subscript of name in a kernel of another kind.
func IndexKindMessage(name, kind string) string {
	return fmt.Sprintf("%s[…] reads a tensor at computed coordinates: indexing needs kind: rowwise (this kernel is %s)", name, kind)
}

// a is a type with its article ("an integer").
func a(t Type) string {
	if t == Int {
		return "an integer"
	}
	return "a " + t.String()
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
		name := ""
		switch v := m.(type) {
		case *Ident:
			name = v.Name
		case *Index:
			name = v.Name
		}
		if name != "" && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	})
	return out
}
