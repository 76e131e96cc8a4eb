package ir

import (
	"slices"
	"strconv"
)

// A chain whose score is masked by its indices — causal attention's
// select(col > row + offset, -inf, acc * scale), a sliding window's
// select(col > row + offset || col + window <= row + offset, -inf, …) —
// skips a block of keys when every score of it is -inf whatever acc is:
// the block's weights would all be exactly 0, so leaving it out changes no
// bit of the result, and a causal prefill computes about half the blocks.
//
// BlockSkip is that test for the block of rows [rlo, rhi] and columns
// [clo, chi] (inclusive), proved over the score formula: Any of Terms
// holds, each term a conjunction of linear conditions that hold at every
// (row, col) of the block. The conditions are those of the mask's
// comparisons, linear in row and col with integer coefficients and
// row-uniform terms (integer params, m, n, integer literals); anything else
// is not proved, and the block is computed. The formula's integers wrap at
// 32 bits while the proof reasons over exact integers, so the test also
// requires every linear subexpression (Guards) to stay inside the int32
// range over the block: then the formula computes what the proof assumes.
type BlockSkip struct {
	Terms  [][]LinearCond
	Guards []Linear
}

// Linear is Row·row + Col·col + Σ Terms.
type Linear struct {
	Row, Col int64
	Terms    []UniformTerm
}

// UniformTerm is Coef times a row-uniform integer: a literal (Name ""),
// an integer param or a matrix size (m, n) by name.
type UniformTerm struct {
	Coef  int64
	Name  string
	Value int64 // the literal's value, Name ""
}

// LinearCond is D > 0 (Strict) or D >= 0, to hold at every element: its
// minimum over the block decides.
type LinearCond struct {
	D      Linear
	Strict bool
}

// blockSkipOf proves what it can of score s (the chain's Score): nil when
// s is not select(C, -inf, x) or select(C, x, -inf) with a provable C.
func blockSkipOf(k *Kernel, s *Expr) *BlockSkip {
	s = resolveLets(k, s)
	if s.Op != OpCall || s.Func != "select" || len(s.Args) != 3 {
		return nil
	}
	sk := &BlockSkip{}
	var terms [][]LinearCond
	switch {
	case isNegInf(resolveLets(k, s.Args[1])):
		terms = sk.all(k, s.Args[0], false)
	case isNegInf(resolveLets(k, s.Args[2])):
		terms = sk.all(k, s.Args[0], true)
	}
	if len(terms) == 0 {
		return nil
	}
	sk.Terms = terms
	return sk
}

// all returns conditions under which boolean c (negated: !c) holds at every
// element of the block, as a disjunction of conjunctions; nil when none
// can be proved.
func (sk *BlockSkip) all(k *Kernel, c *Expr, negate bool) [][]LinearCond {
	c = resolveLets(k, c)
	switch {
	case c.Op == OpUnary && c.Operator == "!":
		return sk.all(k, c.Args[0], !negate)
	case c.Op == OpBinary && (c.Operator == "&&" || c.Operator == "||"):
		a, b := sk.all(k, c.Args[0], negate), sk.all(k, c.Args[1], negate)
		if (c.Operator == "&&") != negate { // both everywhere: every pairing of their terms
			var out [][]LinearCond
			for _, x := range a {
				for _, y := range b {
					out = append(out, append(slices.Clone(x), y...))
				}
			}
			return out
		}
		return append(a, b...) // either everywhere suffices
	case c.Op == OpBinary:
		cond, ok := sk.compare(k, c, negate)
		if !ok {
			return nil
		}
		return [][]LinearCond{{cond}}
	}
	return nil
}

// compare turns l op r (negated when negate) into D > 0 or D >= 0.
func (sk *BlockSkip) compare(k *Kernel, c *Expr, negate bool) (LinearCond, bool) {
	op := c.Operator
	if negate {
		op = map[string]string{"<": ">=", "<=": ">", ">": "<=", ">=": "<"}[op]
	}
	l, okl := sk.linear(k, c.Args[0])
	r, okr := sk.linear(k, c.Args[1])
	if !okl || !okr {
		return LinearCond{}, false
	}
	switch op {
	case ">", ">=":
		return LinearCond{D: sub(l, r), Strict: op == ">"}, true
	case "<", "<=":
		return LinearCond{D: sub(r, l), Strict: op == "<"}, true
	}
	return LinearCond{}, false
}

// linear reads an integer expression linear in row and col, recording it
// as a guard.
func (sk *BlockSkip) linear(k *Kernel, e *Expr) (Linear, bool) {
	e = resolveLets(k, e)
	if !e.Int {
		return Linear{}, false
	}
	var out Linear
	switch {
	case e.Op == OpLiteral:
		v, err := strconv.ParseInt(e.Text, 10, 32)
		if err != nil {
			return Linear{}, false
		}
		out.Terms = []UniformTerm{{Coef: 1, Value: v}}
	case e.Op == OpRef && e.Ref == RefIndex && e.Name == "row":
		out.Row = 1
	case e.Op == OpRef && e.Ref == RefIndex && e.Name == "col":
		out.Col = 1
	case e.Op == OpRef && (e.Ref == RefIndex || e.Ref == RefParam):
		out.Terms = []UniformTerm{{Coef: 1, Name: e.Name}} // m, n, an integer param
	case e.Op == OpUnary && e.Operator == "-":
		a, ok := sk.linear(k, e.Args[0])
		if !ok {
			return Linear{}, false
		}
		out = a.times(-1)
	case e.Op == OpBinary && (e.Operator == "+" || e.Operator == "-"):
		a, oka := sk.linear(k, e.Args[0])
		b, okb := sk.linear(k, e.Args[1])
		if !oka || !okb {
			return Linear{}, false
		}
		if e.Operator == "+" {
			b = b.times(-1)
		}
		out = sub(a, b)
	default:
		return Linear{}, false
	}
	sk.Guards = append(sk.Guards, out)
	return out, true
}

// times is c·a.
func (a Linear) times(c int64) Linear {
	out := Linear{Row: a.Row * c, Col: a.Col * c}
	for _, t := range a.Terms {
		t.Coef *= c
		out.Terms = append(out.Terms, t)
	}
	return out
}

// sub is a - b.
func sub(a, b Linear) Linear {
	nb := b.times(-1)
	return Linear{Row: a.Row + nb.Row, Col: a.Col + nb.Col, Terms: append(slices.Clone(a.Terms), nb.Terms...)}
}

// resolveLets follows references to lets to the formulas they name.
func resolveLets(k *Kernel, e *Expr) *Expr {
	for e.Op == OpRef && e.Ref == RefLet {
		e = k.Steps[e.Index].Expr
	}
	return e
}

func isNegInf(e *Expr) bool {
	return e.Op == OpUnary && e.Operator == "-" && e.Args[0].Op == OpRef && e.Args[0].Ref == RefInf
}

// Min and Max are D's extremes over the block rows [rlo, rhi], columns
// [clo, chi], given the uniform terms' values.
func (d Linear) Min(rlo, rhi, clo, chi int64, val func(UniformTerm) int64) int64 {
	return d.extreme(rlo, rhi, clo, chi, val, false)
}

// Max: see Min.
func (d Linear) Max(rlo, rhi, clo, chi int64, val func(UniformTerm) int64) int64 {
	return d.extreme(rlo, rhi, clo, chi, val, true)
}

func (d Linear) extreme(rlo, rhi, clo, chi int64, val func(UniformTerm) int64, hi bool) int64 {
	pick := func(c, lo, up int64) int64 {
		if (c > 0) == hi {
			return c * up
		}
		return c * lo
	}
	s := pick(d.Row, rlo, rhi) + pick(d.Col, clo, chi)
	for _, t := range d.Terms {
		s += t.Coef * val(t)
	}
	return s
}

// Skips reports whether the block rows [rlo, rhi] × columns [clo, chi] is
// masked everywhere: Go's evaluation of what the kernels test, for the
// IR's tests and the reference.
func (sk *BlockSkip) Skips(rlo, rhi, clo, chi int64, val func(UniformTerm) int64) bool {
	for _, g := range sk.Guards {
		if g.Min(rlo, rhi, clo, chi, val) < -1<<31 || g.Max(rlo, rhi, clo, chi, val) > 1<<31-1 {
			return false
		}
	}
	for _, term := range sk.Terms {
		ok := true
		for _, c := range term {
			m := c.D.Min(rlo, rhi, clo, chi, val)
			ok = ok && (m > 0 || !c.Strict && m == 0)
		}
		if ok {
			return true
		}
	}
	return false
}
