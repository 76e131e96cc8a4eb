package ir

import (
	"math"
	"strconv"

	"github.com/kgen-dev/kgen/expr"
	"github.com/kgen-dev/kgen/funcs"
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
	// Overflow and Underflow, when set, give the compute type's range: a
	// computed value whose magnitude reaches Overflow becomes ±Inf, one at
	// or below Underflow becomes ±0, as rounding to the compute type makes
	// them. The reference then meets infinities and NaNs where the compute
	// type does (in f32, sigmoid(-167) is 0, so -167·sigmoid(-167)·∞ is NaN,
	// not ∞). Underflow is also the absolute error of rounding into the
	// subnormal range (fl(x) = x(1+δ) + η, |η| <= Underflow), which every
	// rounded result adds to its bound. Zero values keep float64's range.
	Overflow, Underflow float64
	// Round, when set, rounds a float64 to the compute type (nearest even,
	// with its range). An input stored wider than the compute type (a
	// pinned f32 input with f16 or bf16 compute) is converted by the kernel
	// before any arithmetic: a deterministic rounding, so the reference
	// applies it to the value instead of only widening the bound — an f32
	// 7e-18 is 0 in f16, and 0·∞ is NaN there, not -∞ (issue 12, class 9).
	Round func(float64) float64
	// Literal, when set, is the value a literal or constant's text has in
	// the compute type, rounded once from the decimal as the emitted source
	// bakes it (dtype.Literal). Parsing to float64 first and rounding again
	// is a double rounding: 340282356779733661537539395458142568448 is
	// FLT_MAX in the kernel but lands on the f64 tie above it, which rounds
	// to +Inf (issue 12, class 9).
	Literal func(text string) (float64, error)
}

// fit applies the compute type's range to v, the exact result of an
// operation on compute-type operands known to within e (before the
// operation's own rounding). A result surely past the largest finite value
// becomes ±Inf, one surely below the underflow threshold ±0. When the
// operands' errors leave open which side of the overflow edge the compute
// type lands on, the bound becomes +Inf: either outcome is right (a float64
// sum can pass 65520 where the f16 sum, rounding as it goes, stays at
// 65504). Underflow is decided on v alone: rounding to nearest even sends
// exactly half the smallest subnormal to 0.
func (r Rounding) fit(v, e float64) (float64, float64) {
	a := math.Abs(v)
	switch {
	case a == 0 || math.IsInf(v, 0) || math.IsNaN(v):
	case r.Overflow > 0 && a-e >= r.Overflow:
		return math.Copysign(math.Inf(1), v), 0
	case r.Overflow > 0 && a+e >= r.Overflow:
		return v, math.Inf(1)
	case a <= r.Underflow:
		return math.Copysign(0, v), e
	}
	return v, e
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
// everywhere. Discontinuities are bounded where the compute type may land
// on either side of them: floor and ceil by their value at x ± error, a
// comparison near a tie by letting a select take either branch (logic).
func (k *Kernel) EvalBound(inputs, params []float64, r Rounding) (vals, bounds []float64) {
	return boundEnv{k: k, inputs: inputs, params: params, r: r}.steps()
}

// EvalBoundAt is EvalBound at element i of n: the values the formulas'
// integers i and n take.
func (k *Kernel) EvalBoundAt(i, n int, inputs, params []float64, r Rounding) (vals, bounds []float64) {
	ints := map[string]int32{"i": int32(i), "n": int32(n)}
	return boundEnv{k: k, inputs: inputs, params: params, r: r, ints: ints}.steps()
}

// MatmulAt is a matmul element's position: Row and Col in the [M, N]
// product acc, the values of the formulas' row, col, m and n.
type MatmulAt struct{ Row, Col, M, N int }

func (a MatmulAt) ints() map[string]int32 {
	return map[string]int32{"row": int32(a.Row), "col": int32(a.Col), "m": int32(a.M), "n": int32(a.N)}
}

// EvalEpilogueBound is EvalBound for a matmul's epilogue at element at:
// inputs are the element inputs (ElementInputs) there, accs the
// accumulators' values and accErrs the bounds on their f32 sums' errors.
func (k *Kernel) EvalEpilogueBound(at MatmulAt, inputs, accs, accErrs, params []float64, r Rounding) (vals, bounds []float64) {
	env := boundEnv{k: k, inputs: inputs, params: params, r: r, ints: at.ints()}
	for i, a := range accs {
		env.accs = append(env.accs, dual{a, accErrs[i]})
	}
	return env.steps()
}

// steps evaluates every step, returning the outputs' values and bounds.
func (env boundEnv) steps() (vals, bounds []float64) {
	k := env.k
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
	reds           []dual    // rowwise: the row reductions' values
	accs           []dual    // matmul: the accumulators at the element
	pairs          []float64 // rowwise: each input at the paired element (RefPair)
	gathers        []float64 // rowwise: each gather's element (RefGather, gather.go)
	gatherErrs     []float64 // and its bound: a packed input's dequantization (quant_rows.go), else 0
	r              Rounding
	ints           map[string]int32 // the indices and sizes (IndexNames) at this element
}

// round adds the rounding of a result to its propagated error.
func (b boundEnv) round(v, e float64) dual {
	v, e = b.r.fit(v, e)
	switch {
	case math.IsInf(v, 0) && math.IsInf(e, 1):
		return dual{v, e} // an infinity whose sign an operand's unbounded error leaves undecided
	case math.IsInf(v, 0):
		return dual{v, 0} // an infinite operand or a certain overflow: the type's result is the same infinity
	case math.IsNaN(v):
		return dual{v, e} // NaN, or not where e is infinite (undecided): no rounding to add
	case e == 0 && b.r.representable(v):
		return dual{v, 0} // exact operands and a result the type holds: no rounding
	}
	return dual{v, e + b.r.Unit*math.Abs(v) + b.r.Underflow}
}

// representable reports whether v is a normal number of the compute type
// (or 0): at most -log2(Unit) significant bits, at least the smallest
// normal (Underflow/Unit) in magnitude. Literals like 0.5 and results like
// 2·x then carry no rounding error.
func (r Rounding) representable(v float64) bool {
	if v == 0 {
		return true
	}
	if r.Unit == 0 || math.Abs(v) < r.Underflow/r.Unit {
		return false
	}
	m, _ := math.Frexp(v)
	scaled := math.Ldexp(m, int(-math.Log2(r.Unit)))
	return scaled == math.Trunc(scaled)
}

func (b boundEnv) eval(x *Expr) dual {
	if x.Int { // float64 holds every int32
		v, e := b.evalInt(x)
		return dual{float64(v), e}
	}
	if x.Op == OpCall && x.Func == "f32" { // an integer in the compute type
		v, e := b.evalInt(x.Args[0])
		return b.round(float64(v), e)
	}
	switch x.Op {
	case OpLiteral:
		if v, ok := b.literal(x.Text); ok {
			return v
		}
		v, _ := strconv.ParseFloat(x.Text, 64)
		return b.round(v, 0)
	case OpRef:
		switch x.Ref {
		case RefInput, RefPair, RefGather:
			v, in := b.inputs[x.Index], x.Index
			switch x.Ref {
			case RefPair:
				v = b.pairs[x.Index]
			case RefGather:
				v, in = b.gathers[x.Index], b.k.Rows().Gathers[x.Index].Input
				if b.k.Bindings[in].Quant != nil { // computed in f32 as the kernel reads it
					return dual{v, b.gatherErrs[x.Index]}
				}
			}
			if in < len(b.r.InputUnits) && b.r.InputUnits[in] != 0 && b.r.Round != nil {
				return dual{b.r.Round(v), 0}
			}
			if in < len(b.r.InputUnits) && b.r.InputUnits[in] != 0 && !math.IsInf(v, 0) {
				return dual{v, b.r.InputUnits[in] * math.Abs(v)}
			}
			return dual{v, 0} // an exact conversion (0·∞ would make an infinite input's bound NaN)
		case RefLet:
			return b.lets[x.Index]
		case RefReduce:
			return b.reds[x.Index]
		case RefAcc:
			return b.accs[x.Index]
		case RefParam:
			return b.round(b.params[x.Index], 0)
		}
		if x.Ref == RefConstant {
			if v, ok := b.literal(b.k.Constants[x.Index].Text); ok {
				return v
			}
		}
		return b.round(evalEnv{k: b.k}.ref(x), 0)
	case OpUnary:
		a := b.eval(x.Args[0])
		if x.Operator == "!" {
			return dual{b2f(a.v == 0), a.e} // flips when its operand may
		}
		return dual{-a.v, a.e}
	case OpBinary:
		l, r := b.eval(x.Args[0]), b.eval(x.Args[1])
		if comparisons[x.Operator] && sameExpr(x.Args[0], x.Args[1]) {
			// One value against itself (inv != inv, a NaN test): its
			// errors are the same on both sides, so it never flips.
			return dual{binary64(x.Operator, l.v, r.v), 0}
		}
		return b.binary(x.Operator, l, r)
	case OpCall:
		args := make([]dual, len(x.Args))
		for i, a := range x.Args {
			args[i] = b.eval(a)
		}
		return b.call(x.Func, args)
	}
	return dual{math.NaN(), 0}
}

// literal is a literal's exact compute-type value (Rounding.Literal), or
// false where the Rounding does not say how the source rounds it.
func (b boundEnv) literal(text string) (dual, bool) {
	if b.r.Literal == nil {
		return dual{}, false
	}
	v, err := b.r.Literal(text)
	if err != nil {
		return dual{}, false
	}
	return dual{v, 0}, true
}

func (b boundEnv) binary(op string, x, y dual) dual {
	v := binary64(op, x.v, y.v)
	if (op == "*" && (exactInf(x) && signKnown(y) || exactInf(y) && signKnown(x))) || (op == "/" && exactInf(x) && signKnown(y)) {
		return dual{v, 0} // ∞ times or over a value whose sign and nonzero-ness are certain: exactly that ±∞
	}
	switch op {
	case "+", "-":
		return b.round(v, x.e+y.e)
	case "*":
		// An infinite factor times a nonzero one whose error reaches zero:
		// the compute type may have rounded that factor to 0 (1 + tanh(u) is 0 in f32
		// for u < -9, 4e-9 in float64), giving NaN where float64 gives ±∞.
		// Which one is undecided, like the overflow edge (issue 12, class 9).
		if (math.IsInf(x.v, 0) && y.v != 0 && math.Abs(y.v) <= y.e) || (math.IsInf(y.v, 0) && x.v != 0 && math.Abs(x.v) <= x.e) {
			return dual{v, math.Inf(1)}
		}
		return b.round(v, scale(y.v, x.e)+scale(x.v, y.e))
	case "/":
		// Not first order in the denominator's error: |a/(y+δ) − a/y| <=
		// |a|·|δ| / (|y|·(|y|−|δ|)), which matters when y is a subnormal
		// known to a few bits. A denominator whose error reaches 0 has no
		// bound.
		den := math.Abs(y.v) - y.e
		if den <= 0 && y.e > 0 {
			return b.round(v, math.Inf(1))
		}
		return b.round(v, (x.e+scale(v, y.e))/den)
	}
	return logic(op, v, x, y)
}

// exactInf reports an infinity known exactly (an infinite input, say).
func exactInf(d dual) bool { return math.IsInf(d.v, 0) && d.e == 0 }

// signKnown reports a value whose error cannot reach zero: its sign, and
// that it is not zero, are certain (false for NaN).
func signKnown(d dual) bool { return math.Abs(d.v) > d.e }

// comparisons are the binary operators whose result is a comparison.
var comparisons = map[string]bool{"<": true, "<=": true, ">": true, ">=": true, "==": true, "!=": true}

// logic bounds a comparison or a logical operator, whose value is 0 or 1:
// its error is 1 where the compute type may decide it the other way (the
// operands lie within their error bounds of each other, or an operand may
// flip), 0 where it cannot. A select on a condition that may flip accepts
// either branch (boundEnv.call), so a comparison near a tie, such as
// 0.5 + x > 0.5 for a tiny x that float64 resolves and f32 rounds away,
// is judged as the compute type can decide it, not as float64 does.
func logic(op string, v float64, x, y dual) dual {
	switch op {
	case "&&", "||":
		// An operand that is certainly false (for &&) or true (for ||)
		// decides the result alone.
		decides := b2f(op == "||")
		if (x.e == 0 && (x.v != 0) == (decides != 0)) || (y.e == 0 && (y.v != 0) == (decides != 0)) {
			return dual{v, 0}
		}
		return dual{v, math.Min(1, math.Max(x.e, y.e))}
	}
	if x.e+y.e > 0 && !(math.Abs(x.v-y.v) > x.e+y.e) { // a NaN distance (∞ − ∞) may flip too
		return dual{v, 1}
	}
	return dual{v, 0}
}

// selectBound is select(c, a, b) where the condition may flip: the value
// of the branch float64 takes, with a bound that also covers the other.
func selectBound(cond, a, b dual) dual {
	taken, other := a, b
	if cond.v == 0 {
		taken, other = b, a
	}
	if cond.e == 0 {
		return taken
	}
	d := math.Abs(other.v-taken.v) + other.e
	if math.IsNaN(d) {
		d = math.Inf(1)
	}
	return dual{taken.v, math.Max(taken.e, d)}
}

// call propagates through a function by its row's error rule: library
// functions by their derivative plus their own error of FuncUlps units,
// exact and choice functions without adding any.
func (b boundEnv) call(fn string, a []dual) dual {
	args := make([]float64, len(a))
	for i, d := range a {
		args[i] = d.v
	}
	f, ok := funcs.Lookup(fn)
	if !ok || f.Eval == nil {
		return dual{math.NaN(), 0}
	}
	v := f.Eval(args)
	x, e := args[0], a[0].e
	switch f.Bound.Rule {
	case funcs.Exact:
		if f.Bound.Step && e > 0 && !math.IsInf(e, 0) {
			lo, hi := f.Eval([]float64{x - e}), f.Eval([]float64{x + e})
			return dual{v, math.Max(math.Abs(lo-v), math.Abs(hi-v))}
		}
		return dual{v, e}
	case funcs.Choice:
		return dual{v, chosenBound(v, a)}
	case funcs.Select:
		return selectBound(a[0], a[1], a[2])
	}
	ep := propagate(f, args, a, v)
	if f.Bound.Partial || f.Bound.Monotone {
		dev, undecided := intervalEnds(f, args, a, v)
		if undecided {
			return dual{v, math.Inf(1)}
		}
		ep = math.Max(ep, dev)
	}
	if f.Bound.Rule == funcs.Rounded {
		return b.round(v, ep)
	}
	v, ep = b.r.fit(v, ep)
	if math.IsInf(v, 0) || math.IsNaN(v) || (math.IsInf(x, 0) && e == 0 && len(args) == 1) {
		return dual{v, ep} // f(±∞) is an exact limit (tanh → ±1, exp → 0): no function error
	}
	return dual{v, ep + b.r.FuncUlps*(b.r.Unit*math.Abs(v)+b.r.Underflow)}
}

// propagate is the operands' errors carried to the result by the
// function's partial derivatives at args (v = f(args)), to first order.
func propagate(f *funcs.Func, args []float64, a []dual, v float64) float64 {
	ep := scale(f.Bound.Deriv(args, v, 0), a[0].e)
	if f.Bound.Curv > 0 && len(a) == 1 {
		ep += f.Bound.Curv * a[0].e * a[0].e / 2
	}
	for i := 1; i < len(a); i++ {
		ep += scale(f.Bound.Deriv(args, v, i), a[i].e)
	}
	return ep
}

// intervalEnds evaluates a partial or monotone function (funcs.Bound) at
// the ends of each operand's error interval. It reports undecided when the
// function may be NaN on one side and not on the other (log(x) with x =
// 1e-9 ± 1e-8, pow(x, 2.5) with x = -0.1 ± 1): the table's domains are
// half-lines (pow's base) and integer points (pow's exponent for a
// negative base), so the interval's ends and the integer nearest its
// centre decide it. Otherwise dev is the sum over operands of the largest move
// at an end: these functions are monotone in each operand on their
// domain, so it bounds the operands' effect where first order does not —
// log2 of a subnormal product known to half its value (log2(2.1e-45) is
// -148.4; f32 rounds the product to 1.4e-45, -149), or exp of an operand
// known to ±0.25. A monotone function is never NaN on finite operands, so
// the NaN test only ever fires for partial ones.
func intervalEnds(f *funcs.Func, args []float64, a []dual, v float64) (dev float64, undecided bool) {
	probe := append([]float64(nil), args...)
	for i, d := range a {
		if d.e == 0 || math.IsNaN(d.e) || math.IsNaN(d.v) {
			continue // exact; or no bound to reason with (judged by the tolerance alone); or NaN in, NaN out
		}
		if math.IsInf(d.e, 1) {
			return 0, true
		}
		move := 0.0
		ends := []float64{args[i] - d.e, args[i] + d.e}
		if n := math.Round(args[i]); n != args[i] && math.Abs(n-args[i]) <= d.e {
			ends = append(ends, n) // an integer point inside (pow's exponent)
		}
		for _, end := range ends {
			probe[i] = end
			w := f.Eval(probe)
			if math.IsNaN(w) != math.IsNaN(v) {
				return 0, true
			}
			if !math.IsNaN(w) {
				move = math.Max(move, math.Abs(w-v))
			}
		}
		probe[i] = args[i]
		dev += move
	}
	return dev, false
}

// scale is |k|·e, the error e propagated by a factor k; an exact operand
// (e = 0) propagates no error even where k is infinite (sqrt'(0), log(0)).
func scale(k, e float64) float64 {
	switch {
	case e == 0:
		return 0
	case k == 0 && !math.IsInf(e, 1):
		return 0
	case k == 0:
		return e // 0·∞: an unknown operand may move the result anywhere
	}
	return math.Abs(k) * e
}

// chosenBound is a choice function's bound (min, max, clamp): the largest
// of its operands' bounds, leaving out NaN operands when the result is not
// NaN — fmax(acc, NaN) is acc, and the NaN's own bound (often NaN) would
// otherwise leave the result with no bound at all.
func chosenBound(v float64, a []dual) float64 {
	if math.IsNaN(v) {
		return maxOf(a)
	}
	m := 0.0
	for _, d := range a {
		if !math.IsNaN(d.v) {
			m = math.Max(m, d.e)
		}
	}
	return m
}

func maxOf(a []dual) float64 {
	m := 0.0
	for _, d := range a {
		m = math.Max(m, d.e)
	}
	return m
}

// evalInt evaluates an integer expression as the kernels do: 32-bit two's
// complement, wrapping on overflow (Go's int32 arithmetic is defined to),
// with the integer semantics of kgenrt (IDiv32, Rem32, Shl32, Shr32, the
// saturating conversions). Beside the value it bounds how far the kernel's
// may be off: zero unless a conversion of a number is involved, whose
// operand's error may move it across an integer boundary.
func (b boundEnv) evalInt(x *Expr) (int32, float64) {
	switch x.Op {
	case OpLiteral:
		v, _ := strconv.ParseInt(x.Text, 10, 64)
		return int32(v), 0
	case OpRef:
		switch x.Ref {
		case RefParam: // an i32 param, or a u32 one read as i32
			return int32(uint32(int64(b.params[x.Index]))), 0
		case RefInput: // an integer tensor's element, held exactly
			return int32(uint32(int64(b.inputs[x.Index]))), 0
		case RefGather: // an integer tensor's gathered element
			return int32(uint32(int64(b.gathers[x.Index]))), 0
		case RefLet:
			d := b.lets[x.Index]
			return int32(d.v), d.e
		}
		return b.ints[x.Name], 0
	case OpUnary:
		v, e := b.evalInt(x.Args[0])
		return -v, e
	case OpBinary:
		return b.intBinary(x)
	case OpCall:
		if lim, ok := expr.IntConversions[x.Func]; ok {
			return b.intConversion(x.Args[0], lim)
		}
		// select: an integer branch's value and bound as a dual
		// (exact below 2^53), so a condition that may flip covers both.
		pv, pe := b.evalInt(x.Args[1])
		qv, qe := b.evalInt(x.Args[2])
		d := selectBound(b.eval(x.Args[0]), dual{float64(pv), pe}, dual{float64(qv), qe})
		return int32(d.v), d.e
	}
	return 0, 0
}

func (b boundEnv) intBinary(x *Expr) (int32, float64) {
	p, ep := b.evalInt(x.Args[0])
	q, eq := b.evalInt(x.Args[1])
	v := funcs.IntOp(x.Operator, p, q)
	switch {
	case ep == 0 && eq == 0:
		return v, 0
	case x.Operator == "+" || x.Operator == "-":
		return v, ep + eq
	case x.Operator == "*":
		return v, math.Abs(float64(p))*eq + math.Abs(float64(q))*ep + ep*eq
	}
	return v, math.Inf(1) // / % and bit operations of an uncertain operand: no bound
}

// intConversion is i32/i8/u8 of a number (toward zero, saturating, NaN 0)
// or of an integer (clamped), lim its range. A number's error bound
// becomes the integers its interval reaches.
func (b boundEnv) intConversion(arg *Expr, lim [2]int64) (int32, float64) {
	lo, hi := int32(lim[0]), int32(lim[1])
	if arg.Int {
		v, e := b.evalInt(arg)
		return min(max(v, lo), hi), e
	}
	d := b.eval(arg)
	v := funcs.FloatToInt(d.v, lo, hi)
	if d.e == 0 {
		return v, 0
	}
	if math.IsNaN(d.v) || math.IsInf(d.e, 0) {
		return v, math.Inf(1)
	}
	a, c := funcs.FloatToInt(d.v-d.e, lo, hi), funcs.FloatToInt(d.v+d.e, lo, hi)
	return v, math.Max(math.Abs(float64(a)-float64(v)), math.Abs(float64(c)-float64(v)))
}
