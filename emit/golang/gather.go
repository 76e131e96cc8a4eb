package golang

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// Indexed reads in the Go references (ir/gather.go, docs/indexing.md): the
// loops load each gather's element before the stage call, as the kernels
// do; kgenrt.GatherAt gives the flat index, or false when a coordinate is
// outside its dimension, and the element is then 0.

// gatherLoads declares the elements of the gathers stage st reads, for the
// element at kgenRow, kgenJ of segment seg.
func (g *evalGen) gatherLoads(st ir.Stage, seg int) []jen.Code {
	var out []jen.Code
	ins := g.k.ElementInputs(seg)
	for _, a := range st.Args {
		if a.Kind != ir.ArgGather {
			continue
		}
		ga := g.k.Rows().Gathers[a.Index]
		b := ins[ga.Input]
		w := &exprWriter{mode: g.io.mode, names: g.n}
		args := []jen.Code{jen.Index().Int().Values(sizeIDs(b.Shape)...)}
		for _, c := range ga.At {
			args = append(args, w.intExpr(ir.SpellRefs(c, g.spellRef(seg))).code)
		}
		t := w.float()
		if a.Int {
			t = jen.Int32()
		}
		name := g.n.local(a.Name)
		load := g.io.load(b, jen.Id("kgenAt"))
		if b.Quant != nil { // a packed input: its dequantized values (packedLines)
			load = g.io.load(ir.Binding{Name: packedLocal(b), DType: dtype.F32}, jen.Id("kgenAt"))
		}
		out = append(out,
			jen.Var().Id(name).Add(t).Comment(g.k.FormatExpr(&ir.Expr{Op: ir.OpRef, Ref: ir.RefGather, Index: a.Index, At: ga.At})+", 0 outside the tensor"),
			jen.If(jen.List(jen.Id("kgenAt"), jen.Id("kgenIn")).Op(":=").Add(rt("GatherAt").Call(args...)), jen.Id("kgenIn")).Block(
				jen.Id(name).Op("=").Add(load)))
	}
	return out
}

// spellRef spells a coordinate's names in the reference loops: the indices
// and sizes as int32, params as their int32 value, a [rows] input at the row.
func (g *evalGen) spellRef(seg int) func(ir.RefKind, string, int) string {
	return func(ref ir.RefKind, name string, index int) string {
		switch ref {
		case ir.RefIndex:
			return fmt.Sprintf("int32(%#v)", g.indexValue(name, seg))
		case ir.RefParam:
			return "int32(" + g.n.local(g.k.Params()[index].Name) + ")"
		case ir.RefInput:
			return fmt.Sprintf("%#v", g.io.load(g.k.ElementInputs(seg)[index], jen.Id("kgenRow")))
		}
		return name
	}
}

// sizeIDs are the size fields of a shape, as locals.
func sizeIDs(shape ir.Shape) []jen.Code {
	var out []jen.Code
	for _, s := range shape {
		out = append(out, jen.Id(s))
	}
	return out
}

// given64 lists the sizes Reference64 takes: the kind's, then the
// indexable inputs' own dimensions (ir.Field.Dim), which a tensor's length
// alone cannot tell when it has several.
func given64(k *ir.Kernel) []string {
	out := append([]string(nil), handler(k).given64...)
	for _, f := range k.ArgsBinding().Fields {
		if f.Dim {
			out = append(out, f.Name)
		}
	}
	return out
}

// scatterPut stores val at output o's coordinates (ir.Scatter) for the
// element at kgenRow, kgenJ: only when each lies inside its dimension and
// the proof's divisors are nonzero; every other element keeps its value.
func (g *evalGen) scatterPut(o ir.Binding, val jen.Code) jen.Code {
	seg := o.Segment
	var sc *ir.Scatter
	for i, b := range g.k.SegmentBindings(seg, ir.Output) {
		if b.Index == o.Index {
			sc = g.k.Rows().ScatterOf(i)
		}
	}
	w := &exprWriter{mode: g.io.mode, names: g.n}
	args := []jen.Code{jen.Index().Int().Values(sizeIDs(o.Shape)...)}
	for _, c := range sc.At {
		args = append(args, w.intExpr(ir.SpellRefs(c, g.spellRef(seg))).code)
	}
	cond := []jen.Code{jen.Id("kgenIn")}
	for _, d := range sc.NonZero {
		cond = append(cond, jen.Op("&&").Add(w.intExpr(ir.SpellRefs(d, g.spellRef(seg))).code).Op("!=").Lit(0))
	}
	return jen.If(jen.List(jen.Id("kgenAt"), jen.Id("kgenIn")).Op(":=").Add(rt("GatherAt").Call(args...)), jen.Add(cond...)).Block(
		g.io.store(o, jen.Id("kgenAt"), val))
}

// packedLocal is the local holding packed input b's dequantized values in
// the reference loops.
func packedLocal(b ir.Binding) string { return "kgenDq_" + b.Name }

// packedLines dequantizes each packed input of a rowwise kernel (ir's
// quant_rows.go) whole, before the rows: as the kernels compute each value
// for Reference, exactly for Reference64; the gathers read them there.
func packedLines(g *evalGen) []jen.Code {
	var out []jen.Code
	for _, b := range g.k.BindingsOf(ir.Input) {
		if !b.IsPacked() || b.Table {
			continue
		}
		scales, biases := "", ""
		if s, bs := g.k.QuantTables(b.Index); s >= 0 {
			scales, biases = g.k.Bindings[s].Name, g.k.Bindings[bs].Name
		}
		out = append(out, dequantInto(g, packedLocal(b), *b.Quant, b.Name, scales, biases, b.Shape[0], b.Shape[1], b.Name+": "+b.Quant.String())...)
	}
	return out
}
