package golang

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// launchParams are a launcher's parameters: the input tensors, the output
// tensors, then the params with their Go types ("x, y *kgenrt.Tensor, slope
// float32").
func launchParams(k *ir.Kernel, n *names) []jen.Code {
	var ps []param
	for _, b := range k.Bindings {
		if b.Role != ir.Args {
			ps = append(ps, param{n.local(b.Name), jen.Op("*").Add(rt("Tensor")), "*Tensor"})
		}
	}
	for _, p := range k.Params() {
		ps = append(ps, param{n.local(p.Name), goParamType(p.Type), p.Type.String()})
	}
	return grouped(ps)
}

// param is a named parameter or result.
type param struct {
	name string
	typ  *jen.Statement
	key  string // names typ, to group equal types without rendering them
}

// grouped writes parameters with consecutive equal types grouped, as gofmt'd
// Go reads best: "x, h, gain []float64".
func grouped(ps []param) []jen.Code {
	out := make([]jen.Code, len(ps))
	for i, p := range ps {
		id := jen.Id(p.name)
		if i == len(ps)-1 || p.key != ps[i+1].key {
			id.Add(p.typ)
		}
		out[i] = id
	}
	return out
}

// tensorArgs passes the tensors in binding order.
func tensorArgs(k *ir.Kernel, n *names) []jen.Code {
	var out []jen.Code
	for _, b := range k.Bindings {
		if b.Role != ir.Args {
			out = append(out, jen.Id(n.local(b.Name)))
		}
	}
	return out
}

// callArgs passes the tensors then the params.
func callArgs(k *ir.Kernel, n *names) []jen.Code {
	out := tensorArgs(k, n)
	for _, p := range k.Params() {
		out = append(out, jen.Id(n.local(p.Name)))
	}
	return out
}

// tensorDoc describes a launcher's tensors and params for its doc comment.
func tensorDoc(k *ir.Kernel) []string {
	var ins, outs []string
	for _, b := range k.Bindings {
		what := b.Name
		if b.DType != dtype.Invalid {
			what += " (always " + b.DType.String() + ")"
		}
		switch b.Role {
		case ir.Input:
			ins = append(ins, what)
		case ir.Output:
			outs = append(outs, what)
		}
	}
	lines := []string{
		fmt.Sprintf("Inputs: %s. Outputs: %s. All have the same shape; those without a fixed", strings.Join(ins, ", "), strings.Join(outs, ", ")),
		fmt.Sprintf("dtype share the variant's storage dtype (%s). An output may be the very", strings.Join(variantNames(k), ", ")),
		"same memory as an input of its dtype (in place); any other overlap is refused.",
	}
	if ps := k.Params(); len(ps) > 0 {
		var names []string
		for _, p := range ps {
			names = append(names, p.Name+" ("+p.Type.String()+")")
		}
		lines = append(lines, "Params: "+strings.Join(names, ", ")+".")
	}
	return lines
}

// outputFormulas lists the formulas of the outputs, for launcher docs.
func outputFormulas(k *ir.Kernel) string {
	var out []string
	for _, s := range k.Steps {
		if s.Output {
			out = append(out, s.Name+" = "+s.Source)
		}
	}
	return strings.Join(out, "; ")
}

// launchers writes Run and Encode: check, Select, launch.
func launchers(f *jen.File, k *ir.Kernel, n *names) {
	checkAndSelect := func(backend jen.Code) []jen.Code {
		return []jen.Code{
			jen.List(jen.Id("call"), jen.Err()).Op(":=").Id(n.call).Call(callArgs(k, n)...),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
			jen.List(jen.Id("port"), jen.Err()).Op(":=").Id(n.ports).Dot("Select").Call(backend),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		}
	}
	doc := append([]string{
		fmt.Sprintf("Run computes %s on backend b and waits for the result: %s.", k.Name, outputFormulas(k)),
	}, tensorDoc(k)...)
	doc = append(doc,
		"Errors: *kgenrt.DTypeError or *kgenrt.TensorError before anything launches;",
		fmt.Sprintf("*kgenrt.PortError (errors.Is kgenrt.ErrNoPort) when b has no port here: use %s.Reference.", n.exported))
	f.Add(comment(doc...))
	params := append([]jen.Code{jen.Id("b").Add(rt("Backend"))}, launchParams(k, n)...)
	f.Func().Params(jen.Id(n.typ)).Id("Run").Params(params...).Error().Block(
		append(checkAndSelect(jen.Id("b")), jen.Return(jen.Id("port").Dot("Run").Call(jen.Id("call"))))...)

	f.Add(comment(
		fmt.Sprintf("Encode adds %s to cb without committing it, for batching launches; commit", k.Name),
		"and wait on cb yourself. Tensors must live in Metal buffers (kgenrt.NewMetal). Checks",
		"and errors are Run's; the port is the one Select returns for cb's backend.",
	))
	params = append([]jen.Code{jen.Id("cb").Op("*").Add(rt("CommandBuffer"))}, launchParams(k, n)...)
	f.Func().Params(jen.Id(n.typ)).Id("Encode").Params(params...).Error().Block(
		append(checkAndSelect(jen.Id("cb").Dot("Backend").Call()),
			jen.Return(jen.Id("port").Dot("Encode").Call(jen.Id("cb"), jen.Id("call"))))...)
}

// callBuilder writes the function that checks the tensors against the
// binding table and lays out the launch: the args struct bytes at their
// offsets and the dispatch, computed from the IR's grid expressions.
func callBuilder(f *jen.File, k *ir.Kernel, n *names) error {
	grid := make([]jen.Code, 3)
	for i, g := range k.Launch(ir.Metal).GridStrings() {
		c, err := gridExpr(g, sizeFields(k))
		if err != nil {
			return fmt.Errorf("dispatch grid %q: %w", g, err)
		}
		grid[i] = c
	}
	tg := make([]jen.Code, 3)
	for i, t := range k.Launch(ir.Metal).Threadgroup {
		tg[i] = jen.Lit(t)
	}
	args := k.ArgsBinding()
	body := []jen.Code{
		jen.List(jen.Id("v"), jen.Id("n"), jen.Err()).Op(":=").Id(n.desc).Dot("Check").Call(tensorArgs(k, n)...),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Id("args").Op(":=").Make(jen.Index().Byte(), jen.Lit(4*len(args.Fields))),
	}
	for _, fl := range args.Fields {
		body = append(body, jen.Qual("encoding/binary", "LittleEndian").Dot("PutUint32").Call(
			jen.Id("args").Index(jen.Lit(fl.Offset).Op(":")), fieldBits(fl, n)).
			Commentf("%s: %s at offset %d", fl.Name, fl.Type, fl.Offset))
	}
	body = append(body, jen.Return(jen.Op("&").Add(rt("Call")).Add(block(
		item(field("Kernel", jen.Op("&").Id(n.desc))),
		item(field("Variant", jen.Id("v"))),
		item(field("Tensors", jen.Index().Op("*").Add(rt("Tensor")).Values(tensorArgs(k, n)...))),
		item(field("Args", jen.Id("args"))),
		item(field("Grid", jen.Index(jen.Lit(3)).Int().Values(grid...))).Comment(strings.Join(k.Grid(ir.Metal), ", ")),
		item(field("Threadgroup", jen.Index(jen.Lit(3)).Int().Values(tg...))),
	)), jen.Nil()))
	f.Add(comment(
		fmt.Sprintf("%s checks the tensors of a %s launch against its binding table and lays", n.call, k.Name),
		"out the launch: the args struct little-endian at the IR's offsets, and dispatchThreads",
		fmt.Sprintf("with grid (%s) and threadgroup (%d, %d, %d).", strings.Join(k.Grid(ir.Metal), ", "),
			k.Launch(ir.Metal).Threadgroup[0], k.Launch(ir.Metal).Threadgroup[1], k.Launch(ir.Metal).Threadgroup[2]),
	))
	f.Func().Id(n.call).Params(launchParams(k, n)...).Params(jen.Op("*").Add(rt("Call")), jen.Error()).Block(body...)
	return nil
}

// sizeFields maps the args struct's size fields to the Go expressions that
// hold them in the call builder (elementwise: n, the element count).
func sizeFields(k *ir.Kernel) map[string]bool {
	out := map[string]bool{}
	for _, f := range k.ArgsBinding().Fields {
		if f.Size {
			out[f.Name] = true
		}
	}
	return out
}

// fieldBits is the uint32 a field stores.
func fieldBits(fl ir.Field, n *names) jen.Code {
	if fl.Size {
		return jen.Uint32().Call(jen.Id(fl.Name))
	}
	v := jen.Id(n.local(fl.Name))
	switch fl.Type {
	case dtype.F32:
		return jen.Qual("math", "Float32bits").Call(v)
	case dtype.I32:
		return jen.Uint32().Call(v)
	}
	return v
}
