package funcs

import "math"

// Table is the formula language's function set, one row per function.
//
// Adding a function is one row here, plus a prelude block in
// templates/msl/prelude.tmpl or templates/cuda/prelude.tmpl when a backend's
// library lacks it (the row's Prelude names the block): the checker, the
// float64 evaluation, the error bound, and the Metal, CUDA and Go emitters
// all read the row. Tests then ask for coverage, not code: table_test.go
// checks the row is complete and its derivative right, pipeline_test.go
// sends the function through every emitter, tests/golden_test.go wants a
// golden spec that calls it, and verify/mslcpu's prelude test wants an
// accuracy sweep for a new MSL prelude block.
//
// Spellings: MSL calls transcendental functions through kgen_math::, an
// alias the kernel file sets to metal::precise or metal::fast, so one MSL
// name serves both modes. CUDA precise is libdevice; CUDA fast swaps the
// transcendental functions for the SFU intrinsics (__expf, tanh.approx.f32),
// while exact functions (abs, floor, min, fma, …) and those without an
// intrinsic stay libdevice. min and max are IEEE minNum and maxNum (fmin,
// fmax): a NaN operand yields the other operand.
var Table = []Func{
	unary("abs", math.Abs, exact, metal("metal::fabs"), cuda("fabsf"), goMath("Abs")).grad("select(x > 0, 1, select(x < 0, -1, 0))"),
	unary("floor", math.Floor, step, metal("metal::floor"), cuda("floorf"), goMath("Floor")).grad("0"),
	unary("ceil", math.Ceil, step, metal("metal::ceil"), cuda("ceilf"), goMath("Ceil")).grad("0"),
	// The roundings to an integral value, still a number: round (halves
	// away from zero), rint (halves to even), trunc (toward zero). i8(…),
	// i32(…) then convert to an integer (expr.IntConversions).
	unary("round", math.Round, step, metal("metal::round"), cuda("roundf"), goMath("Round")).grad("0"),
	unary("rint", math.RoundToEven, step, metal("metal::rint"), cuda("rintf"), goMath("RoundToEven")).grad("0"),
	unary("trunc", math.Trunc, step, metal("metal::trunc"), cuda("truncf"), goMath("Trunc")).grad("0"),
	unary("exp", math.Exp, library1(func(x, _ float64) float64 { return math.Exp(x) }),
		kgenMath("exp"), cudaFast("expf", "__expf"), goMath("Exp")).grad("y").monotone(),
	unary("exp2", math.Exp2, library1(func(_, v float64) float64 { return math.Ln2 * v }),
		kgenMath("exp2"), cuda("exp2f"), goMath("Exp2")).grad("0.6931471805599453 * y").monotone(),
	unary("expm1", math.Expm1, library1(func(x, _ float64) float64 { return math.Exp(x) }),
		mslPrelude("expm1"), cuda("expm1f"), goMath("Expm1")).grad("y + 1").monotone(),
	unary("log", math.Log, library1(func(x, _ float64) float64 { return 1 / x }),
		kgenMath("log"), cudaFast("logf", "__logf"), goMath("Log")).grad("1 / x").partial(),
	unary("log2", math.Log2, library1(func(x, _ float64) float64 { return 1 / (x * math.Ln2) }),
		kgenMath("log2"), cudaFast("log2f", "__log2f"), goMath("Log2")).grad("1.4426950408889634 / x").partial(),
	unary("log1p", math.Log1p, library1(func(x, _ float64) float64 { return 1 / (1 + x) }),
		mslPrelude("log1p"), cuda("log1pf"), goMath("Log1p")).grad("1 / (1 + x)").partial(),
	unary("sqrt", math.Sqrt, library1(func(_, v float64) float64 { return 0.5 / v }),
		kgenMath("sqrt"), cuda("sqrtf"), goMath("Sqrt")).grad("0.5 / y").partial(),
	unary("rsqrt", func(x float64) float64 { return 1 / math.Sqrt(x) },
		library1(func(x, v float64) float64 { return -0.5 * v / x }),
		kgenMath("rsqrt"), cuda("rsqrtf"), goRuntime("Rsqrt")).grad("-0.5 * y / x").gradY("-0.5 * y * y * y").partial(),
	unary("tanh", math.Tanh, library1(func(_, v float64) float64 { return 1 - v*v }),
		kgenMath("tanh"), Modes{call("tanhf"), prelude("kgen_tanh_approx")}, goMath("Tanh")).grad("1 - y * y").monotone(),
	unary("sigmoid", func(x float64) float64 { return 1 / (1 + math.Exp(-x)) },
		library1(func(_, v float64) float64 { return v * (1 - v) }),
		mslPrelude("sigmoid"), Modes{prelude("kgen_sigmoid"), prelude("kgen_sigmoid_fast")}, goRuntime("Sigmoid")).grad("y * (1 - y)").monotone(),
	unary("erf", math.Erf, library1(func(x, _ float64) float64 { return 2 / math.SqrtPi * math.Exp(-x*x) }),
		mslPrelude("erf"), cuda("erff"), goMath("Erf")).grad("1.1283791670955126 * exp(-(x * x))").monotone(),
	unary("sin", math.Sin, curved(library1(func(x, _ float64) float64 { return math.Cos(x) }), 1),
		kgenMath("sin"), cudaFast("sinf", "__sinf"), goMath("Sin")).grad("cos(x)"),
	unary("cos", math.Cos, curved(library1(func(x, _ float64) float64 { return math.Sin(x) }), 1), // −sin: the sign does not matter
		kgenMath("cos"), cudaFast("cosf", "__cosf"), goMath("Cos")).grad("-sin(x)"),
	{
		Name: "pow", Args: nums(2), Result: Num,
		Eval:  func(a []float64) float64 { return math.Pow(a[0], a[1]) },
		Bound: Bound{Rule: Library, Deriv: powDeriv, Partial: true},
		MSL:   kgenMath("pow"),
		CUDA:  cudaFast("powf", "__powf"),
		Go:    goMath("Pow"),
		Grad:  []string{"b * pow(a, b - 1)", "y * log(a)"},
	},
	{
		Name: "min", Args: nums(2), Result: Num,
		Eval:  func(a []float64) float64 { return minNum(a[0], a[1]) },
		Bound: Bound{Rule: Choice},
		MSL:   metal("metal::fmin"),
		CUDA:  cuda("fminf"),
		Go:    goChoice("MinNum"),
		Grad:  []string{"select(a < b || b != b, 1, select(a == b, 0.5, 0))", "select(b < a || a != a, 1, select(a == b, 0.5, 0))"},
	},
	{
		Name: "max", Args: nums(2), Result: Num,
		Eval:  func(a []float64) float64 { return -minNum(-a[0], -a[1]) },
		Bound: Bound{Rule: Choice},
		MSL:   metal("metal::fmax"),
		CUDA:  cuda("fmaxf"),
		Go:    goChoice("MaxNum"),
		Grad:  []string{"select(a > b || b != b, 1, select(a == b, 0.5, 0))", "select(b > a || a != a, 1, select(a == b, 0.5, 0))"},
	},
	{
		// clamp(x, lo, hi) = min(max(x, lo), hi), with minNum and maxNum.
		Name: "clamp", Args: nums(3), Result: Num,
		Eval:  func(a []float64) float64 { return minNum(-minNum(-a[0], -a[1]), a[2]) },
		Bound: Bound{Rule: Choice},
		MSL:   metal("metal::clamp"),
		CUDA:  both(prelude("kgen_clamp")),
		Go:    goChoice("Clamp"),
		Grad:  []string{"select(a >= b && a <= c, 1, 0)", "select(a < b, 1, 0)", "select(a > c, 1, 0)"},
	},
	{
		Name: "fma", Args: nums(3), Result: Num,
		Eval:  func(a []float64) float64 { return math.FMA(a[0], a[1], a[2]) },
		Bound: Bound{Rule: Rounded, Deriv: fmaDeriv},
		MSL:   metal("metal::fma"),
		CUDA:  cuda("fmaf"),
		Go:    GoRef{Float64: Qual{"math", "FMA"}, Float32: Qual{Runtime, "FMA32"}},
		Grad:  []string{"b", "a", "1"},
	},
	{
		// select(c, a, b): a when c holds, else b.
		Name: "select", Args: []Type{Bool, Num, Num}, Result: Num,
		Eval: func(a []float64) float64 {
			if a[0] != 0 {
				return a[1]
			}
			return a[2]
		},
		Bound: Bound{Rule: Select},
		MSL:   both(call(Conditional)),
		CUDA:  both(call(Conditional)),
		Go:    goChoice("Where"),
	},
	reduction("row_sum"),
	reduction("row_mean"),
	reduction("row_max"),
	reduction("row_min"),
	reduction("col_sum"),
	reduction("col_mean"),
	reduction("col_max"),
	reduction("col_min"),
	reduction("total_sum"),
	selection("topk", Num),
	selection("topk_index", Int),
	selection("topk_norm", Num),
}

// The helpers below keep each row to its facts.

func nums(n int) []Type {
	t := make([]Type, n)
	for i := range t {
		t[i] = Num
	}
	return t
}

func unary(name string, f func(float64) float64, b Bound, msl, cu Modes, g GoRef) Func {
	return Func{
		Name: name, Args: nums(1), Result: Num,
		Eval:  func(a []float64) float64 { return f(a[0]) },
		Bound: b, MSL: msl, CUDA: cu, Go: g,
	}
}

func reduction(name string) Func {
	return Func{Name: name, Args: nums(1), Result: Num, Reduction: true}
}

// selection is a top-k function (docs/topk.md): topk(key, k) over the
// row, k an integer literal; like a reduction, the rowwise schedule
// computes it (ir.TopK), so the row has no call columns.
func selection(name string, result Type) Func {
	return Func{Name: name, Args: []Type{Num, Int}, Result: result, Reduction: true}
}

var exact = Bound{Rule: Exact}

// step is Exact for the roundings to an integral value: monotone step
// functions, so an operand known within [x-e, x+e] gives a result within
// [f(x-e), f(x+e)] (rint(126.99999…) is 127, not 127 minus the error).
var step = Bound{Rule: Exact, Step: true}

// library1 is the Library rule of a one-argument function, given f'(x)
// from x and v = f(x).
func library1(d func(x, v float64) float64) Bound {
	return Bound{Rule: Library, Deriv: func(a []float64, v float64, _ int) float64 { return d(a[0], v) }}
}

// curved adds a global bound on the second derivative to a one-argument
// Library rule.
func curved(b Bound, c float64) Bound {
	b.Curv = c
	return b
}

func powDeriv(a []float64, v float64, i int) float64 {
	x, y := a[0], a[1]
	if i == 0 {
		return y * math.Pow(x, y-1)
	}
	return math.Log(math.Abs(x)) * v
}

func fmaDeriv(a []float64, _ float64, i int) float64 {
	switch i {
	case 0:
		return a[1]
	case 1:
		return a[0]
	}
	return 1
}

// minNum is IEEE minNum, like MSL's fmin: a NaN operand yields the other.
func minNum(a, b float64) float64 {
	switch {
	case math.IsNaN(a):
		return b
	case math.IsNaN(b):
		return a
	}
	return math.Min(a, b)
}

func call(name string) Spelling { return Spelling{Name: name} }

// prelude is a kgen helper defined by the backend's prelude block
// prelude_<name>.
func prelude(name string) Spelling { return Spelling{Name: name, Prelude: "prelude_" + name} }

func both(s Spelling) Modes { return Modes{Precise: s, Fast: s} }

// metal is an exact metal:: function, the same in both modes.
func metal(name string) Modes { return both(call(name)) }

// kgenMath is a metal:: function reached through the kgen_math alias.
func kgenMath(name string) Modes { return both(call("kgen_math::" + name)) }

// mslPrelude is kgen_<name> from the MSL prelude, which has float, half and
// bfloat overloads and calls kgen_math:: itself where the mode matters.
func mslPrelude(name string) Modes {
	return both(Spelling{Name: "kgen_" + name, Prelude: "prelude_" + name})
}

// cuda is a libdevice function with no fast intrinsic.
func cuda(name string) Modes { return both(call(name)) }

func cudaFast(precise, fast string) Modes { return Modes{call(precise), call(fast)} }

func goMath(name string) GoRef { return GoRef{Float64: Qual{"math", name}} }

func goRuntime(name string) GoRef { return GoRef{Float64: Qual{Runtime, name}} }

func goChoice(name string) GoRef { return GoRef{Float64: Qual{Runtime, name}, Choice: true} }
