package golang

import (
	"fmt"
	"github.com/kgen-dev/kgen/internal/usertext"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/launch"
)

// apiFile writes the kernel's type and value, descriptor, port table,
// table accessors and launchers.
func apiFile(k *ir.Kernel, n *names, opts Request) (*jen.File, error) {
	f := newFile(opts, k.SpecPath)
	kernelType(f, k, n)
	descriptor(f, k, n, opts)
	if err := portTable(f, k, n); err != nil {
		return nil, err
	}
	accessors(f, k, n)
	launchers(f, k, n)
	argsLaunchers(f, k, n)
	if err := callBuilder(f, k, n); err != nil {
		return nil, err
	}
	return f, nil
}

// formulaLines echoes the spec: constants, lets and outputs as written.
func formulaLines(k *ir.Kernel) []string {
	var out []string
	for _, c := range k.Constants {
		out = append(out, "\t"+c.Name+" = "+usertext.Comment(c.Text)+" (constant)")
	}
	for _, s := range k.Steps {
		out = append(out, "\t"+s.Name+" = "+usertext.Comment(s.Source))
	}
	return out
}

func kernelType(f *jen.File, k *ir.Kernel, n *names) {
	compute := k.Compute.String()
	if k.Compute == dtype.Invalid {
		compute = "the storage dtype"
	}
	lines := []string{fmt.Sprintf("%s is kernel %s, generated from %s.", n.typ, k.Name, usertext.Comment(k.SpecPath))}
	if k.Doc != "" {
		lines = append(lines, usertext.Lines(k.Doc)...)
	}
	heading := handler(k).formulasDoc
	if heading == "" {
		heading = "In %s (math: %s):"
	}
	lines = append(lines, "")
	lines = append(lines, shapeLines(k)...)
	lines = append(lines, fmt.Sprintf(heading, compute, k.Math), "")
	lines = append(lines, formulaLines(k)...)
	lines = append(lines, "",
		fmt.Sprintf("Storage dtypes: %s. Ports: %s.", strings.Join(variantNames(k), ", "), portSummary(k)))
	f.Add(comment(lines...))
	f.Type().Id(n.typ).Struct()
	f.Add(comment(fmt.Sprintf("%s is kernel %s; see %s for its formulas.", n.exported, k.Name, n.typ)))
	f.Var().Id(n.exported).Id(n.typ)
}

// shapeLines names each tensor's shape (from the IR's bindings), then a
// blank line: the formulas read x and w alike, the shapes say which is a
// [rows, cols] matrix and which a [cols] row shared by every row.
func shapeLines(k *ir.Kernel) []string {
	var parts []string
	for _, b := range k.Bindings {
		if b.Role == ir.Input || b.Role == ir.Output {
			parts = append(parts, b.Name+" "+b.ShapeText())
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return []string{"Shapes: " + strings.Join(parts, ", ") + ".", ""}
}

func variantNames(k *ir.Kernel) []string {
	var out []string
	for _, v := range k.Variants {
		out = append(out, v.DType.String())
	}
	return out
}

func portSummary(k *ir.Kernel) string {
	var out []string
	for b := ir.Backend(0); b < ir.NumBackends; b++ {
		state := "none"
		if k.Ports[b] {
			state = "generated"
		}
		out = append(out, b.String()+" "+state)
	}
	return strings.Join(out, ", ")
}

// descriptor writes the kgenrt.Kernel: the dtype-key table, the binding
// table with each tensor's shape, and the launch of every port, all copied
// from the IR. Launch is a [...] literal with one entry per backend, in
// port-table order, like the port table: it names no backend (choosing is
// Select's job) and a backend added to kgenrt breaks the build.
func descriptor(f *jen.File, k *ir.Kernel, n *names, opts Request) {
	f.Add(comment(
		fmt.Sprintf("%s describes %s to kgenrt. Variants is its dtype-key table (storage", n.desc, k.Name),
		"dtype → host name and key); Bindings is its signature in buffer-index order, the",
		fmt.Sprintf("one layout the MSL in %s and every launcher share; Launch is each", opts.Source(k, ir.Metal).Path),
		"port's grid and derived size fields, which the ports evaluate.",
	))
	fields := descriptorFields(k, k.Name, k.Variants, k.Bindings, k.Launch, n, opts)
	phases := k.DescriptorPhases()
	if len(phases) > 0 {
		var refs []jen.Code
		for i := range phases {
			refs = append(refs, jen.Op("&").Id(n.phases).Index(jen.Lit(i)))
		}
		fields = append(fields, item(field("Phases", jen.Index().Op("*").Add(rt("Kernel")).Values(refs...))))
		if k.ColReductions() != nil { // no one-launch form: the CUDA port launches the phases
			fields = append(fields, item(field("PortPhases", jen.True())))
		}
		if k.CUDASplit() { // flash decoding: the CUDA port launches the phases where its split says
			cond := k.PhasesWhen()
			fields = append(fields, item(field("PortSplit", jen.Op("&").Add(rt("PortSplit")).Values(
				field("Backend", rt("CUDA")), field("Field", jen.Lit(cond.Field)), field("Above", jen.Lit(cond.Bound))))))
		}
	}
	if forms := k.CUDAForms(); len(forms) > 0 {
		var vals []jen.Code
		for _, f := range forms {
			vals = append(vals, item(jen.Values(field("Phase", jen.Lit(f.Phase)), field("Field", jen.Lit(f.Field)), field("AtMost", jen.Lit(f.AtMost)))).
				Comment(fmt.Sprintf("%s when %s <= %d", phases[f.Phase].Entry, f.Field, f.AtMost)))
		}
		fields = append(fields, item(field("CUDAForms", jen.Index().Add(rt("CUDAForm")).Add(block(vals...)))))
	}
	f.Var().Id(n.desc).Op("=").Add(rt("Kernel")).Add(block(fields...))
	if len(phases) == 0 {
		return
	}
	doc := "docs/matmul.md"
	if k.ColReductions() != nil {
		doc = "docs/colwise.md; the first is the kernel's own entry point, which also binds the workspaces"
	}
	f.Add(comment(
		fmt.Sprintf("%s are the launches of %s's split form, taken %s (%s):", n.phases, k.Name, phasesCond(k), doc),
		"more entry points of the same source, each with its own bindings, variants and launch.",
	))
	if extra := len(phases) - len(k.Phases()); extra > 0 {
		f.Comment(fmt.Sprintf("The last %d are CUDA's alone, which its port takes by CUDAForms; Metal's chain uses the first %d.", extra, len(k.Phases())))
	}
	var descs []jen.Code
	for _, p := range phases {
		descs = append(descs, item(block(descriptorFields(k, p.Entry, p.Variants, p.Bindings, p.LaunchOn, n, opts)...)).Comment(p.Comment))
	}
	f.Var().Id(n.phases).Op("=").Index(jen.Op("...")).Add(rt("Kernel")).Add(block(descs...))
}

// phasesCond is when a kernel takes its phases, in words.
func phasesCond(k *ir.Kernel) string {
	if cond := k.PhasesWhen(); !cond.Always() {
		return "for " + cond.String()
	}
	return "always"
}

// descriptorFields are the fields of one kgenrt.Kernel literal: the
// kernel's own, or one of its phases' (name, variants, bindings, launch).
func descriptorFields(k *ir.Kernel, name string, vs []ir.Variant, bs []ir.Binding, launchOf func(ir.Backend) launch.Launch, n *names, opts Request) []jen.Code {
	var variants, bindings, launches []jen.Code
	for _, v := range vs {
		variants = append(variants, jen.Values(
			field("DType", rtType(v.DType)), field("HostName", jen.Lit(v.HostName)), field("Key", jen.Lit(ir.Key(opts.Source(k, ir.Metal).Data, v.HostName, k.Math)))))
	}
	for _, b := range bs {
		bindings = append(bindings, bindingValue(b))
	}
	for b := ir.Backend(0); b < ir.NumBackends; b++ {
		if l := launchOf(b); k.Ports[b] && l.Grid[0] == nil {
			launches = append(launches, item(jen.Values()).Comment(b.String()+": not this port's launch"))
		} else if k.Ports[b] {
			launches = append(launches, item(launchValue(l)).Comment(b.String()))
		} else {
			launches = append(launches, item(jen.Values()).Comment(b.String()+": no port"))
		}
	}
	return []jen.Code{
		item(field("Name", jen.Lit(name))),
		item(field("Spec", jen.Lit(k.SpecPath))),
		item(field("Kind", jen.Lit(k.Kind.String()))),
		item(field("Math", jen.Lit(k.Math))),
		item(field("Source", jen.Id(n.source))),
		item(field("Fallback", jen.Lit(opts.Package+"."+n.exported+".Reference"))),
		item(field("Variants", jen.Index().Add(rt("Variant")).Add(block(items(variants)...)))),
		item(field("Bindings", jen.Index().Add(rt("Binding")).Add(block(items(bindings)...)))),
		batchField(k),
		item(field("ElemsPerThread", jen.Lit(handler(k).perThread(k)))),
		item(field("Launch", jen.Index(jen.Op("...")).Qual(LaunchPath, "Launch").Add(block(launches...)))),
	}
}

// batchField is a batched kernel's Batch (its launch dimensions), else
// nothing.
func batchField(k *ir.Kernel) jen.Code {
	if !k.Batched() {
		return jen.Null()
	}
	return item(field("Batch", stringsValue(k.Batch())))
}

// launchValue writes a launch as a launch.Launch literal whose expressions
// are built with the launch package's constructors, so it reads as the
// formula: launch.Times(launch.N(256), launch.Ceil(launch.V("rows"), ...)).
func launchValue(l launch.Launch) jen.Code {
	grid := make([]jen.Code, 3)
	tg := make([]jen.Code, 3)
	for i := range grid {
		grid[i], tg[i] = exprValue(l.Grid[i]), jen.Lit(l.Threadgroup[i])
	}
	fields := []jen.Code{
		item(field("Grid", jen.Index(jen.Lit(3)).Op("*").Qual(LaunchPath, "Expr").Values(grid...))).Comment(gridComment(l)),
		item(field("Threadgroup", jen.Index(jen.Lit(3)).Int().Values(tg...))),
	}
	if len(l.Derived) > 0 {
		var ds []jen.Code
		for _, d := range l.Derived {
			ds = append(ds, item(jen.Values(field("Field", jen.Lit(d.Field)), field("Rule", exprValue(d.Rule)), field("Doc", jen.Lit(d.Doc)))).Comment(d.Rule.String()))
		}
		fields = append(fields, item(field("Derived", jen.Index().Qual(LaunchPath, "Derived").Add(block(ds...)))))
	}
	return block(fields...)
}

func gridComment(l launch.Launch) string {
	g := l.GridStrings()
	return strings.Join(g[:], ", ")
}

// exprValue writes a size expression with the launch constructors.
func exprValue(e *launch.Expr) jen.Code {
	ctor := func(name string, args ...*launch.Expr) jen.Code {
		var cs []jen.Code
		for _, a := range args {
			cs = append(cs, exprValue(a))
		}
		return jen.Qual(LaunchPath, name).Call(cs...)
	}
	switch e.Op {
	case launch.Lit:
		return jen.Qual(LaunchPath, "N").Call(jen.Lit(e.Value))
	case launch.Var:
		if e.Name == launch.ElemBytes {
			return jen.Qual(LaunchPath, "V").Call(jen.Qual(LaunchPath, "ElemBytes"))
		}
		return jen.Qual(LaunchPath, "V").Call(jen.Lit(e.Name))
	case launch.Add:
		return ctor("Sum", e.Args...)
	case launch.Mul:
		return ctor("Times", e.Args...)
	case launch.Div:
		return ctor("Over", e.Args...)
	case launch.CeilDiv:
		return ctor("Ceil", e.Args...)
	case launch.Min:
		return ctor("Smaller", e.Args...)
	case launch.Max:
		return ctor("Larger", e.Args...)
	case launch.Lanes:
		if len(e.Args) == 4 {
			return ctor("TeamLanesFrom", e.Args...)
		}
		return ctor("TeamLanes", e.Args...)
	}
	panic(fmt.Sprintf("launch op %d has no constructor", e.Op))
}

// block is a composite literal's braces with one element per line; each
// element carries its own comma (see item), so a trailing comment can
// follow it.
func block(elems ...jen.Code) *jen.Statement {
	return jen.Custom(jen.Options{Open: "{", Close: "}", Multi: true}, elems...)
}

// item is one element of a block, with its comma.
func item(c jen.Code) *jen.Statement { return jen.Add(c).Op(",") }

func items(cs []jen.Code) []jen.Code {
	out := make([]jen.Code, len(cs))
	for i, c := range cs {
		out[i] = item(c)
	}
	return out
}

func bindingValue(b ir.Binding) jen.Code {
	role := map[ir.Role]string{ir.Input: "Input", ir.Output: "Output", ir.Args: "Args"}[b.Role]
	d := []jen.Code{field("Index", jen.Lit(b.Index)), field("Name", jen.Lit(b.Name)), field("Role", rt(role))}
	if b.Role != ir.Args {
		d = append(d, field("DType", rtType(b.DType)), field("Shape", stringsValue(b.Shape)))
		if b.Batch != nil {
			var batch []string
			for _, bd := range b.Batch {
				batch = append(batch, bd.String())
			}
			d = append(d, field("Batch", stringsValue(batch)))
		}
		if b.Paired {
			d = append(d, field("Paired", jen.True()))
		}
		if b.Indexed {
			d = append(d, field("Indexed", jen.True()))
		}
		if b.Quant != nil {
			d = append(d, field("Quant", jen.Op("&").Add(quantValue(*b.Quant))))
		}
		if b.Table {
			d = append(d, field("Table", jen.True()))
		}
		return jen.Values(d...)
	}
	var fields []jen.Code
	for _, fl := range b.Fields {
		fd := []jen.Code{field("Name", jen.Lit(fl.Name)), field("Type", rtType(fl.Type)), field("Offset", jen.Lit(fl.Offset))}
		if fl.Size {
			fd = append(fd, field("Size", jen.True()))
		}
		if fl.StrideOf != "" {
			fd = append(fd, field("StrideOf", jen.Lit(fl.StrideOf)), field("StrideDim", jen.Lit(fl.StrideDim)))
		}
		if len(fl.Aligned) > 0 {
			fd = append(fd, field("Aligned", stringsValue(fl.Aligned)))
		}
		fields = append(fields, jen.Values(fd...))
	}
	return jen.Values(append(d, field("Fields", jen.Index().Add(rt("Field")).Add(block(items(fields)...))))...)
}

// stringsValue is a []string literal ([]string{} when empty: a batched
// tensor with no batch dimensions is shared, not unbatched).
func stringsValue(xs []string) jen.Code {
	var vals []jen.Code
	for _, x := range xs {
		vals = append(vals, jen.Lit(x))
	}
	return jen.Index().String().Values(vals...)
}

// field is one "Name: value" element of a keyed composite literal, kept in
// the order written (jen.Dict would sort them).
func field(name string, v jen.Code) jen.Code { return jen.Id(name).Op(":").Add(v) }

// portTable writes the kernel's ports as a [...] literal assigned to a
// fixed-size array: one more backend in kgenrt and this stops compiling.
func portTable(f *jen.File, k *ir.Kernel, n *names) error {
	f.Add(comment(
		fmt.Sprintf("%s is %s's port table, one slot per kgenrt.Backend in order; nil = no", n.ports, k.Name),
		"port. Its [...] literal must have kgenrt.NumBackends entries, so a backend added to kgenrt",
		"breaks this build until kgen regenerates it. Only Select and Available read it.",
	))
	var slots []jen.Code
	for b := ir.Backend(0); b < ir.NumBackends; b++ {
		switch {
		case !k.Ports[b]:
			slots = append(slots, item(jen.Nil()).Comment(b.String()+": null, callers take their fallback path"))
		case ports[b] != nil:
			slots = append(slots, item(ports[b].slot(n)).Comment(b.String()+": generated"))
		default:
			return fmt.Errorf("the Go emitter cannot generate a %s port", b)
		}
	}
	f.Var().Id(n.ports).Op("=").Add(rt("PortTable")).Add(block(
		item(field("Kernel", jen.Op("&").Id(n.desc))),
		item(field("Ports", jen.Index(jen.Op("...")).Add(rt("Port")).Add(block(slots...)))),
	))
	return nil
}

// accessors writes Describe, Select, Available and Variant.
func accessors(f *jen.File, k *ir.Kernel, n *names) {
	recv := jen.Params(jen.Id(n.typ))
	f.Comment(fmt.Sprintf("Describe returns %s's kgenrt descriptor.", k.Name))
	f.Func().Add(recv).Id("Describe").Params().Op("*").Add(rt("Kernel")).Block(jen.Return(jen.Op("&").Id(n.desc)))
	f.Add(comment(
		fmt.Sprintf("Select returns %s's port for backend b, or a *kgenrt.PortError naming the", k.Name),
		"kernel and the backend when it has none that can run here: the cue to take the fallback",
		fmt.Sprintf("path (%s.Reference). Run, Encode and Enqueue choose their port here and nowhere else.", n.exported),
	))
	b := jen.Id("b").Add(rt("Backend"))
	f.Func().Add(recv).Id("Select").Params(b).Params(rt("Port"), jen.Error()).Block(
		jen.Return(jen.Id(n.ports).Dot("Select").Call(jen.Id("b"))))
	f.Comment(fmt.Sprintf("Available reports whether Select would return a port for b; it reads the same table."))
	f.Func().Add(recv).Id("Available").Params(jen.Id("b").Add(rt("Backend"))).Bool().Block(
		jen.Return(jen.Id(n.ports).Dot("Available").Call(jen.Id("b"))))
	f.Add(comment(
		fmt.Sprintf("Variant returns the dtype-key table entry of storage dtype dt (%s), or a", strings.Join(variantNames(k), ", ")),
		"*kgenrt.DTypeError: a dtype outside the table never runs another variant's kernel.",
	))
	f.Func().Add(recv).Id("Variant").Params(jen.Id("dt").Add(rt("DType"))).Params(jen.Op("*").Add(rt("Variant")), jen.Error()).Block(
		jen.Return(jen.Id(n.desc).Dot("Variant").Call(jen.Id("dt"))))
}
