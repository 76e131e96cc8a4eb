// Package funcs is the function set of the formula language: one row per
// function (see Table) with every fact a part of kgen needs about it — the
// checker (arity, types), the IR (float64 value, error propagation), the
// Metal and CUDA emitters (spellings per math mode, prelude blocks) and the
// Go emitter (the CPU reference's evaluation).
//
// It is a leaf package: it imports only the standard library, so expr, ir
// and every emitter can read it without import cycles.
package funcs

import "sort"

// Type is the type of a formula value.
type Type int

// The value types. Numbers are computed in the kernel's compute type.
const (
	Unknown Type = iota
	Num
	Bool
	// Int is a 32-bit signed integer: an index (i; row, col), a size (n;
	// rows, cols) or an i32/u32 param. Integer arithmetic wraps; ints meet
	// numbers only through the explicit conversion f32(…).
	Int
)

func (t Type) String() string {
	switch t {
	case Num:
		return "number"
	case Bool:
		return "boolean"
	case Int:
		return "integer"
	}
	return "unknown"
}

// Func is one function of the formula language.
type Func struct {
	Name   string
	Args   []Type // the argument types; len(Args) is the arity
	Result Type

	// Reduction marks the row reductions (row_sum, …), the column
	// reductions (col_sum, …) and the top-k selections (topk, topk_index,
	// topk_norm): special forms of rowwise kernels that the rowwise
	// schedule computes, not calls. Their combine rule belongs to
	// the IR; of the columns below they have none.
	Reduction bool

	// Eval is the function in float64 with no rounding: the ideal result
	// that tolerances are measured against (ir.Eval64).
	Eval func(a []float64) float64

	// Bound says how the function propagates and adds error (ir.EvalBound).
	Bound Bound

	// MSL and CUDA are the C-family spellings per math mode.
	MSL, CUDA Modes

	// Go is the CPU reference's evaluation (emit/golang).
	Go GoRef

	// Grad is the partial derivative by each argument, in the formula
	// language, over the arguments (x for a one-argument function, else a,
	// b, c) and the result y: what package backward multiplies an adjoint
	// by. Where the derivative is undefined it follows PyTorch: abs at 0
	// gives 0, a tie of min or max splits the gradient evenly, clamp at a
	// bound passes it to x; a NaN operand of min or max (which yields the
	// other operand) gets none. nil: not differentiable by formula (select
	// routes gradients; reductions are the schedule's).
	Grad []string
	// GradY is a one-argument function's derivative in the result y alone,
	// where Grad also reads x: what the backward takes when y is a saved
	// value (save:), so x's row reduction need not be recomputed. "" when
	// Grad already reads y alone or no such form exists.
	GradY string
}

// grad sets a one-argument row's derivative.
func (f Func) grad(d string) Func {
	f.Grad = []string{d}
	return f
}

// partial marks a row whose function is NaN outside its domain
// (Bound.Partial).
func (f Func) partial() Func {
	f.Bound.Partial = true
	return f
}

// monotone marks a row whose function is monotone (Bound.Monotone).
func (f Func) monotone() Func {
	f.Bound.Monotone = true
	return f
}

// gradY sets a one-argument row's derivative in y alone (GradY).
func (f Func) gradY(d string) Func {
	f.GradY = d
	return f
}

// Arity is the number of arguments.
func (f *Func) Arity() int { return len(f.Args) }

// Rule is how a function's result error follows from its operands'.
type Rule int

const (
	// Library: a library or prelude function, accurate to within FuncUlps
	// units of roundoff. Operand errors propagate by the partial
	// derivatives (Deriv), and the function adds its own error.
	Library Rule = iota
	// Exact: the result is the operand's exact image (abs, floor, ceil):
	// the operand's error passes through and nothing is added.
	// Discontinuities (floor, ceil) are not modelled.
	Exact
	// Choice: the result is one of the operands (minNum, maxNum, clamp),
	// and which one may flip within the errors: the largest operand error.
	Choice
	// Select: select(c, a, b) is a or b: the value and error of the
	// operand picked.
	Select
	// Rounded: correctly rounded like arithmetic (fma): operand errors
	// propagate by Deriv, then one rounding of the compute type.
	Rounded
)

// Bound is a function's row in the running error analysis.
type Bound struct {
	Rule Rule
	// Deriv is ∂f/∂a[i] at a, given v = f(a); Library and Rounded only.
	// Only its magnitude matters.
	Deriv func(a []float64, v float64, i int) float64
	// Curv, when set, bounds |f''| everywhere (1 for sin and cos): the
	// operand error e then adds at most Curv·e²/2 beyond first order, which
	// keeps the bound honest when e is not small (sin of a large angle
	// computed in f32).
	Curv float64
	// Step marks a monotone step function (floor, ceil, round, rint,
	// trunc): the Exact rule maps the operand's error interval through it.
	Step bool
	// Partial marks a function that is NaN outside its domain (log of a
	// negative, pow of a negative base to a fraction): where an operand's
	// error interval crosses the domain's edge, whether the compute type
	// gives NaN is undecided, and the bound is infinite there. Partial
	// functions are also bounded by their interval's ends, as Monotone.
	Partial bool
	// Monotone marks a one-argument function monotone everywhere (exp,
	// tanh, erf…): the largest move at its operand's error interval's
	// ends bounds its result exactly, where first order understates a
	// convex function with a wide interval (exp(64.3 ± 0.25) moves by
	// 28%, first order says 25%).
	Monotone bool
}

// Spelling is how a C-family backend calls a function in one math mode.
type Spelling struct {
	// Name is the callee ("expf", "kgen_math::exp"), or Conditional.
	Name string
	// Prelude is the template block (templates/<backend>/prelude.tmpl)
	// that defines Name; empty when the backend's library has it.
	Prelude string
}

// Conditional is the Name of a spelling written with C's conditional
// operator, (c ? a : b), instead of a call.
const Conditional = "?:"

// Modes are a backend's spellings per math mode (a spec's `math:`).
type Modes struct {
	Precise, Fast Spelling
}

// Mode returns the spelling for a spec's math mode ("fast" or otherwise
// precise).
func (m Modes) Mode(math string) Spelling {
	if math == "fast" {
		return m.Fast
	}
	return m.Precise
}

// Qual is a Go function: import path and name.
type Qual struct{ Path, Name string }

// Runtime is the import path of kgenrt, the runtime generated Go imports;
// rows name its helpers (kgenrt/math.go) by this path.
const Runtime = "github.com/kgen-dev/kgen/kgenrt"

// GoRef is how the generated CPU reference evaluates a function.
type GoRef struct {
	// Float64 is the function the float64 (unrounded) reference calls.
	// Unless Float32 or Choice says otherwise, the rounded reference calls
	// it too, on operands widened to float64, and rounds the result to
	// float32 and then to the compute type.
	Float64 Qual
	// Float32, when set, is what the rounded reference calls instead: a
	// function of float32 operands already rounded once to float32 (FMA32).
	Float32 Qual
	// Choice: Float64 is generic over kgenrt.Float and only picks one of
	// its operands, so both references call it and it never rounds.
	Choice bool
}

// ViaFloat64 reports whether the rounded reference evaluates the function
// in float64 and rounds the result (the reference's doc comment says so).
func (g GoRef) ViaFloat64() bool { return !g.Choice && g.Float32 == (Qual{}) }

var byName = func() map[string]*Func {
	m := make(map[string]*Func, len(Table))
	for i := range Table {
		m[Table[i].Name] = &Table[i]
	}
	return m
}()

// Lookup returns the function called name.
func Lookup(name string) (*Func, bool) {
	f, ok := byName[name]
	return f, ok
}

// Names lists the function names, sorted (for suggestions and tests).
func Names() []string {
	names := make([]string, 0, len(Table))
	for _, f := range Table {
		names = append(names, f.Name)
	}
	sort.Strings(names)
	return names
}

// The integer semantics of the formula language, one definition shared by
// the IR's evaluation and the CPU reference (kgenrt calls these) and
// mirrored by the kernels' prelude helpers (kgen_f2i, kgen_idiv, kgen_irem):
// + - * wrap; / truncates and % takes the dividend's sign, both giving 0 for
// a zero divisor (and / of the most negative value by -1 wraps); & | ^ are
// bitwise; << and >> (arithmetic) shift by the count modulo 32.

// IntOp applies an integer operator of the formula language.
func IntOp(op string, p, q int32) int32 {
	switch op {
	case "+":
		return p + q
	case "-":
		return p - q
	case "*":
		return p * q
	case "/":
		if q == 0 {
			return 0
		}
		return p / q // Go defines MinInt32 / -1 as MinInt32
	case "%":
		if q == 0 {
			return 0
		}
		return p % q
	case "&":
		return p & q
	case "|":
		return p | q
	case "^":
		return p ^ q
	case "<<":
		return p << (uint32(q) & 31)
	case ">>":
		return p >> (uint32(q) & 31)
	}
	return 0
}

// FloatToInt converts a number to an integer in [lo, hi]: toward zero,
// saturating at the bounds, NaN giving 0 (i32(x), i8(x), u8(x)).
func FloatToInt(v float64, lo, hi int32) int32 {
	switch {
	case v != v:
		return 0
	case v <= float64(lo):
		return lo
	case v >= float64(hi):
		return hi
	}
	return int32(v)
}
