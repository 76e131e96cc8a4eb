package golang

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// mathFuncs are the formula functions evaluated in float64 and rounded: the
// package and name of the float64 function that computes each.
var mathFuncs = map[string][2]string{
	"abs": {"math", "Abs"}, "exp": {"math", "Exp"}, "exp2": {"math", "Exp2"}, "log": {"math", "Log"},
	"log2": {"math", "Log2"}, "log1p": {"math", "Log1p"}, "expm1": {"math", "Expm1"},
	"sqrt": {"math", "Sqrt"}, "tanh": {"math", "Tanh"}, "erf": {"math", "Erf"}, "sin": {"math", "Sin"},
	"cos": {"math", "Cos"}, "floor": {"math", "Floor"}, "ceil": {"math", "Ceil"}, "pow": {"math", "Pow"},
	"rsqrt": {RuntimePath, "Rsqrt"}, "sigmoid": {RuntimePath, "Sigmoid"},
}

// choiceFuncs only pick one of their operands (IEEE minNum/maxNum like MSL
// fmin/fmax, clamp, select), so they never round.
var choiceFuncs = map[string]string{"min": "MinNum", "max": "MaxNum", "clamp": "Clamp", "select": "Where"}

// SupportedFunc reports whether the Go emitter can evaluate a formula
// function; a test holds it to the whole elementwise function set.
func SupportedFunc(name string) bool {
	_, m := mathFuncs[name]
	_, c := choiceFuncs[name]
	return m || c || name == "fma"
}

func (w *exprWriter) call(e *ir.Expr) value {
	args := make([]jen.Code, len(e.Args))
	allKonst := true
	for i, a := range e.Args {
		v := w.expr(a, false)
		args[i] = v.code
		allKonst = allKonst && (v.konst || a.Bool)
	}
	if fn, ok := choiceFuncs[e.Func]; ok {
		code := rt(fn)
		if allKonst {
			// Only untyped constants: Go would infer int, so instantiate.
			code = code.Index(w.float())
		}
		return value{code: code.Call(args...), prec: precPrimary}
	}
	if e.Func == "fma" {
		if w.mode == dtype.Invalid {
			return value{code: jen.Qual("math", "FMA").Call(args...), prec: precPrimary}
		}
		return w.rounded(rt("FMA32").Call(args...))
	}
	fn, ok := mathFuncs[e.Func]
	if !ok {
		w.fail(fmt.Errorf("the Go emitter has no CPU evaluation of function %s", e.Func))
		return value{code: jen.Null(), prec: precPrimary}
	}
	if w.mode == dtype.Invalid {
		return value{code: jen.Qual(fn[0], fn[1]).Call(args...), prec: precPrimary}
	}
	for i := range args {
		args[i] = jen.Float64().Call(args[i])
	}
	return w.rounded(jen.Float32().Call(jen.Qual(fn[0], fn[1]).Call(args...)))
}

// rounded applies the compute type's rounding to a float32 result: none for
// f32, one more rounding for f16 and bf16.
func (w *exprWriter) rounded(code *jen.Statement) value {
	if w.mode == dtype.F16 || w.mode == dtype.BF16 {
		return w.round(code)
	}
	return value{code: code, prec: precPrimary}
}
