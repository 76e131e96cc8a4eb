package golang

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// Run(b, x, y) takes its tensors by position, so two tensors of one dtype
// swapped (Geglu.Run(b, up, gate, y)) compile and compute nonsense. The
// args struct names them instead: every field is exported but one blank
// field, which makes a positional composite literal a compile error
// outside the package (its blank field cannot be given), so
// GegluArgs{Gate: g, Up: u, Y: y} is the only way to write one.
// RunArgs, EncodeArgs, EnqueueArgs and ReferenceArgs take it and call the positional
// forms, which stay for code that ranges over kernels of one signature
// through an interface.

// argsField is one field of the args struct.
type argsField struct {
	name string // Go field name
	from string // the spec name
	typ  *jen.Statement
	doc  string
}

// argsFields are the tensors in binding order, then the params.
func argsFields(k *ir.Kernel) []argsField {
	var out []argsField
	taken := map[string]bool{}
	unique := func(name string) string {
		g := GoName(name)
		for taken[g] {
			g += "_"
		}
		taken[g] = true
		return g
	}
	for _, b := range k.Bindings {
		if b.Role == ir.Args {
			continue
		}
		dt := "the storage dtype"
		if b.DType != dtype.Invalid {
			dt = b.DType.String()
		}
		out = append(out, argsField{unique(b.Name), b.Name, jen.Op("*").Add(rt("Tensor")),
			fmt.Sprintf("%s %s %s, %s", b.Role, b.Name, b.ShapeText(), dt)})
	}
	for _, p := range k.Params() {
		out = append(out, argsField{unique(p.Name), p.Name, goParamType(p.Type), "param " + p.Name + " (" + p.Type.String() + ")"})
	}
	return out
}

// argsLaunchers writes the args struct and RunArgs, EncodeArgs, EnqueueArgs
// and ReferenceArgs.
func argsLaunchers(f *jen.File, k *ir.Kernel, n *names) {
	fields := argsFields(k)
	var decl, pass []jen.Code
	for _, fl := range fields {
		decl = append(decl, jen.Id(fl.name).Add(fl.typ).Comment(fl.doc))
		pass = append(pass, jen.Id("a").Dot(fl.name))
	}
	decl = append(decl, jen.Id("_").Struct().Comment("refuses positional literals: name every field"))
	f.Add(comment(
		fmt.Sprintf("%s are the tensors and params of %s by name, for RunArgs, EncodeArgs,", n.args, k.Name),
		fmt.Sprintf("EnqueueArgs and ReferenceArgs: %s{%s} compiles, a positional literal does", n.args, keyedExample(fields)),
		"not, so two tensors of one dtype cannot be swapped unseen.",
	))
	f.Type().Id(n.args).Struct(decl...)

	f.Add(comment("RunArgs is Run with named arguments."))
	f.Func().Params(jen.Id("k").Id(n.typ)).Id("RunArgs").Params(jen.Id("b").Add(rt("Backend")), jen.Id("a").Id(n.args)).Error().Block(
		jen.Return(jen.Id("k").Dot("Run").Call(append([]jen.Code{jen.Id("b")}, pass...)...)))
	f.Add(comment("EncodeArgs is Encode with named arguments."))
	f.Func().Params(jen.Id("k").Id(n.typ)).Id("EncodeArgs").Params(jen.Id("cb").Op("*").Add(rt("CommandBuffer")), jen.Id("a").Id(n.args)).Error().Block(
		jen.Return(jen.Id("k").Dot("Encode").Call(append([]jen.Code{jen.Id("cb")}, pass...)...)))
	f.Add(comment("EnqueueArgs is Enqueue with named arguments."))
	f.Func().Params(jen.Id("k").Id(n.typ)).Id("EnqueueArgs").Params(jen.Id("stream").Add(rt("CUDAStream")), jen.Id("a").Id(n.args)).Error().Block(
		jen.Return(jen.Id("k").Dot("Enqueue").Call(append([]jen.Code{jen.Id("stream")}, pass...)...)))
	f.Add(comment("ReferenceArgs is Reference with named arguments."))
	f.Func().Params(jen.Id("k").Id(n.typ)).Id("ReferenceArgs").Params(jen.Id("a").Id(n.args)).Error().Block(
		jen.Return(jen.Id("k").Dot("Reference").Call(pass...)))
}

// keyedExample is "Gate: gate, Up: up, Y: y" for the args struct's doc.
func keyedExample(fields []argsField) string {
	s := ""
	for i, fl := range fields {
		if i > 0 {
			s += ", "
		}
		s += fl.name + ": " + fl.from
	}
	return s
}
