package golang

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/ir"
)

// rtType is the kgenrt constant of a dtype; Invalid is T, "the variant's".
func rtType(t dtype.DType) *jen.Statement {
	if t == dtype.Invalid {
		return rt("T")
	}
	return rt(strings.ToUpper(t.String()))
}

func referenceFile(k *ir.Kernel, n *names, opts Options) (*jen.File, error) {
	f := newFile(opts, k.SpecPath)
	registerCPU(f, k, n)
	referenceMethod(f, k, n)
	reference64Method(f, k, n)
	for _, c := range k.ComputeTypes() {
		if err := evalFunc(f, k, n, c); err != nil {
			return nil, err
		}
	}
	if err := evalFunc(f, k, n, dtype.Invalid); err != nil {
		return nil, err
	}
	return f, nil
}

// registerCPU writes the init that gives the descriptor generic forms of
// Reference and Reference64 (set in init: a descriptor field whose value
// refers back to the descriptor would be an initialization cycle).
func registerCPU(f *jen.File, k *ir.Kernel, n *names) {
	var tensors, params, inputs, vals []jen.Code
	for i := range tensorArgs(k, n) {
		tensors = append(tensors, jen.Id("ts").Index(jen.Lit(i)))
	}
	for i, p := range k.Params() {
		params = append(params, goParamType(p.Type).Call(jen.Id("ps").Index(jen.Lit(i))))
	}
	for i := range k.BindingsOf(ir.Input) {
		inputs = append(inputs, jen.Id("ins").Index(jen.Lit(i)))
	}
	for i := range k.BindingsOf(ir.Output) {
		vals = append(vals, jen.Id(fmt.Sprintf("val%d", i)))
	}
	f.Add(comment(fmt.Sprintf("init registers %s's CPU reference with its descriptor, for RunCPU and RunCPU64.", k.Name)))
	f.Func().Id("init").Params().Block(
		jen.Id(n.desc).Dot("CPU").Op("=").Func().Params(jen.Id("ts").Index().Op("*").Add(rt("Tensor")), jen.Id("ps").Index().Float64()).Error().Block(
			jen.Return(jen.Id(n.exported).Dot("Reference").Call(append(tensors, params...)...))),
		jen.Id(n.desc).Dot("CPU64").Op("=").Func().Params(jen.Id("ins").Index().Index().Float64(), jen.Id("ps").Index().Float64()).
			Params(jen.Index().Index().Float64(), jen.Error()).Block(
			jen.List(append(vals, jen.Err())...).Op(":=").Id(n.exported).Dot("Reference64").Call(append(inputs, params...)...),
			jen.Return(jen.Index().Index().Float64().Values(vals...), jen.Err())),
	)
}

// referenceMethod writes K.Reference, the CPU backend on kgenrt tensors.
func referenceMethod(f *jen.File, k *ir.Kernel, n *names) {
	c := k.Compute.String()
	if k.Compute == dtype.Invalid {
		c = "the storage dtype"
	}
	f.Add(comment(
		fmt.Sprintf("Reference computes %s on the CPU: the fallback path where Select refuses, and the", k.Name),
		"oracle of parity tests. It checks the tensors exactly as Run does, converts inputs to the",
		fmt.Sprintf("compute type (%s) on load, evaluates the formulas per element in it with every", c),
		"operation rounded to the compute type, and stores each output rounded to nearest even in",
		"its storage dtype."+functionNote(k),
	))
	first := jen.Id("v")
	if len(k.ComputeTypes()) == 1 {
		first = jen.Id("_")
	}
	body := []jen.Code{
		jen.List(first, jen.Id("n"), jen.Err()).Op(":=").Id(n.desc).Dot("Check").Call(tensorArgs(k, n)...),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
	}
	if types := k.ComputeTypes(); len(types) == 1 {
		body = append(body, referenceLoop(k, n, types[0], nil))
	} else {
		body = append(body, referenceSwitch(k, n))
	}
	body = append(body, jen.Return(jen.Nil()))
	f.Func().Params(jen.Id(n.typ)).Id("Reference").Params(launchParams(k, n)...).Error().Block(body...)
}

// functionNote says how the kernel's functions are evaluated, if it has any.
func functionNote(k *ir.Kernel) string {
	used := map[string]bool{}
	var walk func(e *ir.Expr)
	walk = func(e *ir.Expr) {
		if e.Op == ir.OpCall {
			if f, ok := funcs.Lookup(e.Func); ok && f.Go.ViaFloat64() {
				used[e.Func] = true
			}
		}
		for _, a := range e.Args {
			walk(a)
		}
	}
	for _, s := range k.Steps {
		walk(s.Expr)
	}
	if len(used) == 0 {
		return ""
	}
	var fs []string
	for f := range used {
		fs = append(fs, f)
	}
	sort.Strings(fs)
	return " Functions (" + strings.Join(fs, ", ") + ") are evaluated in float64, rounded to float32,\n// then to the compute type."
}

// referenceSwitch picks the evaluation of the variant's storage dtype.
func referenceSwitch(k *ir.Kernel, n *names) jen.Code {
	var cases []jen.Code
	for _, v := range k.Variants {
		cases = append(cases, jen.Case(rtType(v.DType)).Block(referenceLoop(k, n, v.DType, &v.DType)))
	}
	cases = append(cases, jen.Default().Block(jen.Return(
		jen.Qual("fmt", "Errorf").Call(jen.Lit("kgen: kernel "+k.Name+": no CPU reference for dtype %v"), jen.Id("v").Dot("DType")))))
	return jen.Switch(jen.Id("v").Dot("DType")).Block(cases...)
}

// referenceLoop evaluates every element in compute type c. storage is the
// variant's dtype when known (per-variant compute), else nil.
func referenceLoop(k *ir.Kernel, n *names, c dtype.DType, storage *dtype.DType) jen.Code {
	var args []jen.Code
	for _, b := range k.BindingsOf(ir.Input) {
		args = append(args, loadInput(b, n, c, storage, k))
	}
	for _, p := range k.Params() {
		args = append(args, convertParam(p, n, c))
	}
	call := jen.Id(n.eval(c.String())).Call(args...)
	outs := k.BindingsOf(ir.Output)
	var stmts []jen.Code
	if len(outs) == 1 {
		stmts = append(stmts, jen.Id(n.local(outs[0].Name)).Dot("SetFloat32").Call(jen.Id("i"), call))
	} else {
		var vals []jen.Code
		for i := range outs {
			vals = append(vals, jen.Id(fmt.Sprintf("val%d", i)))
		}
		stmts = append(stmts, jen.List(vals...).Op(":=").Add(call))
		for i, o := range outs {
			stmts = append(stmts, jen.Id(n.local(o.Name)).Dot("SetFloat32").Call(jen.Id("i"), vals[i]))
		}
	}
	return jen.For(jen.Id("i").Op(":=").Lit(0), jen.Id("i").Op("<").Id("n"), jen.Id("i").Op("++")).Block(stmts...)
}

// loadInput reads element i of an input and converts it to the compute type;
// the conversion is written only where a storage dtype can differ from it.
func loadInput(b ir.Binding, n *names, c dtype.DType, storage *dtype.DType, k *ir.Kernel) jen.Code {
	load := jen.Id(n.local(b.Name)).Dot("Float32At").Call(jen.Id("i"))
	if c == dtype.F32 {
		return load
	}
	types := []dtype.DType{b.DType}
	if b.DType == dtype.Invalid {
		types = nil
		if storage != nil {
			types = []dtype.DType{*storage}
		} else {
			for _, v := range k.Variants {
				types = append(types, v.DType)
			}
		}
	}
	for _, t := range types {
		if t != c {
			return roundTo(c, load)
		}
	}
	return load
}

// convertParam converts a runtime param to the compute type.
func convertParam(p ir.Field, n *names, c dtype.DType) jen.Code {
	v := jen.Id(n.local(p.Name))
	if p.Type != dtype.F32 {
		v = jen.Float32().Call(v)
	}
	if c == dtype.F32 {
		return v
	}
	return roundTo(c, v)
}

func roundTo(c dtype.DType, v jen.Code) *jen.Statement {
	w := exprWriter{mode: c}
	return w.round(jen.Add(v)).code
}

// reference64Method writes K.Reference64 over float64 slices.
func reference64Method(f *jen.File, k *ir.Kernel, n *names) {
	f.Add(comment(
		fmt.Sprintf("Reference64 evaluates %s's formulas per element in float64 with no rounding", k.Name),
		"anywhere (literals and constants are the nearest float64 of their text): the ideal values",
		"that parity tolerances are measured against. Inputs must have equal lengths.",
	))
	var params, results []param
	var outs, inArgs, lens, nils, makes, rets []jen.Code
	for _, b := range k.BindingsOf(ir.Input) {
		id := n.local(b.Name)
		params = append(params, param{id, jen.Index().Float64(), "[]float64"})
		lens = append(lens, jen.Len(jen.Id(id)))
		inArgs = append(inArgs, jen.Id(id).Index(jen.Id("i")))
	}
	for _, p := range k.Params() {
		params = append(params, param{n.local(p.Name), goParamType(p.Type), p.Type.String()})
		inArgs = append(inArgs, jen.Float64().Call(jen.Id(n.local(p.Name))))
	}
	for _, b := range k.BindingsOf(ir.Output) {
		id := n.local(b.Name)
		results = append(results, param{id, jen.Index().Float64(), "[]float64"})
		outs = append(outs, jen.Id(id).Index(jen.Id("i")))
		nils = append(nils, jen.Nil())
		rets = append(rets, jen.Id(id))
		makes = append(makes, jen.Id(id).Op("=").Make(jen.Index().Float64(), jen.Id("n")))
	}
	results = append(results, param{"err", jen.Error(), "error"})
	body := []jen.Code{
		jen.List(jen.Id("n"), jen.Err()).Op(":=").Id(n.desc).Dot("SameLen").Call(lens...),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(append(nils, jen.Err())...)),
	}
	body = append(body, makes...)
	body = append(body,
		jen.For(jen.Id("i").Op(":=").Lit(0), jen.Id("i").Op("<").Id("n"), jen.Id("i").Op("++")).Block(
			jen.List(outs...).Op("=").Id(n.eval64).Call(inArgs...)),
		jen.Return(append(rets, jen.Nil())...),
	)
	f.Func().Params(jen.Id(n.typ)).Id("Reference64").Params(grouped(params)...).Params(grouped(results)...).Block(body...)
}

// evalFunc writes the per-element evaluation in compute type c, or in
// float64 when c is Invalid.
func evalFunc(f *jen.File, k *ir.Kernel, n *names, c dtype.DType) error {
	w := &exprWriter{mode: c, names: n}
	name, what := n.eval64, "in float64, with no rounding."
	if c != dtype.Invalid {
		name, what = n.eval(c.String()), "in compute type "+c.String()+"; its inputs\n// and params are already converted to it."
	}
	var params, results []jen.Code
	for _, b := range k.BindingsOf(ir.Input) {
		params = append(params, jen.Id(n.local(b.Name)))
	}
	for _, p := range k.Params() {
		params = append(params, jen.Id(n.local(p.Name)))
	}
	var outs []jen.Code
	for _, b := range k.BindingsOf(ir.Output) {
		results = append(results, jen.Id(n.local(b.Name)))
		outs = append(outs, jen.Id(n.local(b.Name)))
	}
	params[len(params)-1] = jen.Add(params[len(params)-1]).Add(w.float())
	results[len(results)-1] = jen.Add(results[len(results)-1]).Add(w.float())
	body := constantLines(k, n, w)
	for _, s := range k.Steps {
		body = append(body, stepLines(s, n, w)...)
	}
	if w.err != nil {
		return w.err
	}
	body = append(body, jen.Return(outs...))
	f.Add(comment(fmt.Sprintf("%s computes one element of %s %s", name, k.Name, what)))
	f.Func().Id(name).Params(params...).Params(results...).Block(body...)
	return nil
}

// constantLines declares the spec's constants as variables of the
// evaluation type (variables, not Go constants, so that arithmetic on them
// rounds like the kernel's), each with the text it came from.
func constantLines(k *ir.Kernel, n *names, w *exprWriter) []jen.Code {
	var out []jen.Code
	for _, con := range k.Constants {
		v := w.literal(con.Text)
		line := jen.Id(n.local(con.Name)).Op(":=").Add(w.float()).Call(v.code)
		if rendered := fmt.Sprintf("%#v", v.code); rendered != con.Text {
			line.Comment(con.Text)
		}
		out = append(out, line)
	}
	return out
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
	lines := append([]jen.Code{jen.Comment(s.Name + " = " + s.Source)}, w.hoisted...)
	w.hoisted = nil
	return append(lines, jen.Id(n.local(s.Name)).Op(op).Add(code))
}

// goParamType is the Go type of a runtime param.
func goParamType(t dtype.DType) *jen.Statement {
	switch t {
	case dtype.I32:
		return jen.Int32()
	case dtype.U32:
		return jen.Uint32()
	}
	return jen.Float32()
}
