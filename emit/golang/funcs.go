package golang

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/ir"
)

// SupportedFunc reports whether the Go emitter can evaluate a formula
// function: its row in the funcs table names a Go reference. A test holds
// it to the whole elementwise function set.
func SupportedFunc(name string) bool {
	f, ok := funcs.Lookup(name)
	return ok && f.Go.Float64 != (funcs.Qual{})
}

func (w *exprWriter) call(e *ir.Expr) value {
	args := make([]jen.Code, len(e.Args))
	allKonst := true
	for i, a := range e.Args {
		v := w.expr(a, false)
		args[i] = v.code
		allKonst = allKonst && (v.konst || a.Bool)
	}
	if !SupportedFunc(e.Func) {
		w.fail(fmt.Errorf("the Go emitter has no CPU evaluation of function %s", e.Func))
		return value{code: jen.Null(), prec: precPrimary}
	}
	f, _ := funcs.Lookup(e.Func)
	fn := jen.Qual(f.Go.Float64.Path, f.Go.Float64.Name)
	switch {
	case f.Go.Choice:
		if allKonst {
			// Only untyped constants: Go would infer int, so instantiate.
			fn = fn.Index(w.float())
		}
		return value{code: fn.Call(args...), prec: precPrimary}
	case w.mode == dtype.Invalid:
		return value{code: fn.Call(args...), prec: precPrimary}
	case f.Go.Float32 != (funcs.Qual{}):
		return w.rounded(jen.Qual(f.Go.Float32.Path, f.Go.Float32.Name).Call(args...))
	}
	for i := range args {
		args[i] = jen.Float64().Call(args[i])
	}
	return w.rounded(jen.Float32().Call(fn.Call(args...)))
}

// rounded applies the compute type's rounding to a float32 result: none for
// f32, one more rounding for f16 and bf16.
func (w *exprWriter) rounded(code *jen.Statement) value {
	if w.mode == dtype.F16 || w.mode == dtype.BF16 {
		return w.round(code)
	}
	return value{code: code, prec: precPrimary}
}
