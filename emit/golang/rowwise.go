package golang

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/emit/inventory"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/launch"
)

// The rowwise kind: the CPU reference runs the kernel's stages row by row
// with the kernel's accumulation order (kgenrt.RowAcc over the Metal team
// width), Reference64 the same stages in float64.
var rowwiseHandler = kindHandler{
	loops:       rowLoops,
	formulasDoc: "Per row of cols elements, in %s (math: %s); a row_* reduction is one value per row:",
	prelude:     rowPrelude,
	given64:     []string{"cols"},
	perThread:   func(*ir.Kernel) int { return 1 },
	referenceDoc: []string{
		"Rows run the kernel's passes in order; reductions accumulate in float32 in the kernel's",
		"order (kgenrt.RowAcc over the Metal launch's team width).",
	},
	reference64Doc: []string{
		"Each input holds whole rows of cols values (a row vector: cols values); the outputs",
		"come back the same way.",
	},
	dispatchDoc: rowDispatchDoc,
}

var rowOps = map[string]string{"row_sum": "RowSum", "row_mean": "RowMean", "row_max": "RowMax", "row_min": "RowMin"}

// rowPrelude gives Reference the Metal team width its accumulators model:
// threads per group / rows_per_group, from the Metal launch's own rule. A
// kernel without reductions accumulates nothing and declares nothing.
func rowPrelude(k *ir.Kernel, _ *names) ([]jen.Code, error) {
	if len(k.Rows().Reductions) == 0 {
		return nil, nil
	}
	l := k.Launch(ir.Metal)
	var team []launch.Derived // rows_per_group; the others (kgen_chunks) size launches, not the team
	for _, d := range l.Derived {
		if d.Field == "rows_per_group" {
			team = append(team, d)
		}
	}
	l.Derived = team
	out, err := derivedLines(l)
	if err != nil {
		return nil, err
	}
	return append(out, jen.Id("kgenLanes").Op(":=").Lit(l.Threadgroup[0]).Op("/").Id("rows_per_group").
		Comment("the Metal team width: the lanes one row's reductions are spread over")), nil
}

// rowLoops writes the rows of every segment: per row, the stages in order;
// a [cols] output's terms fold into its accumulator row by row, stored
// once every row is done.
func rowLoops(g *evalGen) []jen.Code {
	out := packedLines(g)
	c := g.k.ColReductions()
	if c != nil {
		for _, o := range c.Outputs {
			out = append(out, jen.Id(colAccName(g.k, g.k.SegmentBindings(0, ir.Output)[o.Out])).Op(":=").Add(g.io.colAcc(o)).
				Comment(o.Func()+"("+g.k.FormatExpr(g.k.Steps[o.Step].Expr)+")"))
		}
	}
	out = append(out, topkDecl(g)...)
	for s := 0; s < g.k.NumSegments(); s++ {
		rows := g.k.SegmentRows(s)
		if c != nil {
			rows = "rows" // no segments (ir refuses them with column reductions)
		}
		body := []jen.Code{jen.Id("kgenBase").Op(":=").Id("kgenRow").Op("*").Id("cols")}
		body = append(body, rowBody(g, s)...)
		out = append(out, jen.For(jen.Id("kgenRow").Op(":=").Lit(0), jen.Id("kgenRow").Op("<").Id(rows), jen.Id("kgenRow").Op("++")).Block(body...))
	}
	if c != nil {
		var stores []jen.Code
		for _, o := range c.Outputs {
			b := g.k.SegmentBindings(0, ir.Output)[o.Out]
			if o.Whole {
				out = append(out, jen.Comment("total_sum: the column sums folded over the columns (docs/colwise.md)."),
					g.io.store(b, jen.Lit(0), jen.Id(colAccName(g.k, b)).Dot("Total").Call()))
				continue
			}
			stores = append(stores, g.io.store(b, jen.Id("kgenJ"), jen.Id(colAccName(g.k, b)).Dot("Result").Call(jen.Id("kgenJ"))))
		}
		if len(stores) > 0 {
			out = append(out, jen.Comment("The [cols] outputs, once every row is folded."), rowColLoop(stores...))
		}
	}
	return out
}

// colAccName is the accumulator of [cols] output o in the reference loops.
func colAccName(k *ir.Kernel, o ir.Binding) string {
	for i, co := range k.ColReductions().Outputs {
		if k.SegmentBindings(0, ir.Output)[co.Out].Index == o.Index {
			return fmt.Sprintf("kgenCol%d", i)
		}
	}
	return "kgenCol?"
}

// rowIndex is element kgenJ of the row: of the [rows, cols] tensors at
// kgenBase, of a [cols] row vector at kgenJ; a [rows] tensor's value is the
// row's own, at kgenRow (also outside the column loop, in per-row stages).
func rowIndex(b ir.Binding) jen.Code {
	switch {
	case b.IsRowVector():
		return jen.Id("kgenJ")
	case b.IsPerRow():
		return jen.Id("kgenRow")
	}
	return jen.Id("kgenBase").Op("+").Id("kgenJ")
}

// rowBody writes one row of segment seg: its stages in order.
func rowBody(g *evalGen, seg int) []jen.Code {
	used := map[string]bool{} // per-row lets a later stage takes
	if g.k.Rows().PairWidth != nil {
		used[ir.PairWidthName] = true // the pair loads' width (ir.Rows.PairWidth)
	}
	for _, st := range g.stages {
		for _, a := range st.Args {
			if a.Kind == ir.ArgRowLet {
				used[a.Name] = true
			}
		}
	}
	var body []jen.Code
	for _, st := range g.stages {
		switch st.Kind {
		case ir.StageRowLets:
			body = append(body, rowLetCall(g, st, seg, used)...)
		case ir.StagePass:
			body = append(body, reducePass(g, st, seg)...)
		case ir.StageWrite:
			body = append(body, jen.Comment(fmt.Sprintf("Pass %d: write.", st.Level)), rowColLoop(append(g.gatherLoads(st, seg), g.store(st, seg, rowIndex)...)...))
		case ir.StageTopK:
			body = append(body, topkRow(g, st, seg)...)
		}
	}
	return body
}

// rowLetCall calls a per-row stage, keeping only the results a later
// stage uses, and stores its [rows] outputs at the row (kgenRowOut<i>:
// the output tensor's own name is the function's parameter).
func rowLetCall(g *evalGen, st ir.Stage, seg int, used map[string]bool) []jen.Code {
	var ids, stores []jen.Code
	op := "="
	outs := g.k.SegmentBindings(seg, ir.Output)
	for _, t := range st.Targets {
		switch {
		case t.RowOutput:
			v := jen.Id(fmt.Sprintf("kgenRowOut%d", t.OutIndex))
			ids, op = append(ids, v), ":="
			stores = append(stores, g.io.store(outs[t.OutIndex], jen.Id("kgenRow"), v))
		case used[t.Name]:
			ids, op = append(ids, jen.Id(g.n.local(t.Name))), ":="
		default:
			ids = append(ids, jen.Id("_"))
		}
	}
	return append([]jen.Code{jen.List(ids...).Op(op).Add(g.call(st, seg, rowIndex))}, stores...)
}

// rowColLoop wraps stmts in the loop over the columns of a row.
func rowColLoop(stmts ...jen.Code) jen.Code {
	return jen.For(jen.Id("kgenJ").Op(":=").Lit(0), jen.Id("kgenJ").Op("<").Id("cols"), jen.Id("kgenJ").Op("++")).Block(stmts...)
}

// reducePass writes one reduction pass: accumulators, the column loop that
// feeds them, and the row values they yield.
func reducePass(g *evalGen, st ir.Stage, seg int) []jen.Code {
	k, io := g.k, g.io
	body := []jen.Code{jen.Comment(fmt.Sprintf("Pass %d.", st.Level))}
	var terms, adds, results []jen.Code
	for i, red := range k.Rows().Reductions {
		if red.Level != st.Level {
			continue
		}
		a, t := jen.Id(fmt.Sprintf("kgen_a%d", i)), jen.Id(fmt.Sprintf("kgen_t%d", i))
		body = append(body, jen.Add(a).Op(":=").Add(io.acc(red)).Comment(red.Op.Func()+"("+k.FormatExpr(red.Arg)+")"))
		terms = append(terms, t)
		adds = append(adds, io.add(a, jen.Id("kgenJ"), t))
		res := jen.Add(a).Dot("Result").Call(jen.Id("cols"))
		if io.mode == dtype.BF16 || io.mode == dtype.F16 {
			res = roundTo(io.mode, res)
		}
		results = append(results, jen.Id(ir.ReductionName(i)).Op(":=").Add(res))
	}
	loop := append(append(g.gatherLoads(st, seg), jen.List(terms...).Op(":=").Add(g.call(st, seg, rowIndex))), adds...)
	body = append(body, rowColLoop(loop...))
	return append(body, results...)
}

// rowDispatchDoc writes the dispatch and pass schedule of a rowwise kernel
// into its inventory.md section, the derived size fields with their rules.
func rowDispatchDoc(b *strings.Builder, ik *ir.Kernel, k inventory.Kernel) {
	fmt.Fprintf(b, "- dispatch: dispatchThreads, grid (`%s`), threadgroup (%d, 1, 1)", strings.Join(k.Dispatch.Grid[:], "`, `"), ik.Threadgroup)
	for _, d := range ik.Launch(ir.Metal).Derived {
		fmt.Fprintf(b, "; `%s` = `%s`: %s", d.Field, d.Rule, d.Doc)
	}
	b.WriteString(" (the CUDA port's rule is in the descriptor's Launch)\n")
	if len(ik.Rows().Cached) > 0 {
		fmt.Fprintf(b, "- row cache: %d value(s) per lane and cached input in registers: rows of up to %d columns are read from device memory once\n",
			ik.Rows().CachePerLane, ik.Rows().CachePerLane*ik.Threadgroup)
	}
	for _, p := range k.Passes {
		fmt.Fprintf(b, "- %s\n", p)
	}
	if c := ik.ColReductions(); c != nil {
		var ws []string
		for _, w := range c.Space {
			ws = append(ws, fmt.Sprintf("`%s` f32 %s", w.Name, w.Shape))
		}
		g := c.Combine.Launch.GridStrings()
		if c.HasTotal() { // total_sum: a third launch (ir/total.go)
			t := c.Total.Launch.GridStrings()
			fmt.Fprintf(b, "- three launches (docs/colwise.md): this one, then `%s_<dtype>`, grid (`%s`, `%s`, `%s`), threadgroup (%d, 1, 1), then `%s_<dtype>`, grid (`%s`, `%s`, `%s`), threadgroup (%d, 1, 1); all bind the workspaces %s after the outputs, before args\n",
				c.Combine.Entry, g[0], g[1], g[2], c.Combine.Launch.Threadgroup[0], c.Total.Entry, t[0], t[1], t[2], c.Total.Launch.Threadgroup[0], strings.Join(ws, ", "))
		} else {
			fmt.Fprintf(b, "- two launches (docs/colwise.md): this one, then `%s_<dtype>`, grid (`%s`, `%s`, `%s`), threadgroup (%d, 1, 1); both bind the workspaces %s after the outputs, before args\n",
				c.Combine.Entry, g[0], g[1], g[2], c.Combine.Launch.Threadgroup[0], strings.Join(ws, ", "))
		}
	}
	b.WriteString("\n")
}
