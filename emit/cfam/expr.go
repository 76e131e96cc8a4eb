package cfam

import (
	"math"
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/expr"
	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/ir"
)

// renderer writes expressions in one compute type and dialect. The tree
// walk (precedence, parentheses, evaluation order) is shared; spellings
// come from the dialect and the funcs table.
type renderer struct {
	d       *Dialect
	compute dtype.DType
	math    string // the spec's math mode, which picks the function spellings
}

// cPrec: C precedence levels (higher binds tighter); 7 = unary, 8 = atom.
func cPrec(e *ir.Expr) int {
	switch e.Op {
	case ir.OpBinary:
		switch e.Operator {
		case "||":
			return 1
		case "&&":
			return 2
		case "==", "!=":
			return 3
		case "<", "<=", ">", ">=":
			return 4
		case "+", "-":
			return 5
		case "*", "/":
			return 6
		}
	case ir.OpUnary:
		return 7
	}
	return 8
}

func (r renderer) expr(e *ir.Expr) string {
	if e.Int {
		return r.intExpr(e)
	}
	if e.Op == ir.OpCall && e.Func == "f32" {
		// Exact in float below 2^24; one rounding to nearest even into a
		// narrow compute type, as the Go reference does.
		f := "static_cast<float>(" + r.intExpr(e.Args[0]) + ")"
		if r.compute == dtype.F32 {
			return f
		}
		return r.round(f)
	}
	switch e.Op {
	case ir.OpLiteral:
		v, _ := dtype.Literal(e.Text, r.compute)
		return r.number(v)
	case ir.OpRef:
		switch e.Ref {
		case ir.RefPi:
			return r.number(dtype.Round(math.Pi, r.compute))
		case ir.RefInf:
			return r.number(math.Inf(1))
		}
		return e.Name
	case ir.OpUnary:
		return r.unary(e)
	case ir.OpBinary:
		return r.binary(e)
	case ir.OpCall:
		return r.call(e)
	}
	return "/* unknown */"
}

// round converts a float expression to the narrow compute type.
func (r renderer) round(f string) string { return r.d.FromFloat(r.d.Types[r.compute], f) }

func (r renderer) unary(e *ir.Expr) string {
	x := e.Args[0]
	if e.Operator == "-" && r.d.NarrowArith(r.compute) {
		return r.round(prefix("-", r.asFloat(x)))
	}
	s := r.expr(x)
	if cPrec(x) < 8 {
		s = "(" + s + ")"
	}
	return prefix(e.Operator, s)
}

// prefix applies a unary operator to an operand, parenthesizing an operand
// that itself starts with an operator: "-" before "-x" would otherwise be
// the decrement "--x", and "!" before "!=" or "-" before "-=" never form,
// but a sign never sits next to another sign.
func prefix(op, s string) string {
	if s != "" && strings.ContainsRune("-+!~", rune(s[0])) {
		return op + "(" + s + ")"
	}
	return op + s
}

// asFloat renders a number-valued expression of an f16 or bf16 compute type
// as a float expression of the same value: literals as exact float literals,
// negation in float (it is exact), everything else converted.
func (r renderer) asFloat(e *ir.Expr) string {
	switch {
	case e.Op == ir.OpLiteral:
		v, _ := dtype.Literal(e.Text, r.compute)
		return r.floatLiteral(float32(v))
	case e.Op == ir.OpRef && e.Ref == ir.RefPi:
		return r.floatLiteral(float32(dtype.Round(math.Pi, r.compute)))
	case e.Op == ir.OpRef && e.Ref == ir.RefInf:
		return r.floatLiteral(float32(math.Inf(1)))
	case e.Op == ir.OpUnary && e.Operator == "-":
		return prefix("-", r.asFloat(e.Args[0]))
	}
	return r.d.ToFloat(r.expr(e))
}

// binary keeps the tree's shape: parentheses wherever C precedence would
// otherwise regroup it (equal precedence on the right, lower on either side).
func (r renderer) binary(e *ir.Expr) string {
	x, y := e.Args[0], e.Args[1]
	if x.Int { // a comparison of integers
		return r.intOperand(x, cPrec(e)) + " " + e.Operator + " " + r.intOperand(y, cPrec(e)+1)
	}
	if r.d.NarrowArith(r.compute) && (!e.Bool || isComparison(e.Operator)) {
		// Narrow arithmetic is spelled out in float: + - * / computed in
		// float and rounded once equal the narrow operation.
		expr := r.asFloat(x) + " " + e.Operator + " " + r.asFloat(y)
		if e.Bool {
			return expr
		}
		return r.round(expr)
	}
	p := cPrec(e)
	xs, ys := r.expr(x), r.expr(y)
	// && inside || is parenthesized although C would not need it: compilers
	// warn about the mix, and readers should not have to remember.
	if cPrec(x) < p || (e.Operator == "||" && x.Operator == "&&" && x.Op == ir.OpBinary) {
		xs = "(" + xs + ")"
	}
	if cPrec(y) <= p || (e.Operator == "||" && y.Operator == "&&" && y.Op == ir.OpBinary) {
		ys = "(" + ys + ")"
	}
	return xs + " " + e.Operator + " " + ys
}

func isComparison(op string) bool {
	switch op {
	case "<", "<=", ">", ">=", "==", "!=":
		return true
	}
	return false
}

// call renders each argument once, in the compute type or (f16 and bf16
// functions) as float: rendering both would double the work at every
// nesting level, 2^64 for 64 nested calls.
func (r renderer) call(e *ir.Expr) string {
	f, ok := funcs.Lookup(e.Func)
	if !ok {
		return "/* unknown function */"
	}
	sp := r.d.Spell(f, r.math)
	inFloat := sp.Name != funcs.Conditional && r.compute != dtype.F32 && !(r.d.PreludeOverloads && sp.Prelude != "")
	args := make([]string, len(e.Args))
	for i, a := range e.Args {
		if inFloat {
			args[i] = r.asFloat(a)
		} else {
			args[i] = r.expr(a)
		}
	}
	switch {
	case sp.Name == funcs.Conditional:
		return "(" + args[0] + " ? " + args[1] + " : " + args[2] + ")"
	case !inFloat:
		return sp.Name + "(" + strings.Join(args, ", ") + ")"
	}
	// f16 and bf16 compute: functions are evaluated in float and rounded.
	return r.round(sp.Name + "(" + strings.Join(args, ", ") + ")")
}

// number writes a value that is exact in the compute type: a float literal
// for f32, a converted float literal for f16 and bf16 (exactly
// representable, so the conversion does not round again).
func (r renderer) number(v float64) string {
	s := r.floatLiteral(float32(v))
	if r.compute == dtype.F32 {
		return s
	}
	return r.round(s)
}

// floatLiteral is the shortest literal that reads back as f.
func (r renderer) floatLiteral(f float32) string {
	switch {
	case math.IsInf(float64(f), 1):
		return r.d.InfLit
	case math.IsInf(float64(f), -1):
		return r.d.NegLit
	}
	s := strconv.FormatFloat(float64(f), 'g', -1, 32)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s + "f"
}

// intExpr renders a 32-bit integer expression. + - * and negation are done
// on unsigned values and converted back, so overflow wraps (two's
// complement) as Go's int32 does, where signed overflow in C would be
// undefined; / and % go through the prelude's kgen_idiv and kgen_irem
// (0 for a zero divisor, no trap on INT_MIN / -1); shifts take the count
// modulo 32 (a left shift on unsigned). The conversions saturate
// (kgen_f2i, kgen_sati): funcs.IntOp and funcs.FloatToInt are the same rules.
func (r renderer) intExpr(e *ir.Expr) string {
	u := r.d.Uint
	switch e.Op {
	case ir.OpLiteral:
		return e.Text
	case ir.OpRef:
		return e.Name
	case ir.OpUnary:
		return "(int)(0u - (" + u + ")(" + r.intExpr(e.Args[0]) + "))"
	case ir.OpBinary:
		x, y := r.intExpr(e.Args[0]), r.intExpr(e.Args[1])
		switch e.Operator {
		case "/":
			return "kgen_idiv(" + x + ", " + y + ")"
		case "%":
			return "kgen_irem(" + x + ", " + y + ")"
		case "&", "|", "^":
			return "(" + x + " " + e.Operator + " " + y + ")"
		case "<<":
			return "(int)((" + u + ")(" + x + ") << ((" + y + ") & 31))"
		case ">>":
			return "((" + x + ") >> ((" + y + ") & 31))"
		}
		return "(int)((" + u + ")(" + x + ") " + e.Operator + " (" + u + ")(" + y + "))"
	case ir.OpCall:
		if lim, ok := expr.IntConversions[e.Func]; ok {
			return r.intConversion(e.Args[0], lim)
		}
		// select
		return "(" + r.expr(e.Args[0]) + " ? " + r.intExpr(e.Args[1]) + " : " + r.intExpr(e.Args[2]) + ")"
	}
	return "/* unknown */"
}

// intConversion renders i32/i8/u8 of a number (kgen_f2i on its float
// value) or of an integer (kgen_sati; i32 of an integer is itself).
func (r renderer) intConversion(arg *ir.Expr, lim [2]int64) string {
	lo, hi := intLit(lim[0]), intLit(lim[1])
	if arg.Int {
		if lim == expr.IntConversions["i32"] {
			return r.intExpr(arg)
		}
		return "kgen_sati(" + r.intExpr(arg) + ", " + lo + ", " + hi + ")"
	}
	f := r.expr(arg)
	if r.compute != dtype.F32 {
		f = r.asFloat(arg)
	}
	return "kgen_f2i(" + f + ", " + lo + ", " + hi + ")"
}

// intLit spells an int constant; INT_MIN has no literal in C.
func intLit(v int64) string {
	if v == -1<<31 {
		return "(-2147483647 - 1)"
	}
	return strconv.FormatInt(v, 10)
}

// intPrelude is the prelude block of the integer helpers.
const intPrelude = "prelude_kgen_int"

// needsIntHelpers reports whether e itself calls a prelude integer helper.
func needsIntHelpers(e *ir.Expr) bool {
	if !e.Int {
		return false
	}
	if e.Op == ir.OpBinary {
		return e.Operator == "/" || e.Operator == "%"
	}
	_, conv := expr.IntConversions[e.Func]
	return e.Op == ir.OpCall && conv
}

// intOperand is an integer operand of a comparison, parenthesized unless
// it is a name or a literal.
func (r renderer) intOperand(e *ir.Expr, _ int) string {
	s := r.intExpr(e)
	if e.Op == ir.OpRef || e.Op == ir.OpLiteral {
		return s
	}
	return "(" + s + ")"
}
