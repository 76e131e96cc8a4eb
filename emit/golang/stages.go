package golang

import (
	"fmt"
	"github.com/kgen-dev/kgen/internal/usertext"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// Stage functions and their calls, for every kind: the stages are the IR's
// (ir.Stages names them, orders them and lists their typed arguments), the
// Go emitter only renders them, so it never re-derives the schedule.

// stageFunc writes stage st in mode c (Invalid: float64): its value
// arguments in, its targets as named results.
func stageFunc(f *jen.File, k *ir.Kernel, n *names, st ir.Stage, c dtype.DType) error {
	w := &exprWriter{mode: c, names: n}
	typeOf := func(isBool bool) *jen.Statement {
		if isBool {
			return jen.Bool()
		}
		return w.float()
	}
	var params, results []param
	for _, a := range st.Args {
		t, key := typeOf(a.Bool), fmt.Sprint(a.Bool)
		if a.Int {
			t, key = jen.Int32(), "int32"
		}
		params = append(params, param{n.local(a.Name), t, key})
	}
	for _, t := range st.Targets {
		if t.Int {
			results = append(results, param{n.local(t.Name), jen.Int32(), "int32"})
			continue
		}
		results = append(results, param{n.local(t.Name), typeOf(t.Bool), fmt.Sprint(t.Bool)})
	}
	body, err := stageBody(k, n, st, w)
	if err != nil {
		return err
	}
	body = append(body, jen.Return())
	mode := "float64"
	if c != dtype.Invalid {
		mode = "compute type " + c.String()
	}
	f.Add(comment(fmt.Sprintf("%s computes %s of %s, in %s.", n.stage(st, c), st.Comment, k.Name, mode)))
	f.Func().Id(n.stage(st, c)).Params(grouped(params)...).Params(grouped(results)...).Block(body...)
	return nil
}

// stageBody computes a stage's targets: the constants and per-element lets
// they need, then each target under its formula.
func stageBody(k *ir.Kernel, n *names, st ir.Stage, w *exprWriter) ([]jen.Code, error) {
	var body []jen.Code
	for i, con := range k.Constants {
		if st.Deps.Constants[i] {
			body = append(body, constantLine(con, n, w))
		}
	}
	for _, i := range st.Deps.ElemLets {
		body = append(body, stepLines(k.Steps[i], n, w)...)
	}
	for _, t := range st.Targets {
		step, isStep := targetStep(k, t)
		// An output is only stored; any other target (a reduction's term, a
		// per-row let) feeds arithmetic in another function, so it is
		// protected from fusion like an operand.
		v := w.expr(t.Expr, !(isStep && step.Output))
		code := v.code
		if v.konst {
			code = jen.Add(w.float()).Call(code)
		}
		src := k.FormatExpr(t.Expr)
		if isStep {
			src = step.Source
		}
		body = append(body, jen.Comment(usertext.Comment(t.Name+" = "+src)))
		body = append(body, w.hoisted...)
		w.hoisted = nil
		body = append(body, jen.Id(n.local(t.Name)).Op("=").Add(code))
	}
	return body, w.err
}

// targetStep is the spec step a target computes (none for a reduction's
// term, which the spec does not name).
func targetStep(k *ir.Kernel, t ir.Target) (ir.Step, bool) {
	for _, s := range k.Steps {
		if s.Expr == t.Expr {
			return s, true
		}
	}
	return ir.Step{}, false
}

// constantLine declares a spec constant as a variable of the evaluation
// type (a variable, not a Go constant, so that arithmetic on it rounds like
// the kernel's), with the text it came from.
func constantLine(con ir.Constant, n *names, w *exprWriter) jen.Code {
	v := w.literal(con.Text)
	code := v.code
	if v.konst {
		code = jen.Add(w.float()).Call(v.code)
	}
	line := jen.Id(n.local(con.Name)).Op(":=").Add(code)
	if rendered := fmt.Sprintf("%#v", v.code); rendered != con.Text {
		line.Comment(con.Text)
	}
	return line
}

// stepLines computes one let (a new variable) or output (a named result),
// under the formula as the spec writes it.
func stepLines(s ir.Step, n *names, w *exprWriter) []jen.Code {
	v := w.expr(s.Expr, !s.Output)
	code := v.code
	if v.konst {
		code = jen.Add(w.float()).Call(code)
	}
	op := ":="
	if s.Output {
		op = "="
	}
	lines := append([]jen.Code{jen.Comment(usertext.Comment(s.Name + " = " + s.Source))}, w.hoisted...)
	w.hoisted = nil
	return append(lines, jen.Id(n.local(s.Name)).Op(op).Add(code))
}

// evalIO says how the loops read inputs, write outputs, accumulate
// reductions and pass params in one evaluation mode.
type evalIO struct {
	mode  dtype.DType
	load  func(b ir.Binding, idx jen.Code) jen.Code
	store func(b ir.Binding, idx, val jen.Code) jen.Code
	acc   func(red ir.Reduction) jen.Code // a new accumulator
	add   func(acc, j, v jen.Code) jen.Code
	// colAcc is a new accumulator of a [cols] output over rows rows
	// (kgenrt.ColAcc in the kernels' order, ColAcc64 in row order).
	colAcc func(o ir.ColOutput) jen.Code
	param  func(p ir.Field) jen.Code
}

// evalGen holds what the loops of one evaluation mode need.
type evalGen struct {
	k      *ir.Kernel
	n      *names
	io     evalIO
	stages []ir.Stage
}

func newEvalGen(k *ir.Kernel, n *names, io evalIO) *evalGen {
	return &evalGen{k: k, n: n, io: io, stages: k.Stages()}
}

// call calls stage st for the element at idx(b) of segment seg, each
// argument as this mode holds it: inputs loaded in place, params
// converted, per-row lets and reductions by name.
func (g *evalGen) call(st ir.Stage, seg int, idx func(ir.Binding) jen.Code) *jen.Statement {
	ins := g.k.ElementInputs(seg)
	params := g.k.Params()
	var args []jen.Code
	for _, a := range st.Args {
		switch a.Kind {
		case ir.ArgInput:
			args = append(args, g.io.load(ins[a.Index], idx(ins[a.Index])))
		case ir.ArgPair: // rowwise: the paired element of the row (ir.PairCol)
			fn := map[string]string{"interleaved": "PairInterleaved", "half": "PairHalf"}[g.k.Rows().Pair]
			at := rt(fn).Call(jen.Id("kgenJ"), jen.Id("cols"))
			if g.k.Rows().PairWidth != nil { // pair_half(x, w): ir.PairColWidth, w from the level-0 row stage
				at = rt("PairHalfWidth").Call(jen.Id("kgenJ"), jen.Id("cols"), jen.Id(ir.PairWidthName))
			}
			if !ins[a.Index].IsRowVector() {
				at = jen.Id("kgenBase").Op("+").Add(at)
			}
			args = append(args, g.io.load(ins[a.Index], at))
		case ir.ArgParam:
			if a.Int { // an i32 or u32 param: the kernel's int (u32 wraps)
				args = append(args, jen.Int32().Call(jen.Id(g.n.local(params[a.Index].Name))))
				continue
			}
			args = append(args, g.io.param(params[a.Index]))
		case ir.ArgIndex:
			args = append(args, jen.Int32().Call(g.indexValue(a.Name, seg)))
		default: // ArgRowLet, ArgReduction: locals of the row loop
			args = append(args, jen.Id(g.n.local(a.Name)))
		}
	}
	return jen.Id(g.n.stage(st, g.io.mode)).Call(args...)
}

// indexValue is the Go value of index or size name (ir.IndexNames) in the
// reference's loops: i < n elementwise; kgenRow < rows, kgenJ < cols by row;
// kgenI < m, kgenJ < n in a matmul.
func (g *evalGen) indexValue(name string, seg int) jen.Code {
	switch {
	case g.k.Kind == ir.KindMatmul:
		return jen.Id(map[string]string{"row": "kgenI", "col": "kgenJ", "m": "m", "n": "n"}[name])
	case name == "row":
		return jen.Id("kgenRow")
	case name == "col":
		return jen.Id("kgenJ")
	case name == "rows":
		return jen.Id(g.k.SegmentRows(seg))
	}
	return jen.Id(name) // i, n, cols
}

// store calls the output stage st and stores its results at idx(b).
func (g *evalGen) store(st ir.Stage, seg int, idx func(ir.Binding) jen.Code) []jen.Code {
	var outs []ir.Binding // the per-element outputs: [rows] ones are stored by rowLetCall
	for _, o := range g.k.SegmentBindings(seg, ir.Output) {
		if !o.IsPerRow() && !o.IsTopKOutput() { // nor [rows, k] ones, stored by topkRow
			outs = append(outs, o)
		}
	}
	call := g.call(st, seg, idx)
	if len(outs) == 1 {
		return []jen.Code{g.put(outs[0], idx, call)}
	}
	var vals []jen.Code
	for i := range outs {
		vals = append(vals, jen.Id(fmt.Sprintf("val%d", i)))
	}
	out := []jen.Code{jen.List(vals...).Op(":=").Add(call)}
	for i, o := range outs {
		out = append(out, g.put(o, idx, vals[i]))
	}
	return out
}

// put stores one result of an output stage at idx(o); a [cols] output's
// term folds into its accumulator instead (colLoops).
func (g *evalGen) put(o ir.Binding, idx func(ir.Binding) jen.Code, val jen.Code) jen.Code {
	if o.IsScatter() {
		return g.scatterPut(o, val)
	}
	if o.IsColOutput() {
		return jen.Id(colAccName(g.k, o)).Dot("Add").Call(jen.Id("kgenRow"), jen.Id("kgenJ"), val)
	}
	return g.io.store(o, idx(o), val)
}
