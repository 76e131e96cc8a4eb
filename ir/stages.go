package ir

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
)

// StageKind is what a stage function computes.
type StageKind int

// The stage kinds.
const (
	StageElement StageKind = iota // elementwise: every output of one element
	StageRowLets                  // rowwise: the per-row lets of one level
	StagePass                     // rowwise: the terms of one pass's reductions for one element
	StageWrite                    // rowwise: the outputs of one element
	StageTopK                     // rowwise: the top-k selection's key of one element (Rows.TopK), after the write
)

// Stage is one stage function's work: the targets it computes and what
// they need.
type Stage struct {
	Kind StageKind
	// Name is the function's name in MSL and CUDA: kgen_<kernel>_<Suffix>,
	// under the prefix no user name may take, so no input, param or let can
	// shadow it. The Go emitter registers its own name built on Suffix.
	Name    string
	Suffix  string // "eval", "write", "pass1", "row0"
	Level   int    // StagePass: the pass (1..); StageRowLets: the level (0..)
	Comment string
	Targets []Target
	Deps    Deps
	// Args are the stage's value parameters, in order: inputs, params,
	// per-row lets, reductions; the targets follow as output parameters.
	Args []StageArg
}

// Target is one value a stage computes.
type Target struct {
	Name string // the output parameter
	Expr *Expr
	Bool bool
	Int  bool // an integer let or output (an integer output's dtype is an integer type)
	// RowOutput marks a per-row stage's [rows] output, OutIndex its index
	// among the segment's outputs: emitters store it once per row.
	RowOutput bool
	OutIndex  int
	// Col marks a [cols] output's term in the write stage (Rows.Cols):
	// emitters fold it into the output's workspace, not store it.
	Col bool
}

// ArgKind is what a stage argument carries.
type ArgKind int

// The argument kinds.
const (
	ArgInput     ArgKind = iota // an input element (Index: among the spec's inputs)
	ArgParam                    // a param (Index: among Params())
	ArgRowLet                   // a per-row let (Index: step index)
	ArgReduction                // a reduction's value (Index: into Rows.Reductions)
	ArgAcc                      // a matmul accumulator at the element (Index: into Matmul.B)
	ArgIndex                    // an index or size (Name: one of IndexNames), an integer
	ArgPair                     // an input at the paired element (Index: among the spec's inputs; see RefPair)
	ArgCachedLet                // a per-element let from the let cache (Index: step index; see Rows.CachedStage)
	ArgGather                   // an indexed read's element (Index: into Rows.Gathers; see RefGather)
)

// StageArg is one value parameter of a stage function.
type StageArg struct {
	Kind  ArgKind
	Index int
	Name  string // the parameter's name: the name the formulas use
	Bool  bool
	Int   bool // a 32-bit integer (an index, a size, an i32/u32 param, an integer input or let)
}

// Stages lists the kernel's stage functions (see Schedule.Stages).
func (k *Kernel) Stages() []Stage { return k.Schedule.Stages(k) }

// finishStage names a stage and lists its arguments from its Deps.
func (k *Kernel) finishStage(st Stage) Stage {
	st.Name = "kgen_" + k.Name + "_" + st.Suffix
	for i, b := range k.ElementInputs(0) {
		if st.Deps.Inputs[i] {
			st.Args = append(st.Args, StageArg{Kind: ArgInput, Index: i, Name: k.FormulaName(b), Int: b.DType.IsInt()})
		}
	}
	for i, b := range k.ElementInputs(0) {
		if st.Deps.Pairs[i] {
			st.Args = append(st.Args, StageArg{Kind: ArgPair, Index: i, Name: "kgen_pair_" + k.FormulaName(b)})
		}
	}
	if r, ok := k.Schedule.(*Rows); ok {
		for g, ga := range r.Gathers {
			if st.Deps.Gathers[g] {
				st.Args = append(st.Args, StageArg{Kind: ArgGather, Index: g, Name: GatherName(g), Int: k.Bindings[ga.Input].DType.IsInt() && k.Bindings[ga.Input].Quant == nil}) // a packed input reads as floats
			}
		}
	}
	for i, p := range k.Params() {
		if st.Deps.Params[i] {
			st.Args = append(st.Args, StageArg{Kind: ArgParam, Index: i, Name: p.Name, Int: p.Type != dtype.F32})
		}
	}
	for _, n := range IndexNames[k.Kind] {
		if st.Deps.Indices[n] {
			st.Args = append(st.Args, StageArg{Kind: ArgIndex, Name: n, Int: true})
		}
	}
	for _, i := range st.Deps.RowLets {
		st.Args = append(st.Args, StageArg{Kind: ArgRowLet, Index: i, Name: k.Steps[i].Name, Bool: k.Steps[i].Expr.Bool, Int: k.Steps[i].Expr.Int})
	}
	for _, i := range st.Deps.CachedLets {
		st.Args = append(st.Args, StageArg{Kind: ArgCachedLet, Index: i, Name: k.Steps[i].Name})
	}
	for i := range st.Deps.Accs {
		if st.Deps.Accs[i] {
			st.Args = append(st.Args, StageArg{Kind: ArgAcc, Index: i, Name: k.Matmul().AccName(i)})
		}
	}
	for _, i := range st.Deps.Reductions {
		st.Args = append(st.Args, StageArg{Kind: ArgReduction, Index: i, Name: ReductionName(i)})
	}
	return st
}

// Stages implements Schedule: per pass p a function returning the terms of
// its reductions for one element, per level the per-row lets, and the write
// function returning the outputs for one element.
func (r *Rows) Stages(k *Kernel) []Stage {
	var out []Stage
	for p := 0; p <= r.Passes; p++ {
		steps, d := k.RowDeps(p)
		width := p == 0 && r.PairWidth != nil
		if width {
			k.pairWidthDeps(&d)
		}
		if len(steps) > 0 || width {
			st := Stage{Kind: StageRowLets, Suffix: fmt.Sprintf("row%d", p), Level: p, Deps: d,
				Comment: fmt.Sprintf("per-row values available after pass %d", p)}
			if p == 0 {
				st.Comment = "per-row values of the params and constants alone"
			}
			for _, i := range steps {
				s := k.Steps[i]
				t := Target{Name: s.Name, Expr: s.Expr, Bool: s.Expr.Bool, Int: s.Expr.Int, RowOutput: s.Output}
				if s.Output {
					t.OutIndex = k.OutputIndex(i)
				}
				st.Targets = append(st.Targets, t)
			}
			if width { // after the lets it may use, computed above it
				st.Targets = append(st.Targets, Target{Name: PairWidthName, Expr: r.PairWidth, Int: true})
			}
			out = append(out, k.finishStage(st))
		}
		if p == r.Passes {
			break
		}
		st := Stage{Kind: StagePass, Suffix: fmt.Sprintf("pass%d", p+1), Level: p + 1,
			Comment: fmt.Sprintf("pass %d: the terms of its reductions for one element", p+1)}
		var exprs []*Expr
		for i, red := range r.Reductions {
			if red.Level == p+1 {
				st.Targets = append(st.Targets, Target{Name: fmt.Sprintf("kgen_t%d", i), Expr: red.Arg})
				exprs = append(exprs, red.Arg)
			}
		}
		st.Deps = k.ElementDeps(exprs)
		out = append(out, k.finishStage(st))
	}
	st := Stage{Kind: StageWrite, Suffix: "write", Level: r.Passes + 1,
		Comment: fmt.Sprintf("pass %d: the outputs of one element", r.Passes+1)}
	var exprs []*Expr
	for i, s := range k.Steps {
		if s.Output && !r.Info[i].PerRow && !r.TopK.Has(i) { // [rows] outputs come from the per-row stages, [rows, k] ones from the topk stage
			_, col := r.Cols.ColOf(i)
			st.Targets = append(st.Targets, Target{Name: s.Name, Expr: s.Expr, Int: s.Expr.Int, Col: col, OutIndex: k.OutputIndex(i)})
			exprs = append(exprs, s.Expr)
		}
	}
	if len(exprs) > 0 { // else every output is per row or a selection: no write pass
		st.Deps = k.ElementDeps(exprs)
		out = append(out, k.finishStage(st))
	}
	if tk, ok := r.topkStage(k); ok {
		out = append(out, tk)
	}
	return out
}

// OutputIndex is step i's index among the outputs (Steps in order).
func (k *Kernel) OutputIndex(step int) int {
	o := 0
	for _, st := range k.Steps[:step] {
		if st.Output {
			o++
		}
	}
	return o
}

// StageArgs lists a stage's value parameters by Name (see Stage.Args).
func (k *Kernel) StageArgs(st Stage) (names []string, bools []bool) {
	for _, a := range st.Args {
		names, bools = append(names, a.Name), append(bools, a.Bool)
	}
	return names, bools
}

// FormulaName is a tensor's name in the formulas (without a segment prefix).
func (k *Kernel) FormulaName(b Binding) string {
	if len(k.Segments) > 0 {
		return strings.TrimPrefix(b.Name, k.Segments[b.Segment]+"_")
	}
	return b.Name
}

// pairWidthDeps adds to d, the level-0 row stage's Deps, what pair_half's
// width uses: params, constants, sizes; the lets it uses are per-row lets
// of level 0, targets of the same stage.
func (k *Kernel) pairWidthDeps(d *Deps) {
	Walk(k.Rows().PairWidth, func(e *Expr) {
		if e.Op != OpRef {
			return
		}
		switch e.Ref {
		case RefIndex:
			d.Indices[e.Name] = true
		case RefParam:
			d.Params[e.Index] = true
		case RefConstant:
			d.Constants[e.Index] = true
		}
	})
}
