package ir

import (
	"math"
	"strconv"
)

// Rounding describes the arithmetic a kernel's formulas run in, for
// EvalBound: Unit is the unit roundoff of the compute type (2^-24 for f32,
// 2^-11 for f16, 2^-8 for bf16); FuncUlps is how many units of roundoff a
// library or prelude function may be off by; InputUnits[i] is the roundoff
// of converting input i to the compute type (0 when exact).
type Rounding struct {
	Unit       float64
	FuncUlps   float64
	InputUnits []float64
}

// dual is a float64 value and a first-order bound on the absolute error
// the compute-type evaluation of the same expression may have.
type dual struct{ v, e float64 }

// EvalBound is Eval64 with running error analysis: beside each output it
// returns a first-order bound on how far an evaluation that rounds every
// operation to the compute type may land from the float64 value. Errors are
// propagated through each operation by its derivative and every operation
// adds its own rounding, so cancellation (1 + tanh(x) for x << 0, sums of
// large terms with a small result) widens the bound exactly where the
// compute type loses digits, instead of every tolerance being loosened
// everywhere. Discontinuities (floor, ceil, comparisons) are not modelled.
func (k *Kernel) EvalBound(inputs, params []float64, r Rounding) (vals, bounds []float64) {
	env := boundEnv{k: k, inputs: inputs, params: params, r: r}
	var lets []dual
	for _, s := range k.Steps {
		env.lets = lets
		d := env.eval(s.Expr)
		if s.Output {
			vals, bounds = append(vals, d.v), append(bounds, d.e)
		} else {
			lets = append(lets, d)
		}
	}
	return vals, bounds
}

type boundEnv struct {
	k              *Kernel
	inputs, params []float64
	lets           []dual
	r              Rounding
}

// round adds the rounding of a result to its propagated error.
func (b boundEnv) round(v, e float64) dual { return dual{v, e + b.r.Unit*math.Abs(v)} }

func (b boundEnv) eval(x *Expr) dual {
	switch x.Op {
	case OpLiteral:
		v, _ := strconv.ParseFloat(x.Text, 64)
		return b.round(v, 0)
	case OpRef:
		switch x.Ref {
		case RefInput:
			v := b.inputs[x.Index]
			if x.Index < len(b.r.InputUnits) {
				return dual{v, b.r.InputUnits[x.Index] * math.Abs(v)}
			}
			return dual{v, 0}
		case RefLet:
			return b.lets[x.Index]
		case RefParam:
			return b.round(b.params[x.Index], 0)
		}
		return b.round(evalEnv{k: b.k}.ref(x), 0)
	case OpUnary:
		a := b.eval(x.Args[0])
		if x.Operator == "!" {
			return dual{b2f(a.v == 0), 0}
		}
		return dual{-a.v, a.e}
	case OpBinary:
		return b.binary(x.Operator, b.eval(x.Args[0]), b.eval(x.Args[1]))
	case OpCall:
		args := make([]dual, len(x.Args))
		for i, a := range x.Args {
			args[i] = b.eval(a)
		}
		return b.call(x.Func, args)
	}
	return dual{math.NaN(), 0}
}

func (b boundEnv) binary(op string, x, y dual) dual {
	v := binary64(op, x.v, y.v)
	switch op {
	case "+", "-":
		return b.round(v, x.e+y.e)
	case "*":
		return b.round(v, math.Abs(y.v)*x.e+math.Abs(x.v)*y.e)
	case "/":
		return b.round(v, (x.e+math.Abs(v)*y.e)/math.Abs(y.v))
	}
	return dual{v, 0} // comparisons and logic: exact (flips near ties are not modelled)
}

// call propagates through a function by its derivative, then adds the
// function's own error of FuncUlps units (exact functions add none).
func (b boundEnv) call(fn string, a []dual) dual {
	args := make([]float64, len(a))
	for i, d := range a {
		args[i] = d.v
	}
	v := call64(fn, args)
	x, e := args[0], a[0].e
	fe := b.r.FuncUlps * b.r.Unit * math.Abs(v)
	switch fn {
	case "abs", "floor", "ceil":
		return dual{v, e}
	case "min", "max", "clamp":
		return dual{v, maxOf(a)}
	case "select":
		if a[0].v != 0 {
			return a[1]
		}
		return a[2]
	case "fma":
		return b.round(v, math.Abs(args[1])*e+math.Abs(x)*a[1].e+a[2].e)
	case "pow":
		y := args[1]
		return dual{v, math.Abs(y*math.Pow(x, y-1))*e + math.Abs(math.Log(math.Abs(x))*v)*a[1].e + fe}
	}
	return dual{v, math.Abs(derivative(fn, x, v))*e + fe}
}

// derivative is f'(x) for the one-argument functions, given v = f(x).
func derivative(fn string, x, v float64) float64 {
	switch fn {
	case "exp", "expm1":
		return math.Exp(x)
	case "exp2":
		return math.Ln2 * v
	case "log":
		return 1 / x
	case "log2":
		return 1 / (x * math.Ln2)
	case "log1p":
		return 1 / (1 + x)
	case "sqrt":
		return 0.5 / v
	case "rsqrt":
		return -0.5 * v / x
	case "tanh":
		return 1 - v*v
	case "sigmoid":
		return v * (1 - v)
	case "erf":
		return 2 / math.SqrtPi * math.Exp(-x*x)
	case "sin":
		return math.Cos(x)
	case "cos":
		return math.Sin(x)
	}
	return math.NaN()
}

func maxOf(a []dual) float64 {
	m := 0.0
	for _, d := range a {
		m = math.Max(m, d.e)
	}
	return m
}
