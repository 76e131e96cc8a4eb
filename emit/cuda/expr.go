package cuda

import (
	"math"
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/ir"
)

// dialect is the table of differences between the CUDA and the MSL
// renderings of one expression tree: function spellings per math mode and
// type names. The tree walk (precedence, parentheses, evaluation order)
// mirrors emit/msl/expr.go line for line; only the spellings come from here.
type dialect struct {
	math string // the spec's math mode: picks each function's CUDA spelling in the funcs table
}

func dialectFor(math string) dialect { return dialect{math: math} }

// spell is a function's CUDA spelling in the dialect's math mode.
func (d dialect) spell(fn string) (funcs.Spelling, bool) {
	f, ok := funcs.Lookup(fn)
	if !ok {
		return funcs.Spelling{}, false
	}
	return f.CUDA.Mode(d.math), true
}

// cudaNames are the CUDA element types of the storage and compute dtypes.
var cudaNames = map[dtype.DType]string{dtype.F32: "float", dtype.F16: "__half", dtype.BF16: "__nv_bfloat16",
	dtype.I32: "int", dtype.U32: "unsigned int"}

// renderer writes expressions in one compute type.
type renderer struct {
	compute dtype.DType
	d       dialect
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

// narrow reports whether the compute type is f16 or bf16: every operation
// is then spelled in float and rounded once (kgen_to<C>), which equals the
// 16-bit operation for + - * / and keeps one code path for both types.
func (r renderer) narrow() bool { return r.compute != dtype.F32 }

func (r renderer) expr(e *ir.Expr) string {
	switch e.Op {
	case ir.OpLiteral:
		v, _ := dtype.Literal(e.Text, r.compute)
		return r.number(v)
	case ir.OpRef:
		if e.Ref == ir.RefPi {
			return r.number(dtype.Round(math.Pi, r.compute))
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

func (r renderer) unary(e *ir.Expr) string {
	x := e.Args[0]
	if e.Operator == "-" && r.narrow() {
		return r.round("-" + r.asFloat(x))
	}
	s := r.expr(x)
	if cPrec(x) < 8 {
		s = "(" + s + ")"
	}
	return e.Operator + s
}

// round converts a float expression to the narrow compute type.
func (r renderer) round(f string) string {
	return "kgen_to<" + cudaNames[r.compute] + ">(" + f + ")"
}

// asFloat renders a number-valued expression as a float expression of the
// same value: literals as exact float literals, negation in float (exact),
// everything else converted.
func (r renderer) asFloat(e *ir.Expr) string {
	if !r.narrow() {
		s := r.expr(e)
		if cPrec(e) < 8 {
			s = "(" + s + ")"
		}
		return s
	}
	switch {
	case e.Op == ir.OpLiteral:
		v, _ := dtype.Literal(e.Text, r.compute)
		return floatLiteral(float32(v))
	case e.Op == ir.OpRef && e.Ref == ir.RefPi:
		return floatLiteral(float32(dtype.Round(math.Pi, r.compute)))
	case e.Op == ir.OpUnary && e.Operator == "-":
		return "-" + r.asFloat(e.Args[0])
	}
	return "kgen_f(" + r.expr(e) + ")"
}

// binary keeps the tree's shape: parentheses wherever C precedence would
// otherwise regroup it (equal precedence on the right, lower on either side).
func (r renderer) binary(e *ir.Expr) string {
	x, y := e.Args[0], e.Args[1]
	if r.narrow() && (!e.Bool || isComparison(e.Operator)) {
		expr := r.asFloat(x) + " " + e.Operator + " " + r.asFloat(y)
		if e.Bool {
			return expr
		}
		return r.round(expr)
	}
	p := cPrec(e)
	xs, ys := r.expr(x), r.expr(y)
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

func (r renderer) call(e *ir.Expr) string {
	args := make([]string, len(e.Args))
	for i, a := range e.Args {
		args[i] = r.expr(a)
	}
	sp, ok := r.d.spell(e.Func)
	if !ok {
		return "/* unknown function */"
	}
	if sp.Name == funcs.Conditional {
		return "(" + args[0] + " ? " + args[1] + " : " + args[2] + ")"
	}
	name := sp.Name
	if !r.narrow() {
		return name + "(" + strings.Join(args, ", ") + ")"
	}
	// f16 and bf16 compute: functions are evaluated in float and rounded.
	for i, a := range e.Args {
		args[i] = r.asFloat(a)
	}
	return r.round(name + "(" + strings.Join(args, ", ") + ")")
}

// number writes a value that is exact in the compute type.
func (r renderer) number(v float64) string {
	s := floatLiteral(float32(v))
	if !r.narrow() {
		return s
	}
	return r.round(s)
}

// floatLiteral is the shortest literal that reads back as f.
func floatLiteral(f float32) string {
	switch {
	case math.IsInf(float64(f), 1):
		return "__int_as_float(0x7f800000)"
	case math.IsInf(float64(f), -1):
		return "(-__int_as_float(0x7f800000))"
	}
	s := strconv.FormatFloat(float64(f), 'g', -1, 32)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s + "f"
}
