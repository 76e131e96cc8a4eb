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

// tensorList names the tensors in binding order: "x, y".
func tensorList(k *ir.Kernel) string {
	var out []string
	for _, b := range k.Bindings {
		if b.Role != ir.Args {
			out = append(out, b.Name)
		}
	}
	return strings.Join(out, ", ")
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
		fmt.Sprintf("Inputs: %s. Outputs: %s.", strings.Join(ins, ", "), strings.Join(outs, ", ")),
		fmt.Sprintf("Shapes: %s; tensors of one shape match exactly, and %s", shapeDoc(k), strings.Join(flatSizes(k), ", ")),
		"may span several leading dims (kgenrt.Binding.Shape). Tensors without a fixed",
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

// shapeDoc lists the tensors by shape: "x, y [rows, cols]; w [cols]".
func shapeDoc(k *ir.Kernel) string {
	var order []string
	byShape := map[string][]string{}
	for _, b := range k.Bindings {
		if b.Role == ir.Args {
			continue
		}
		key := b.ShapeText()
		if _, ok := byShape[key]; !ok {
			order = append(order, key)
		}
		byShape[key] = append(byShape[key], b.Name)
	}
	var parts []string
	for _, key := range order {
		parts = append(parts, strings.Join(byShape[key], ", ")+" "+key)
	}
	return strings.Join(parts, "; ")
}

// flatSizes lists the sizes that lead a shape and are no shape's later dim
// (n, rows): the ones kgenrt.Check lets span several leading dims.
func flatSizes(k *ir.Kernel) []string {
	axis := map[string]bool{}
	for _, b := range k.Bindings {
		for j, s := range b.Shape {
			axis[s] = axis[s] || j > 0
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, b := range k.Bindings {
		if len(b.Shape) > 0 && !axis[b.Shape[0]] && !seen[b.Shape[0]] {
			seen[b.Shape[0]] = true
			out = append(out, b.Shape[0])
		}
	}
	return out
}

// outputFormulas lists the formulas of the outputs, for launcher docs.
func outputFormulas(k *ir.Kernel) string {
	var out []string
	for _, s := range k.Steps {
		if s.Output {
			out = append(out, s.Name+" = "+usertext.Comment(s.Source))
		}
	}
	return strings.Join(out, "; ")
}

// launchers writes Run, Encode and Enqueue: lay out the call, Select,
// launch. Run and Encode hand the call to the port they select; Enqueue
// builds its call on the stack (the tensor list and args bytes in local
// arrays) and launches through the port table's Enqueue, which selects the
// CUDA port and calls it directly, so an Enqueue allocates nothing.
func launchers(f *jen.File, k *ir.Kernel, n *names) {
	argsLen := jen.Lit(4 * len(k.ArgsBinding().Fields))
	heapCall := func(backend jen.Code) []jen.Code {
		return []jen.Code{
			jen.List(jen.Id("call"), jen.Err()).Op(":=").Id(n.call).Call(append(append(builderBackend(k, backend), []jen.Code{
				jen.Index().Op("*").Add(rt("Tensor")).Values(tensorArgs(k, n)...),
				jen.Make(jen.Index().Byte(), argsLen),
			}...), paramArgs(k, n)...)...),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		}
	}
	selectPort := func(backend jen.Code) []jen.Code {
		return append(heapCall(backend),
			jen.List(jen.Id("port"), jen.Err()).Op(":=").Id(n.ports).Dot("Select").Call(backend),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		)
	}
	doc := append([]string{
		fmt.Sprintf("Run computes %s on backend b and waits for the result: %s.", k.Name, outputFormulas(k)),
	}, tensorDoc(k)...)
	doc = append(doc,
		fmt.Sprintf("RunArgs(b, %s{…}) takes the same by name, where swapping two tensors of one", n.args),
		"dtype cannot compile.",
		"Errors: *kgenrt.DTypeError or *kgenrt.TensorError before anything launches;",
		fmt.Sprintf("*kgenrt.PortError (errors.Is kgenrt.ErrNoPort) when b has no port here: use %s.Reference.", n.exported))
	f.Add(comment(doc...))
	params := append([]jen.Code{jen.Id("b").Add(rt("Backend"))}, launchParams(k, n)...)
	f.Func().Params(jen.Id(n.typ)).Id("Run").Params(params...).Error().Block(
		append(selectPort(jen.Id("b")), jen.Return(jen.Id("port").Dot("Run").Call(jen.Op("&").Id("call"))))...)

	f.Add(comment(
		fmt.Sprintf("Encode adds %s to cb without committing it, for batching launches; commit", k.Name),
		"and wait on cb yourself. Tensors must live in Metal buffers (kgenrt.NewMetal). Checks",
		"and errors are Run's; the port is the one Select returns for cb's backend.",
	))
	params = append([]jen.Code{jen.Id("cb").Op("*").Add(rt("CommandBuffer"))}, launchParams(k, n)...)
	f.Func().Params(jen.Id(n.typ)).Id("Encode").Params(params...).Error().Block(
		append(selectPort(jen.Id("cb").Dot("Backend").Call()),
			jen.Return(jen.Id("port").Dot("Encode").Call(jen.Id("cb"), jen.Op("&").Id("call"))))...)

	enqueueDoc := []string{
		fmt.Sprintf("Enqueue launches %s on CUDA stream stream (0: the legacy default stream) and", k.Name),
		"returns without waiting, for launching into your own CUDA work; synchronize it yourself.",
		"Tensors must live in CUDA device memory (kgenrt.NewCUDA, or kgenrt.WrapCUDA over yours):",
		"nothing is copied. Checks and errors are Run's; the port is the one Select returns for",
		"the stream's backend (kgenrt.PortTable.Enqueue). The call is laid out on the stack: an",
		"Enqueue allocates nothing.",
	}
	if k.Ports[ir.ROCm] {
		enqueueDoc = append(enqueueDoc,
			"With ROCm tensors (kgenrt.NewROCm, kgenrt.WrapROCm) the call goes to the ROCm port",
			"instead, stream then holding a hipStream_t (0: the null stream); that path copies the",
			"call to the heap.")
	}
	f.Add(comment(enqueueDoc...))
	params = append([]jen.Code{jen.Id("stream").Add(rt("CUDAStream"))}, launchParams(k, n)...)
	f.Func().Params(jen.Id(n.typ)).Id("Enqueue").Params(params...).Error().Block(
		jen.Id("ts").Op(":=").Index(jen.Op("...")).Op("*").Add(rt("Tensor")).Values(tensorArgs(k, n)...),
		jen.Var().Id("args").Index(argsLen).Byte(),
		jen.List(jen.Id("call"), jen.Err()).Op(":=").Id(n.call).Call(append(append(builderBackend(k, jen.Id("stream").Dot("Backend").Call()), []jen.Code{
			jen.Id("ts").Index(jen.Op(":")), jen.Id("args").Index(jen.Op(":")),
		}...), paramArgs(k, n)...)...),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		jen.Return(jen.Id(n.ports).Dot("Enqueue").Call(jen.Id("stream"), jen.Op("&").Id("call"))),
	)
}

// paramArgs passes the params.
func paramArgs(k *ir.Kernel, n *names) []jen.Code {
	var out []jen.Code
	for _, p := range k.Params() {
		out = append(out, jen.Id(n.local(p.Name)))
	}
	return out
}

// builderBackend is the call builder's backend argument, which only a
// kernel with Metal split phases takes (builderParams).
func builderBackend(k *ir.Kernel, backend jen.Code) []jen.Code {
	if len(k.Phases()) == 0 {
		return nil
	}
	return []jen.Code{backend}
}

// builderParams are the call builder's parameters: the tensors in binding
// order, the args struct's bytes to fill, then the params. A kernel with
// Metal split phases (ir.Kernel.Phases) first takes the backend: the chain
// of phase calls is Metal's launch form, and any other port (CUDA runs its
// split inside one library call, ir.SplitCUDA) gets the kernel's one call.
func builderParams(k *ir.Kernel, n *names) []jen.Code {
	var ps []param
	if len(k.Phases()) > 0 {
		ps = append(ps, param{"kgenBackend", rt("Backend"), "Backend"})
	}
	ps = append(ps, []param{
		{"ts", jen.Index().Op("*").Add(rt("Tensor")), "[]*Tensor"},
		{"args", jen.Index().Byte(), "[]byte"},
	}...)
	for _, p := range k.Params() {
		ps = append(ps, param{n.local(p.Name), goParamType(p.Type), p.Type.String()})
	}
	return grouped(ps)
}

// tensorAt is the builder's reference to the tensor of binding f.
func tensorAt(k *ir.Kernel, f int) jen.Code {
	i := 0
	for _, b := range k.Bindings[:f] {
		if b.Role != ir.Args {
			i++
		}
	}
	return jen.Id("ts").Index(jen.Lit(i))
}

// callBuilder writes the function that checks the tensors against the
// binding table and lays out the launch: the size fields from the tensors'
// shapes, the derived ones by the Metal launch's rules, the args struct
// bytes at their offsets, and the grid, all rendered from the IR's launch
// (launch.Expr trees), the same objects the inventory prints and kgenrt
// evaluates.
func callBuilder(f *jen.File, k *ir.Kernel, n *names) error {
	l := k.Launch(ir.Metal)
	derived, err := derivedLines(l)
	if err != nil {
		return err
	}
	grid := make([]jen.Code, 3)
	tg := make([]jen.Code, 3)
	for i, g := range l.Grid {
		c, _, err := sizeExpr(g)
		if err != nil {
			return fmt.Errorf("dispatch grid %s: %w", g, err)
		}
		grid[i], tg[i] = c, jen.Lit(l.Threadgroup[i])
	}
	args := k.ArgsBinding()
	given := launchSizes(k)
	var ids, vals []jen.Code
	for i, s := range given {
		ids, vals = append(ids, jen.Id(s)), append(vals, jen.Id("sizes").Index(jen.Lit(i)))
	}
	body := []jen.Code{
		jen.Var().Id("sizes").Index(jen.Lit(len(given))).Int().Comment(strings.Join(given, ", ")),
		jen.List(jen.Id("v"), jen.Err()).Op(":=").Id(n.desc).Dot("CheckSizes").Call(
			jen.Id("sizes").Index(jen.Op(":")), jen.Id("ts").Op("...")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(rt("Call").Values(), jen.Err())),
		jen.List(ids...).Op(":=").List(vals...),
	}
	body = append(body, derived...)
	if mm := k.Matmul(); mm != nil && mm.Chain != nil {
		// The chain keeps p columns of its rows' outputs in threadgroup
		// memory; a wider p would not fit (the kernel then writes nothing).
		body = append(body, jen.If(jen.Id("p").Op(">").Lit(mm.Chain.PMax)).Block(jen.Return(rt("Call").Values(),
			jen.Qual("fmt", "Errorf").Call(jen.Lit(k.Name+": p = %d is wider than the chain's threadgroup-memory output strip ("+
				fmt.Sprint(mm.Chain.PMax)+" columns; docs/matmul.md)"), jen.Id("p")))))
	}
	for _, fl := range args.Fields {
		if fl.StrideOf != "" || len(fl.Aligned) > 0 {
			continue // PutStrides, below
		}
		body = append(body, jen.Qual("encoding/binary", "LittleEndian").Dot("PutUint32").Call(
			jen.Id("args").Index(jen.Lit(fl.Offset).Op(":")), fieldBits(fl, n)).
			Commentf("%s: %s at offset %d", fl.Name, fl.Type, fl.Offset))
	}
	if k.Batched() {
		body = append(body,
			jen.Comment("Each tensor's element strides, one field per dimension: the kernel reads views."),
			jen.If(jen.Err().Op(":=").Id(n.desc).Dot("PutStrides").Call(jen.Id("args"), jen.Id("ts")), jen.Err().Op("!=").Nil()).Block(
				jen.Return(rt("Call").Values(), jen.Err())))
	}
	if len(k.Phases()) > 0 {
		split, err := splitLines(k, n)
		if err != nil {
			return err
		}
		body = append(body, split...)
	}
	gridText := strings.Join(k.Grid(ir.Metal), ", ")
	body = append(body, jen.Return(rt("Call").Add(block(
		item(field("Kernel", jen.Op("&").Id(n.desc))),
		item(field("Variant", jen.Id("v"))),
		item(field("Tensors", jen.Id("ts"))),
		item(field("Args", jen.Id("args"))),
		item(field("Grid", jen.Index(jen.Lit(3)).Int().Values(grid...))).Comment(gridText),
		item(field("Threadgroup", jen.Index(jen.Lit(3)).Int().Values(tg...))),
	)), jen.Nil()))
	doc := []string{
		fmt.Sprintf("%s checks the tensors of a %s launch (ts: %s) against its binding table", n.call, k.Name, tensorList(k)),
		fmt.Sprintf("(their shapes give %s) and lays out the launch: the args struct little-endian at", strings.Join(launchSizes(k), ", ")),
		fmt.Sprintf("the IR's offsets into args (%d bytes), and dispatchThreads with grid (%s) and", 4*len(args.Fields), gridText),
		fmt.Sprintf("threadgroup (%d, %d, %d). The call refers to ts and args, which the caller owns.",
			l.Threadgroup[0], l.Threadgroup[1], l.Threadgroup[2]),
	}
	if ph := k.Phases(); len(ph) > 0 {
		when := "always"
		if cond := k.PhasesWhen(); !cond.Always() {
			when = "with " + cond.String()
		}
		doc = append(doc, fmt.Sprintf("On Metal %s it returns the split form instead: a chain of %d calls (%s).", when, len(ph), n.phases))
	}
	f.Add(comment(doc...))
	f.Func().Id(n.call).Params(builderParams(k, n)...).Params(rt("Call"), jen.Error()).Block(body...)
	return nil
}

// splitLines are a split kernel's branch of its call builder (ir.Split):
// above the row-owning kernel's strip, one f32 workspace per accumulator
// and a chain of the phases' calls (kgenrt.Call.Next), each laid out from
// its ir.Phase: bindings, variant, the shared args bytes and its grid.
func splitLines(k *ir.Kernel, n *names) ([]jen.Code, error) {
	ws := func(w int) string { return fmt.Sprintf("kgenWs%d", w) }
	var branch []jen.Code
	for w, b := range k.Workspaces() {
		var dims []jen.Code
		for _, d := range b.Shape {
			dims = append(dims, jen.Id(d))
		}
		branch = append(branch,
			jen.List(jen.Id(ws(w)), jen.Err()).Op(":=").Add(rt("NewWorkspace")).Call(dims...),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(rt("Call").Values(), jen.Err())))
	}
	phases := k.Phases()
	for i := range phases {
		branch = append(branch,
			jen.List(jen.Id(fmt.Sprintf("kgenV%d", i)), jen.Err()).Op(":=").Id(n.phases).Index(jen.Lit(i)).Dot("Variant").Call(jen.Id("v").Dot("DType")),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(rt("Call").Values(), jen.Err())))
	}
	var next, first jen.Code
	for i := len(phases) - 1; i >= 0; i-- {
		p := phases[i]
		pv := fmt.Sprintf("kgenV%d", i)
		var tensors []jen.Code
		for j, b := range p.Bindings {
			switch f := p.From[j]; {
			case b.Role == ir.Args:
			case f < 0:
				tensors = append(tensors, jen.Id(ws(-1-f)))
			default:
				tensors = append(tensors, tensorAt(k, f))
			}
		}
		grid := make([]jen.Code, 3)
		tg := make([]jen.Code, 3)
		for a, g := range p.Launch.Grid {
			c, _, err := sizeExpr(g)
			if err != nil {
				return nil, fmt.Errorf("phase %s grid %s: %w", p.Suffix, g, err)
			}
			grid[a], tg[a] = c, jen.Lit(p.Launch.Threadgroup[a])
		}
		g := p.Launch.GridStrings()
		fields := []jen.Code{
			item(field("Kernel", jen.Op("&").Id(n.phases).Index(jen.Lit(i)))),
			item(field("Variant", jen.Id(pv))),
			item(field("Tensors", jen.Index().Op("*").Add(rt("Tensor")).Values(tensors...))),
			item(field("Args", jen.Id("args"))),
			item(field("Grid", jen.Index(jen.Lit(3)).Int().Values(grid...))).Comment(strings.Join(g[:], ", ")),
			item(field("Threadgroup", jen.Index(jen.Lit(3)).Int().Values(tg...))),
		}
		if next != nil {
			fields = append(fields, item(field("Next", next)))
		}
		first = rt("Call").Add(block(fields...))
		next = jen.Op("&").Add(first)
	}
	when := k.PhasesWhen()
	cond := jen.Id("kgenBackend").Dot("ChainsPhases").Call()
	if !when.Always() {
		cond = cond.Op("&&").Id(when.Field).Op(when.Op()).Lit(when.Bound)
	}
	return append(phasesWhy(k),
		jen.Comment("Other ports run their own form of it inside the kernel's one call (Backend.ChainsPhases)."),
		jen.If(cond).Block(append(branch, jen.Return(first, jen.Nil()))...),
	), nil
}

// phasesWhy is the comment before the branch to a kernel's phases.
func phasesWhy(k *ir.Kernel) []jen.Code {
	if k.ColReductions() != nil {
		return []jen.Code{
			jen.Comment("On Metal, always: the row passes fold the [cols] outputs' terms into f32 partials per"),
			jen.Comment(fmt.Sprintf("chunk of %d rows, then the combine folds the chunks in a fixed order (docs/colwise.md).", ir.ColChunk)),
		}
	}
	if k.Matmul().Gemv != nil {
		return []jen.Code{
			jen.Comment(fmt.Sprintf("On Metal, m <= %d (a decode step): the matrix-vector form, each weight", ir.GemvRows)),
			jen.Comment("streamed once instead of staged through a mostly idle tile."),
		}
	}
	if k.Matmul().Decode != nil {
		return []jen.Code{
			jen.Comment(fmt.Sprintf("On Metal, %s > 1 when the chain's own grid is too small to fill the GPU (a", ir.SplitsField)),
			jen.Comment("decode step): flash decoding, the keys split over threadgroups, then a combine."),
		}
	}
	return []jen.Code{
		jen.Comment(fmt.Sprintf("On Metal, n > %d does not fit the row-owning kernel's threadgroup-memory strip: the", k.Matmul().Split.Over)),
		jen.Comment("split form, the accumulators into f32 workspaces, then the row passes over them."),
	}
}

// derivedLines computes a launch's derived size fields as locals, each by
// its rule: rows_per_group := 256 / launch.LanesFor(cols, 256, 4).
func derivedLines(l launch.Launch) ([]jen.Code, error) {
	var out []jen.Code
	for _, d := range l.Derived {
		c, _, err := sizeExpr(d.Rule)
		if err != nil {
			return nil, fmt.Errorf("derived size field %s = %s: %w", d.Field, d.Rule, err)
		}
		out = append(out, jen.Id(d.Field).Op(":=").Add(c))
	}
	return out, nil
}

// LaunchPath is the import path of the launch description package, which
// generated descriptors and launchers use.
const LaunchPath = "github.com/kgen-dev/kgen/launch"

// Go precedence of the size expression operators.
const (
	sizeSum     = 4
	sizeProduct = 5
	sizePrimary = 7
)

// sizeExpr renders a size expression as Go over the call builder's size
// locals, with its precedence. Integer division is Go's; ceildiv and the
// team-width rule are the runtime's own functions, so the launcher computes
// what kgenrt and parity compute.
func sizeExpr(e *launch.Expr) (*jen.Statement, int, error) {
	switch e.Op {
	case launch.Lit:
		return jen.Lit(e.Value), sizePrimary, nil
	case launch.Var:
		if e.Name == launch.ElemBytes {
			return nil, 0, fmt.Errorf("%s is not known to the Go launcher", e.Name)
		}
		return jen.Id(e.Name), sizePrimary, nil
	}
	args := make([]*jen.Statement, len(e.Args))
	precs := make([]int, len(e.Args))
	for i, a := range e.Args {
		c, p, err := sizeExpr(a)
		if err != nil {
			return nil, 0, err
		}
		args[i], precs[i] = c, p
	}
	operand := func(i, min int) *jen.Statement {
		if precs[i] < min {
			return jen.Parens(args[i])
		}
		return args[i]
	}
	switch e.Op {
	case launch.Add:
		out := operand(0, sizeSum)
		for i := 1; i < len(args); i++ {
			out = jen.Add(out).Op("+").Add(operand(i, sizeSum+1))
		}
		return out, sizeSum, nil
	case launch.Mul, launch.Div:
		op := map[launch.Op]string{launch.Mul: "*", launch.Div: "/"}[e.Op]
		return jen.Add(operand(0, sizeProduct)).Op(op).Add(operand(1, sizeProduct+1)), sizeProduct, nil
	case launch.CeilDiv:
		return rt("CeilDiv").Call(args[0], args[1]), sizePrimary, nil
	case launch.Min:
		return jen.Id("min").Call(args[0], args[1]), sizePrimary, nil
	case launch.Max:
		return jen.Id("max").Call(args[0], args[1]), sizePrimary, nil
	case launch.Lanes:
		if len(args) == 4 {
			return jen.Qual(LaunchPath, "LanesFrom").Call(args[0], args[1], args[2], args[3]), sizePrimary, nil
		}
		return jen.Qual(LaunchPath, "LanesFor").Call(args[0], args[1], args[2]), sizePrimary, nil
	}
	return nil, 0, fmt.Errorf("unknown size operation %d", e.Op)
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
