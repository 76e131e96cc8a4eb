package ir

import (
	"math"
	"strconv"
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

// call64 evaluates a function; min and max are IEEE minNum/maxNum like
// MSL's fmin/fmax (a NaN operand yields the other operand).
func call64(fn string, a []float64) float64 {
	switch fn {
	case "abs":
		return math.Abs(a[0])
	case "exp":
		return math.Exp(a[0])
	case "exp2":
		return math.Exp2(a[0])
	case "log":
		return math.Log(a[0])
	case "log2":
		return math.Log2(a[0])
	case "log1p":
		return math.Log1p(a[0])
	case "expm1":
		return math.Expm1(a[0])
	case "sqrt":
		return math.Sqrt(a[0])
	case "rsqrt":
		return 1 / math.Sqrt(a[0])
	case "tanh":
		return math.Tanh(a[0])
	case "sigmoid":
		return 1 / (1 + math.Exp(-a[0]))
	case "erf":
		return math.Erf(a[0])
	case "sin":
		return math.Sin(a[0])
	case "cos":
		return math.Cos(a[0])
	case "floor":
		return math.Floor(a[0])
	case "ceil":
		return math.Ceil(a[0])
	case "pow":
		return math.Pow(a[0], a[1])
	case "min":
		return minNum(a[0], a[1])
	case "max":
		return -minNum(-a[0], -a[1])
	case "clamp":
		return minNum(-minNum(-a[0], -a[1]), a[2])
	case "fma":
		return math.FMA(a[0], a[1], a[2])
	case "select":
		if a[0] != 0 {
			return a[1]
		}
		return a[2]
	}
	return math.NaN()
}

func minNum(a, b float64) float64 {
	switch {
	case math.IsNaN(a):
		return b
	case math.IsNaN(b):
		return a
	}
	return math.Min(a, b)
}
