package ir

import (
	"math"
	"strconv"

	"github.com/kgen-dev/kgen/funcs"
)

// Eval64 evaluates the kernel's formulas for one element in float64, with
// no rounding anywhere: the ideal result that tolerances are measured
// against. inputs and params are in binding order; the outputs come back in
// binding order.
func (k *Kernel) Eval64(inputs, params []float64) []float64 {
	lets := make([]float64, 0, len(k.Steps))
	env := evalEnv{k: k, inputs: inputs, params: params}
	var outs []float64
	for _, s := range k.Steps {
		env.lets = lets
		v := env.eval(s.Expr)
		if s.Output {
			outs = append(outs, v)
		} else {
			lets = append(lets, v)
		}
	}
	return outs
}

type evalEnv struct {
	k              *Kernel
	inputs, params []float64
	lets           []float64
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (e evalEnv) eval(x *Expr) float64 {
	switch x.Op {
	case OpLiteral:
		v, _ := strconv.ParseFloat(x.Text, 64)
		return v
	case OpRef:
		return e.ref(x)
	case OpUnary:
		a := e.eval(x.Args[0])
		if x.Operator == "!" {
			return b2f(a == 0)
		}
		return -a
	case OpBinary:
		return binary64(x.Operator, e.eval(x.Args[0]), e.eval(x.Args[1]))
	case OpCall:
		args := make([]float64, len(x.Args))
		for i, a := range x.Args {
			args[i] = e.eval(a)
		}
		return call64(x.Func, args)
	}
	return math.NaN()
}

func (e evalEnv) ref(x *Expr) float64 {
	switch x.Ref {
	case RefInput:
		return e.inputs[x.Index]
	case RefParam:
		return e.params[x.Index]
	case RefConstant:
		v, _ := strconv.ParseFloat(e.k.Constants[x.Index].Text, 64)
		return v
	case RefLet:
		return e.lets[x.Index]
	case RefInf:
		return math.Inf(1)
	}
	return math.Pi
}

func binary64(op string, a, b float64) float64 {
	switch op {
	case "+":
		return a + b
	case "-":
		return a - b
	case "*":
		return a * b
	case "/":
		return a / b
	case "<":
		return b2f(a < b)
	case "<=":
		return b2f(a <= b)
	case ">":
		return b2f(a > b)
	case ">=":
		return b2f(a >= b)
	case "==":
		return b2f(a == b)
	case "!=":
		return b2f(a != b)
	case "&&":
		return b2f(a != 0 && b != 0)
	case "||":
		return b2f(a != 0 || b != 0)
	}
	return math.NaN()
}

// call64 evaluates a function by its row in the function table.
func call64(fn string, a []float64) float64 {
	if f, ok := funcs.Lookup(fn); ok && f.Eval != nil {
		return f.Eval(a)
	}
	return math.NaN()
}
