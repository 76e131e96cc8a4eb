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

// The CPU reference of every kind: Reference (in the compute type, with the
// kernel's rounding), Reference64 (float64, no rounding) and their stage
// functions, one per ir.Stage and evaluation mode. What differs between
// kinds is only the loops that call the stages (kindHandler.loops).

// rtType is the kgenrt constant of a dtype; Invalid is T, "the variant's".
func rtType(t dtype.DType) *jen.Statement {
	if t == dtype.Invalid {
		return rt("T")
	}
	return rt(strings.ToUpper(t.String()))
}

// referenceFile writes Reference, Reference64 and the stage functions.
func referenceFile(k *ir.Kernel, n *names, opts Request) (*jen.File, error) {
	f := newFile(opts, k.SpecPath)
	registerCPU(f, k, n)
	if err := referenceMethod(f, k, n); err != nil {
		return nil, err
	}
	reference64Method(f, k, n)
	for _, c := range modes(k) {
		for _, st := range k.Stages() {
			if err := stageFunc(f, k, n, st, c); err != nil {
				return nil, err
			}
		}
	}
	return f, nil
}

// registerCPU writes the init that gives the descriptor generic forms of
// Reference and Reference64 (set in init: a descriptor field whose value
// refers back to the descriptor would be an initialization cycle).
func registerCPU(f *jen.File, k *ir.Kernel, n *names) {
	var tensors, params, inputs, vals, sizes []jen.Code
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
	for _, s := range given64(k) {
		sizes = append(sizes, jen.Id("sizes").Index(jen.Lit(s)))
	}
	sizesParam := jen.Id("sizes")
	if len(sizes) == 0 {
		sizesParam = jen.Id("_")
	}
	args64 := append(append(sizes, inputs...), params...)
	f.Add(comment(fmt.Sprintf("init registers %s's CPU reference with its descriptor, for RunCPU and RunCPU64.", k.Name)))
	f.Func().Id("init").Params().Block(
		jen.Id(n.desc).Dot("CPU").Op("=").Func().Params(jen.Id("ts").Index().Op("*").Add(rt("Tensor")), jen.Id("ps").Index().Float64()).Error().Block(
			jen.Return(jen.Id(n.exported).Dot("Reference").Call(append(tensors, params...)...))),
		jen.Id(n.desc).Dot("CPU64").Op("=").Func().Params(sizesParam.Add(rt("Sizes")), jen.Id("ins").Index().Index().Float64(), jen.Id("ps").Index().Float64()).
			Params(jen.Index().Index().Float64(), jen.Error()).Block(
			jen.List(append(vals, jen.Err())...).Op(":=").Id(n.exported).Dot("Reference64").Call(args64...),
			jen.Return(jen.Index().Index().Float64().Values(vals...), jen.Err())),
	)
}

// referenceMethod writes K.Reference, the CPU backend on kgenrt tensors:
// CheckHost (Check, and host memory), the size fields, then the kind's loops in the compute type (one
// case per variant when the compute type follows the storage dtype).
func referenceMethod(f *jen.File, k *ir.Kernel, n *names) error {
	c := k.Compute.String()
	if k.Compute == dtype.Invalid {
		c = "the storage dtype"
	}
	f.Add(comment(append([]string{
		fmt.Sprintf("Reference computes %s on the CPU: the fallback path where Select refuses, and the", k.Name),
		"oracle of parity tests. It checks the tensors exactly as Run does, converts inputs to the",
		fmt.Sprintf("compute type (%s) on load, evaluates the formulas in it with every operation", c),
		"rounded to the compute type, and stores each output rounded to nearest even in its",
		"storage dtype." + functionNote(k),
	}, handler(k).referenceDoc...)...))
	first := jen.Id("v")
	if len(k.ComputeTypes()) == 1 {
		first = jen.Id("_")
	}
	body := []jen.Code{
		jen.List(first, jen.Id("sizes"), jen.Err()).Op(":=").Id(n.desc).Dot("CheckHost").Call(tensorArgs(k, n)...),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		sizeLocals(k, nil),
	}
	prelude, err := handler(k).prelude(k, n)
	if err != nil {
		return err
	}
	body = append(body, prelude...)
	if types := k.ComputeTypes(); len(types) == 1 {
		body = append(body, batchLoops(k, n, handler(k).loops(newEvalGen(k, n, referenceIO(k, n, types[0], nil))))...)
	} else {
		var cases []jen.Code
		for _, v := range k.Variants {
			d := v.DType
			cases = append(cases, jen.Case(rtType(d)).Block(batchLoops(k, n, handler(k).loops(newEvalGen(k, n, referenceIO(k, n, d, &d))))...))
		}
		cases = append(cases, jen.Default().Block(jen.Return(
			jen.Qual("fmt", "Errorf").Call(jen.Lit("kgen: kernel "+k.Name+": no CPU reference for dtype %v"), jen.Id("v").Dot("DType")))))
		body = append(body, jen.Switch(jen.Id("v").Dot("DType")).Block(cases...))
	}
	body = append(body, jen.Return(jen.Nil()))
	f.Func().Params(jen.Id(n.typ)).Id("Reference").Params(launchParams(k, n)...).Error().Block(body...)
	return nil
}

// batchLoops is loops, run once per batch element by a batched kernel
// (eachBatch).
func batchLoops(k *ir.Kernel, n *names, loops []jen.Code) []jen.Code {
	if !k.Batched() {
		return loops
	}
	return []jen.Code{eachBatch(k, n, loops)}
}

// eachBatch runs a batched kernel's loops once per batch element, over
// each tensor's matrix of it (kgenrt.Kernel.EachBatch: views, a shared
// tensor the same for every element, a grouped one at index / group).
func eachBatch(k *ir.Kernel, n *names, loops []jen.Code) jen.Code {
	var ids, vals []jen.Code
	for i, t := range tensorArgs(k, n) {
		ids, vals = append(ids, t), append(vals, jen.Id("kgenT").Index(jen.Lit(i)))
	}
	body := append([]jen.Code{jen.List(ids...).Op(":=").List(vals...)}, loops...)
	body = append(body, jen.Return(jen.Nil()))
	return jen.If(jen.Err().Op(":=").Id(n.desc).Dot("EachBatch").Call(jen.Id("sizes"), jen.Index().Op("*").Add(rt("Tensor")).Values(tensorArgs(k, n)...),
		jen.Func().Params(jen.Id("_").Int(), jen.Id("kgenT").Index().Op("*").Add(rt("Tensor"))).Error().Block(body...)),
		jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err()))
}

// givenSizes lists the size fields the tensors' shapes name, in args
// struct order: what Check returns.
func givenSizes(k *ir.Kernel) []string {
	named := map[string]bool{}
	for _, b := range k.Bindings {
		for _, s := range b.Shape {
			named[s] = true
		}
	}
	var out []string
	for _, f := range k.ArgsBinding().Fields {
		if f.Size && named[f.Name] {
			out = append(out, f.Name)
		}
	}
	return out
}

// launchSizes lists the size fields Check returns, in args struct order:
// givenSizes, and a batched kernel's batch sizes and groups.
func launchSizes(k *ir.Kernel) []string {
	named := map[string]bool{}
	for _, s := range givenSizes(k) {
		named[s] = true
	}
	for _, b := range k.Bindings {
		for _, d := range b.Batch {
			named[d.Size] = true
			if d.Group != "" {
				named[d.Group] = true
			}
		}
	}
	var out []string
	for _, f := range k.ArgsBinding().Fields {
		if f.Size && named[f.Name] {
			out = append(out, f.Name)
		}
	}
	return out
}

// sizeLocals declares the size fields Check returned as locals (rows, cols
// := sizes["rows"], sizes["cols"]), except those in skip.
func sizeLocals(k *ir.Kernel, skip map[string]bool) jen.Code {
	var ids, vals []jen.Code
	for _, s := range givenSizes(k) {
		if !skip[s] {
			ids, vals = append(ids, jen.Id(s)), append(vals, jen.Id("sizes").Index(jen.Lit(s)))
		}
	}
	if len(ids) == 0 {
		return jen.Null()
	}
	return jen.List(ids...).Op(":=").List(vals...)
}

// referenceIO is how Reference loads, stores and accumulates in compute
// type c; storage is the variant's dtype when known (per-variant compute).
func referenceIO(k *ir.Kernel, n *names, c dtype.DType, storage *dtype.DType) evalIO {
	return evalIO{
		mode: c,
		load: func(b ir.Binding, idx jen.Code) jen.Code { return loadInput(k, n, b, c, storage, idx) },
		store: func(b ir.Binding, idx, val jen.Code) jen.Code {
			if b.DType.IsInt() {
				return jen.Id(n.local(b.Name)).Dot("SetInt32").Call(idx, val)
			}
			return jen.Id(n.local(b.Name)).Dot("SetFloat32").Call(idx, val)
		},
		acc: func(red ir.Reduction) jen.Code {
			return rt("NewRowAcc").Call(rt(rowOps[red.Op.Func()]), jen.Id("kgenLanes"))
		},
		add:   func(acc, j, v jen.Code) jen.Code { return jen.Add(acc).Dot("Add").Call(j, v) },
		param: func(p ir.Field) jen.Code { return convertParam(p, n, c) },
		colAcc: func(o ir.ColOutput) jen.Code {
			return rt("NewColAcc").Call(rt(rowOps[o.Op.Func()]), jen.Id("rows"), jen.Id("cols"))
		},
	}
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

// loadInput reads element idx of an input and converts it to compute type
// c; the conversion is written only where a storage dtype can differ from it.
func loadInput(k *ir.Kernel, n *names, b ir.Binding, c dtype.DType, storage *dtype.DType, idx jen.Code) jen.Code {
	if b.DType.IsInt() { // formulas see an integer tensor's elements as int32
		return jen.Id(n.local(b.Name)).Dot("Int32At").Call(idx)
	}
	load := jen.Id(n.local(b.Name)).Dot("Float32At").Call(idx)
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

// reference64Method writes K.Reference64 over float64 slices: the sizes
// the inputs' lengths cannot tell (the kind's given64), the inputs, the
// params; outputs come back as flat slices.
func reference64Method(f *jen.File, k *ir.Kernel, n *names) {
	h := handler(k)
	f.Add(comment(append([]string{
		fmt.Sprintf("Reference64 evaluates %s's formulas in float64 with no rounding anywhere", k.Name),
		"(literals and constants are the nearest float64 of their text), through the same stages",
		"as Reference: the ideal values parity tolerances are measured against.",
	}, h.reference64Doc...)...))
	var params, results []param
	var lens, nils, makes, rets, given []jen.Code
	skip := map[string]bool{}
	for _, s := range given64(k) {
		params = append(params, param{s, jen.Int(), "int"})
		given = append(given, jen.Lit(s).Op(":").Id(s))
		skip[s] = true
	}
	for _, b := range k.BindingsOf(ir.Input) {
		id := n.local(b.Name)
		params = append(params, param{id, jen.Index().Float64(), "[]float64"})
		lens = append(lens, jen.Len(jen.Id(id)))
	}
	for _, p := range k.Params() {
		params = append(params, param{n.local(p.Name), goParamType(p.Type), p.Type.String()})
	}
	for _, b := range k.BindingsOf(ir.Output) {
		id := n.local(b.Name)
		results = append(results, param{id, jen.Index().Float64(), "[]float64"})
		nils = append(nils, jen.Nil())
		rets = append(rets, jen.Id(id))
		var dims []jen.Code
		for _, s := range b.Shape {
			dims = append(dims, jen.Id(s))
		}
		makes = append(makes, jen.Id(id).Op("=").Make(jen.Index().Float64(), jen.Add(product(dims))))
	}
	results = append(results, param{"err", jen.Error(), "error"})
	givenMap := jen.Nil()
	if len(given) > 0 {
		givenMap = rt("Sizes").Values(given...)
	}
	// With every size given, Sizes64 only checks the lengths (err is the
	// named result).
	sizesID, assign := jen.Id("_"), "="
	for _, s := range givenSizes(k) {
		if !skip[s] {
			sizesID, assign = jen.Id("sizes"), ":="
		}
	}
	body := []jen.Code{
		jen.List(sizesID, jen.Id("err")).Op(assign).Id(n.desc).Dot("Sizes64").Call(append([]jen.Code{givenMap}, lens...)...),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(append(nils, jen.Err())...)),
		sizeLocals(k, skip),
	}
	body = append(body, makes...)
	body = append(body, h.loops(newEvalGen(k, n, reference64IO(n)))...)
	body = append(body, jen.Return(append(rets, jen.Nil())...))
	f.Func().Params(jen.Id(n.typ)).Id("Reference64").Params(grouped(params)...).Params(grouped(results)...).Block(body...)
}

// product multiplies factors (rows * cols).
func product(factors []jen.Code) *jen.Statement {
	out := jen.Add(factors[0])
	for _, f := range factors[1:] {
		out = out.Op("*").Add(f)
	}
	return out
}

// reference64IO is how Reference64 loads, stores and accumulates: float64
// slices, RowAcc64 in element order.
func reference64IO(n *names) evalIO {
	return evalIO{
		mode: dtype.Invalid,
		load: func(b ir.Binding, idx jen.Code) jen.Code {
			if b.DType.IsInt() { // an integer tensor's element, held exactly
				return rt("Int32Of").Call(jen.Id(n.local(b.Name)).Index(idx))
			}
			return jen.Id(n.local(b.Name)).Index(idx)
		},
		store: func(b ir.Binding, idx, val jen.Code) jen.Code {
			if b.DType.IsInt() { // stored as the kernel stores it: the low bits
				val = jen.Float64().Call(rt("WrapInt").Call(rt(strings.ToUpper(b.DType.String())), val))
			}
			return jen.Id(n.local(b.Name)).Index(idx).Op("=").Add(val)
		},
		acc:   func(red ir.Reduction) jen.Code { return rt("NewRowAcc64").Call(rt(rowOps[red.Op.Func()])) },
		add:   func(acc, _, v jen.Code) jen.Code { return jen.Add(acc).Dot("Add").Call(v) },
		param: func(p ir.Field) jen.Code { return jen.Float64().Call(jen.Id(n.local(p.Name))) },
		colAcc: func(o ir.ColOutput) jen.Code {
			return rt("NewColAcc64").Call(rt(rowOps[o.Op.Func()]), jen.Id("rows"), jen.Id("cols"))
		},
	}
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
