package golang

import (
	"fmt"
	"math"
	"strconv"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/expr"
	"github.com/kgen-dev/kgen/ir"
)

// Go operator precedence, plus 6 for unary and 7 for primary expressions.
const (
	precUnary   = 6
	precPrimary = 7
)

var goPrec = map[string]int{"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3,
	"+": 4, "-": 4, "|": 4, "^": 4, "*": 5, "/": 5, "%": 5, "&": 5, "<<": 5, ">>": 5}

// intHelpers are the integer operators the reference calls kgenrt for: a
// zero divisor panics in Go, and Go's shifts do not take the count modulo 32.
var intHelpers = map[string]string{"/": "IDiv", "%": "IRem", "<<": "Shl", ">>": "Shr"}

// value is a rendered expression.
type value struct {
	code  *jen.Statement
	prec  int
	konst bool // a Go constant expression (literals only)
}

// exprWriter renders IR expressions as Go in one evaluation mode: a compute
// type (F32, F16, BF16; values held in float32) or, with mode Invalid, the
// unrounded float64 evaluation.
//
// The rounding rules it encodes:
//   - f32: Go float32 arithmetic rounds every operation; a product that feeds
//     an addition, subtraction or negation is wrapped in float32(…), the
//     conversion the Go spec defines as forbidding fused multiply-add.
//   - f16, bf16: every operation is computed in float32 and rounded to the
//     compute type (kgenrt.RoundF16/RoundBF16); exact for + - * / and sqrt.
//   - functions: evaluated in float64 (package math), rounded to float32,
//     then to the compute type; min, max, clamp and select only choose.
//   - literals: rounded to the compute type (dtype.Literal) and written as
//     the shortest decimal that reads back as that value. Two constant
//     operands are never left to Go's exact constant arithmetic: the left
//     one is hoisted into a variable (litN), so the operation is done in the
//     evaluation type at run time (and 1/0 is +Inf, not a compile error).
type exprWriter struct {
	mode    dtype.DType
	names   *names
	hoisted []jen.Code // statements to emit before the current line
	nlit    int
	err     error
}

// float is the Go type of values in this mode.
func (w *exprWriter) float() *jen.Statement {
	if w.mode == dtype.Invalid {
		return jen.Float64()
	}
	return jen.Float32()
}

// step renders a step's expression; results that may later feed an
// addition are protected from fusion like any other operand.
func (w *exprWriter) step(e *ir.Expr) *jen.Statement {
	return w.expr(e, true).code
}

func (w *exprWriter) expr(e *ir.Expr, feedsAdd bool) value {
	if e.Int {
		return w.intExpr(e)
	}
	if e.Op == ir.OpCall && e.Func == "f32" { // the integer in the compute type
		x := w.intExpr(e.Args[0]).code
		switch w.mode {
		case dtype.Invalid:
			return value{code: jen.Float64().Call(x), prec: precPrimary}
		case dtype.F32:
			return value{code: jen.Float32().Call(x), prec: precPrimary}
		}
		return w.round(jen.Float32().Call(x))
	}
	switch e.Op {
	case ir.OpLiteral:
		return w.literal(e.Text)
	case ir.OpRef:
		if e.Ref == ir.RefInf {
			inf := jen.Qual("math", "Inf").Call(jen.Lit(1))
			if w.mode == dtype.Invalid {
				return value{code: inf, prec: precPrimary}
			}
			return value{code: jen.Float32().Call(inf), prec: precPrimary}
		}
		if e.Ref == ir.RefPi {
			if w.mode == dtype.Invalid {
				return value{code: jen.Qual("math", "Pi"), prec: precPrimary, konst: true}
			}
			return w.number(dtype.Round(math.Pi, w.mode))
		}
		return value{code: jen.Id(w.names.local(e.Name)), prec: precPrimary}
	case ir.OpUnary:
		if v, ok := w.negLiteral(e); ok {
			return v
		}
		x := w.expr(e.Args[0], e.Operator == "-")
		return value{code: jen.Op(e.Operator).Add(paren(x, precUnary+1)), prec: precUnary, konst: x.konst}
	case ir.OpBinary:
		return w.binary(e, feedsAdd)
	case ir.OpCall:
		return w.call(e)
	}
	w.fail(fmt.Errorf("unknown expression node %v", e.Op))
	return value{code: jen.Null(), prec: precPrimary}
}

// binary keeps the tree's shape: parentheses wherever Go's precedence would
// regroup it, since float arithmetic is not associative.
func (w *exprWriter) binary(e *ir.Expr, feedsAdd bool) value {
	op := e.Operator
	p, ok := goPrec[op]
	if !ok {
		w.fail(fmt.Errorf("unknown operator %q", op))
		return value{code: jen.Null(), prec: precPrimary}
	}
	additive := op == "+" || op == "-"
	if e.Args[0].Int { // a comparison of integers
		return value{code: jen.Add(paren(w.intExpr(e.Args[0]), p)).Op(op).Add(paren(w.intExpr(e.Args[1]), p+1)), prec: p}
	}
	x, y := w.expr(e.Args[0], additive), w.expr(e.Args[1], additive)
	if x.konst && y.konst {
		x = w.hoist(x)
	}
	code := jen.Add(paren(x, p)).Op(op).Add(paren(y, p+1))
	v := value{code: code, prec: p}
	if e.Bool {
		return v
	}
	switch {
	case w.mode == dtype.F16 || w.mode == dtype.BF16:
		return w.round(code)
	case w.mode == dtype.F32 && op == "*" && feedsAdd:
		return value{code: jen.Float32().Call(code), prec: precPrimary}
	}
	return v
}

// round wraps a float32 value in the rounding to the f16/bf16 compute type.
func (w *exprWriter) round(code *jen.Statement) value {
	fn := "RoundF16"
	if w.mode == dtype.BF16 {
		fn = "RoundBF16"
	}
	return value{code: rt(fn).Call(code), prec: precPrimary}
}

// paren parenthesizes v when it binds looser than min.
func paren(v value, min int) *jen.Statement {
	if v.prec < min {
		return jen.Parens(v.code)
	}
	return v.code
}

// hoist moves a constant operand into a variable of the evaluation type.
func (w *exprWriter) hoist(v value) value {
	name := fmt.Sprintf("lit%d", w.nlit)
	w.nlit++
	w.hoisted = append(w.hoisted, jen.Id(name).Op(":=").Add(w.float()).Call(v.code))
	return value{code: jen.Id(name), prec: precPrimary}
}

// literal is a number as the mode sees it: rounded to the compute type, or
// the nearest float64 for the unrounded evaluation.
func (w *exprWriter) literal(text string) value {
	if w.mode == dtype.Invalid {
		v, err := strconv.ParseFloat(text, 64)
		if err != nil {
			w.fail(fmt.Errorf("literal %s: %w", text, err))
		}
		return number64(v)
	}
	v, err := dtype.Literal(text, w.mode)
	if err != nil {
		w.fail(fmt.Errorf("literal %s: %w", text, err))
	}
	return w.number(v)
}

// negLiteral folds the negation of a literal into one number. Go's
// constant arithmetic has no negative zero (-0 is 0, so 1/(x * -0) would
// be +Inf where the kernel computes -Inf); a folded -0 is written as a
// run-time value instead (see number).
func (w *exprWriter) negLiteral(e *ir.Expr) (value, bool) {
	if e.Operator != "-" || e.Args[0].Op != ir.OpLiteral {
		return value{}, false
	}
	text := "-" + e.Args[0].Text
	if w.mode == dtype.Invalid {
		v, err := strconv.ParseFloat(text, 64)
		if err != nil {
			w.fail(fmt.Errorf("literal %s: %w", text, err))
		}
		return number64(v), true
	}
	return w.literal(text), true
}

// number writes v, exact in the compute type, as the shortest decimal that
// converts back to the same float32. A negative number binds like a unary
// minus; negative zero, which no Go constant can hold, is a float32 run-time
// value.
func (w *exprWriter) number(v float64) value {
	if v == 0 && math.Signbit(v) {
		return value{code: jen.Float32().Call(negZero()), prec: precPrimary}
	}
	return value{code: jen.Id(strconv.FormatFloat(v, 'g', -1, 32)), prec: numPrec(v), konst: true}
}

func number64(v float64) value {
	if v == 0 && math.Signbit(v) {
		return value{code: negZero(), prec: precPrimary}
	}
	return value{code: jen.Id(strconv.FormatFloat(v, 'g', -1, 64)), prec: numPrec(v), konst: true}
}

// negZero is -0 as a float64 run-time value.
func negZero() *jen.Statement {
	return jen.Qual("math", "Copysign").Call(jen.Lit(0), jen.Lit(-1))
}

// numPrec is how tightly a written number binds: a leading minus is a unary
// operator, so -2 under another minus must be parenthesized.
func numPrec(v float64) int {
	if math.Signbit(v) {
		return precUnary
	}
	return precPrimary
}

func (w *exprWriter) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// intExpr renders a 32-bit integer expression over int32 values: Go's
// int32 arithmetic wraps on overflow, as the kernels' does.
func (w *exprWriter) intExpr(e *ir.Expr) value {
	switch e.Op {
	case ir.OpLiteral:
		v, err := strconv.ParseInt(e.Text, 10, 32)
		if err != nil {
			w.fail(fmt.Errorf("integer %s: %w", e.Text, err))
		}
		return value{code: jen.Int32().Call(jen.Lit(int(v))), prec: precPrimary}
	case ir.OpRef:
		return value{code: jen.Id(w.names.local(e.Name)), prec: precPrimary}
	case ir.OpUnary:
		return value{code: jen.Op("-").Add(paren(w.intExpr(e.Args[0]), precUnary+1)), prec: precUnary}
	case ir.OpBinary:
		x, y := w.intExpr(e.Args[0]), w.intExpr(e.Args[1])
		if fn, ok := intHelpers[e.Operator]; ok { // defined where Go panics or differs
			return value{code: rt(fn).Call(x.code, y.code), prec: precPrimary}
		}
		p := goPrec[e.Operator]
		return value{code: jen.Add(paren(x, p)).Op(e.Operator).Add(paren(y, p+1)), prec: p}
	case ir.OpCall:
		if lim, ok := expr.IntConversions[e.Func]; ok {
			return w.intConversion(e.Args[0], lim)
		}
		// select: Go has no conditional expression
		return value{code: jen.Func().Params().Int32().Block(
			jen.If(w.expr(e.Args[0], false).code).Block(jen.Return(w.intExpr(e.Args[1]).code)),
			jen.Return(w.intExpr(e.Args[2]).code),
		).Call(), prec: precPrimary}
	}
	w.fail(fmt.Errorf("unknown integer expression node %v", e.Op))
	return value{code: jen.Null(), prec: precPrimary}
}

// intConversion is i32/i8/u8 (lim its range) of a number (kgenrt.F2I: toward
// zero, saturating, NaN 0) or of an integer (kgenrt.SatI).
func (w *exprWriter) intConversion(arg *ir.Expr, lim [2]int64) value {
	lo, hi := jen.Lit(int(lim[0])), jen.Lit(int(lim[1]))
	if arg.Int {
		return value{code: rt("SatI").Call(w.intExpr(arg).code, lo, hi), prec: precPrimary}
	}
	x := w.expr(arg, false)
	code := x.code
	if x.konst {
		code = jen.Add(w.float()).Call(code)
	}
	return value{code: rt("F2I").Call(code, lo, hi), prec: precPrimary}
}
