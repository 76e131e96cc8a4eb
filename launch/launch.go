// Package launch describes how a kernel is launched on one backend: the
// grid as an evaluable expression over the args struct's size fields, the
// threads per group, and the size fields the launcher derives (with their
// rules). The IR builds one Launch per kernel and backend; the Go emitter
// renders it, kgenrt, parity and the GPU tests evaluate the same object, so
// the launch geometry is decided in one place.
//
// It is a leaf package: kgenrt (the runtime of generated code) imports it
// without pulling in the generator.
package launch

import (
	"fmt"
	"strconv"
	"strings"
)

// Op is one node of a size expression.
type Op int

// The operations. Every value is a non-negative int.
const (
	Lit     Op = iota // Value
	Var               // Name: a size field, or a launch variable (ElemBytes)
	Add               // Args[0] + Args[1] + ...
	Mul               // Args[0] * Args[1]
	Div               // Args[0] / Args[1], rounded down
	CeilDiv           // ceil(Args[0] / Args[1])
	// Min and Max are the smaller and the larger of Args[0] and Args[1].
	Min
	Max
	// Lanes is Args[0] (cols) rounded to a team width: the smallest power of
	// two w from 32 (or from Args[3], when given) up to Args[1] (the threads
	// per group) with w * Args[2] >= cols; Args[2] is the values one lane
	// takes.
	Lanes
)

// ElemBytes is the launch variable holding the variant's storage element
// size in bytes, for rules that depend on the dtype (the CUDA team width).
const ElemBytes = "kgen_elem_bytes"

// Expr is a size expression.
type Expr struct {
	Op    Op
	Value int
	Name  string
	Args  []*Expr
}

// N returns the literal n.
func N(n int) *Expr { return &Expr{Op: Lit, Value: n} }

// V returns the variable name.
func V(name string) *Expr { return &Expr{Op: Var, Name: name} }

// Sum returns the sum of terms (a single term is returned as is).
func Sum(terms ...*Expr) *Expr {
	if len(terms) == 1 {
		return terms[0]
	}
	return &Expr{Op: Add, Args: terms}
}

// Times returns a * b.
func Times(a, b *Expr) *Expr { return &Expr{Op: Mul, Args: []*Expr{a, b}} }

// Over returns a / b rounded down.
func Over(a, b *Expr) *Expr { return &Expr{Op: Div, Args: []*Expr{a, b}} }

// Ceil returns ceil(a / b).
func Ceil(a, b *Expr) *Expr { return &Expr{Op: CeilDiv, Args: []*Expr{a, b}} }

// Smaller returns min(a, b).
func Smaller(a, b *Expr) *Expr { return &Expr{Op: Min, Args: []*Expr{a, b}} }

// Larger returns max(a, b).
func Larger(a, b *Expr) *Expr { return &Expr{Op: Max, Args: []*Expr{a, b}} }

// TeamLanes returns the team width for rows of cols values at tg threads per
// group with per values per lane (see Lanes).
func TeamLanes(cols, tg, per *Expr) *Expr { return &Expr{Op: Lanes, Args: []*Expr{cols, tg, per}} }

// TeamLanesFrom is TeamLanes with teams from the power of two from (below
// 32: several rows share a warp) instead of from 32.
func TeamLanesFrom(cols, tg, per, from *Expr) *Expr {
	return &Expr{Op: Lanes, Args: []*Expr{cols, tg, per, from}}
}

// Env gives the values of variables.
type Env func(name string) (int, bool)

// Map is an Env over a map.
func Map(m map[string]int) Env {
	return func(name string) (int, bool) { v, ok := m[name]; return v, ok }
}

// Eval computes e. It fails on an unknown variable or a division by zero.
func (e *Expr) Eval(env Env) (int, error) {
	switch e.Op {
	case Lit:
		return e.Value, nil
	case Var:
		if v, ok := env(e.Name); ok {
			return v, nil
		}
		return 0, fmt.Errorf("launch: no value for %s", e.Name)
	}
	var buf [4]int // Lanes takes 4, others 2 or 3: no allocation per launch, whatever the toolchain
	args := buf[:0]
	for _, a := range e.Args {
		v, err := a.Eval(env)
		if err != nil {
			return 0, err
		}
		args = append(args, v)
	}
	switch e.Op {
	case Add:
		sum := 0
		for _, v := range args {
			sum += v
		}
		return sum, nil
	case Mul:
		return args[0] * args[1], nil
	case Div, CeilDiv:
		if args[1] == 0 {
			return 0, fmt.Errorf("launch: division by zero in %s", e)
		}
		if e.Op == Div {
			return args[0] / args[1], nil
		}
		return (args[0] + args[1] - 1) / args[1], nil
	case Min:
		return min(args[0], args[1]), nil
	case Max:
		return max(args[0], args[1]), nil
	case Lanes:
		if len(args) == 4 {
			return LanesFrom(args[0], args[1], args[2], args[3]), nil
		}
		return LanesFor(args[0], args[1], args[2]), nil
	}
	return 0, fmt.Errorf("launch: unknown op %d", e.Op)
}

// LanesFor is the Lanes rule: the smallest power of two w from 32 (one
// simdgroup or warp) up to tg with w * per >= cols.
func LanesFor(cols, tg, per int) int { return LanesFrom(cols, tg, per, 32) }

// LanesFrom is the Lanes rule with teams from the power of two from.
func LanesFrom(cols, tg, per, from int) int {
	w := max(from, 1)
	for w < tg && w*per < cols {
		w *= 2
	}
	return w
}

// Precedence levels for printing.
const (
	precSum = iota + 1
	precProduct
	precPrimary
)

func (e *Expr) prec() int {
	switch e.Op {
	case Add:
		return precSum
	case Mul, Div:
		return precProduct
	}
	return precPrimary
}

// String writes e in the inventory's grammar (contract.md):
//
//	expr   = term { "+" term }
//	term   = factor { ("*" | "/") factor }
//	factor = integer | size-field | "ceildiv(" expr "," expr ")" | "(" expr ")"
//
// with lanes(cols, tg, per) and lanes(cols, tg, per, from) for the
// team-width rule, and min(a, b), max(a, b) (a chain's decode split).
func (e *Expr) String() string {
	switch e.Op {
	case Lit:
		return strconv.Itoa(e.Value)
	case Var:
		return e.Name
	case Add:
		parts := make([]string, len(e.Args))
		for i, a := range e.Args {
			parts[i] = a.operand(precSum)
		}
		return strings.Join(parts, " + ")
	case Mul:
		return e.Args[0].operand(precProduct) + " * " + e.Args[1].operand(precPrimary) // integer a * (b / c) is not a * b / c
	case Div:
		return e.Args[0].operand(precProduct) + " / " + e.Args[1].operand(precPrimary)
	case CeilDiv:
		return "ceildiv(" + e.Args[0].String() + ", " + e.Args[1].String() + ")"
	case Min:
		return "min(" + e.Args[0].String() + ", " + e.Args[1].String() + ")"
	case Max:
		return "max(" + e.Args[0].String() + ", " + e.Args[1].String() + ")"
	case Lanes:
		parts := make([]string, len(e.Args))
		for i, a := range e.Args {
			parts[i] = a.String()
		}
		return "lanes(" + strings.Join(parts, ", ") + ")"
	}
	return "?"
}

func (e *Expr) operand(min int) string {
	if e.prec() < min {
		return "(" + e.String() + ")"
	}
	return e.String()
}

// Launch is one backend's launch of a kernel.
type Launch struct {
	// Grid is the total threads per axis (Metal's dispatchThreads; CUDA
	// launches Grid[0] / Threadgroup[0] blocks).
	Grid        [3]*Expr
	Threadgroup [3]int
	// Derived lists the size fields the launcher computes, in the order they
	// are computed; each rule may use the size fields the caller gives and
	// earlier derived fields.
	Derived []Derived
}

// Derived is a size field the launcher fills in.
type Derived struct {
	Field string
	Rule  *Expr
	Doc   string // the rule in words, for the inventory
}

// Sizes evaluates the derived fields over the caller's sizes (and the
// launch variables), returning a new map with all of them.
func (l Launch) Sizes(given map[string]int) (map[string]int, error) {
	out := make(map[string]int, len(given)+len(l.Derived))
	for k, v := range given {
		out[k] = v
	}
	for _, d := range l.Derived {
		v, err := d.Rule.Eval(Map(out))
		if err != nil {
			return nil, fmt.Errorf("launch: %s: %w", d.Field, err)
		}
		out[d.Field] = v
	}
	return out, nil
}

// GridSize evaluates the grid over sizes that include the derived fields.
func (l Launch) GridSize(sizes map[string]int) ([3]int, error) {
	var g [3]int
	if l.Host() {
		return g, nil
	}
	for i, e := range l.Grid {
		v, err := e.Eval(Map(sizes))
		if err != nil {
			return g, err
		}
		g[i] = v
	}
	return g, nil
}

// Host reports that the port's own host code launches the kernel (a CUDA
// matmul's library entry point, which launches its CUTLASS GEMMs): there is
// no grid for a caller to evaluate, and GridSize is all zeros.
func (l Launch) Host() bool { return l.Grid[0] == nil }

// GridStrings writes the grid per axis ("" for a Host launch).
func (l Launch) GridStrings() [3]string {
	if l.Host() {
		return [3]string{}
	}
	return [3]string{l.Grid[0].String(), l.Grid[1].String(), l.Grid[2].String()}
}
