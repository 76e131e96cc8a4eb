package golang

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/emit/inventory"
	"github.com/kgen-dev/kgen/ir"
)

// The Go side of rowwise kernels: the call builder (CheckRows, the derived
// size field rows_per_group, the grid) and the CPU reference, which runs the
// same passes as the kernel with the same accumulation order
// (kgenrt.RowAcc), and Reference64, which runs them in float64.

// rowCallBuilder writes the function that checks a rowwise launch and lays
// it out.
func rowCallBuilder(f *jen.File, k *ir.Kernel, n *names) error {
	grid, err := gridExpr(k.Dispatch.Grid[0], sizeFields(k))
	if err != nil {
		return fmt.Errorf("dispatch grid %q: %w", k.Dispatch.Grid[0], err)
	}
	args := k.ArgsBinding()
	body := []jen.Code{
		jen.List(jen.Id("v"), jen.Id("kgenRows"), jen.Id("cols"), jen.Err()).Op(":=").Id(n.desc).Dot("CheckRows").Call(tensorArgs(k, n)...),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
	}
	for s, name := range rowsFieldNames(k) {
		body = append(body, jen.Id(name).Op(":=").Id("kgenRows").Index(jen.Lit(s)))
	}
	body = append(body,
		jen.Id("rows_per_group").Op(":=").Add(rt("RowsPerGroup")).Call(jen.Id("cols"), jen.Lit(k.Threadgroup)).
			Comment(fmt.Sprintf("%d / lanes per row", k.Threadgroup)),
		jen.Id("args").Op(":=").Make(jen.Index().Byte(), jen.Lit(4*len(args.Fields))))
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
		item(field("Grid", jen.Index(jen.Lit(3)).Int().Values(grid, jen.Lit(1), jen.Lit(1)))).Comment(strings.Join(k.Dispatch.Grid[:], ", ")),
		item(field("Threadgroup", jen.Index(jen.Lit(3)).Int().Values(jen.Lit(k.Threadgroup), jen.Lit(1), jen.Lit(1)))),
	)), jen.Nil()))
	f.Add(comment(
		fmt.Sprintf("%s checks the tensors of a %s launch against its binding table (kgenrt", n.call, k.Name),
		"CheckRows: [rows, cols] tensors, [cols] row vectors) and lays out the launch: the args",
		"struct little-endian at the IR's offsets, rows_per_group derived from cols, and",
		fmt.Sprintf("dispatchThreads with grid (%s) and threadgroup (%d, 1, 1).", strings.Join(k.Dispatch.Grid[:], ", "), k.Threadgroup),
	))
	f.Func().Id(n.call).Params(launchParams(k, n)...).Params(jen.Op("*").Add(rt("Call")), jen.Error()).Block(body...)
	return nil
}

// rowsFieldNames are the size fields holding each segment's rows.
func rowsFieldNames(k *ir.Kernel) []string {
	if len(k.Rows.Segments) == 0 {
		return []string{"rows"}
	}
	var out []string
	for _, s := range k.Rows.Segments {
		out = append(out, s+"_rows")
	}
	return out
}

// rowStage is one stage function of the reference.
type rowStage struct {
	name    string
	row     bool
	level   int
	targets []rowTarget
	deps    ir.Deps
}

type rowTarget struct {
	name string // Go identifier of the result
	expr *ir.Expr
	bool bool
}

// rowStages mirrors emit/msl's stages: per-row lets of each level, one
// function per reduction pass returning its terms, and the write function.
func rowStages(k *ir.Kernel, n *names) []rowStage {
	r := k.Rows
	var out []rowStage
	for p := 0; p <= r.Passes; p++ {
		if steps, d := k.RowDeps(p); len(steps) > 0 {
			st := rowStage{name: fmt.Sprintf("%sRow%d", n.lower, p), row: true, level: p, deps: d}
			for _, i := range steps {
				s := k.Steps[i]
				st.targets = append(st.targets, rowTarget{name: n.local(s.Name), expr: s.Expr, bool: s.Expr.Bool})
			}
			out = append(out, st)
		}
		if p == r.Passes {
			break
		}
		st := rowStage{name: fmt.Sprintf("%sPass%d", n.lower, p+1), level: p + 1}
		var exprs []*ir.Expr
		for i, red := range r.Reductions {
			if red.Level == p+1 {
				st.targets = append(st.targets, rowTarget{name: fmt.Sprintf("kgen_t%d", i), expr: red.Arg})
				exprs = append(exprs, red.Arg)
			}
		}
		st.deps = k.ElementDeps(exprs)
		out = append(out, st)
	}
	st := rowStage{name: n.lower + "Write", level: r.Passes + 1}
	var exprs []*ir.Expr
	for _, s := range k.Steps {
		if s.Output {
			st.targets = append(st.targets, rowTarget{name: n.local(s.Name), expr: s.Expr})
			exprs = append(exprs, s.Expr)
		}
	}
	st.deps = k.ElementDeps(exprs)
	return append(out, st)
}

// modeName is the suffix of a stage function in an evaluation mode.
func modeName(c dtype.DType) string {
	if c == dtype.Invalid {
		return "F64"
	}
	return strings.ToUpper(c.String())
}

// rowSpecName is a tensor binding's name in the formulas.
func rowSpecName(k *ir.Kernel, b ir.Binding) string {
	if len(k.Rows.Segments) > 0 {
		return strings.TrimPrefix(b.Name, k.Rows.Segments[b.Segment]+"_")
	}
	return b.Name
}

// stageValueArgs lists the value names a stage takes, in order: inputs,
// params, per-row lets, reductions (spec names).
func stageValueArgs(k *ir.Kernel, st rowStage) (names []string, kinds []string) {
	for i, b := range k.SegmentBindings(0, ir.Input) {
		if st.deps.Inputs[i] {
			names, kinds = append(names, rowSpecName(k, b)), append(kinds, "input")
		}
	}
	for i, p := range k.Params() {
		if st.deps.Params[i] {
			names, kinds = append(names, p.Name), append(kinds, "param")
		}
	}
	for _, i := range st.deps.RowLets {
		kind := "row"
		if k.Steps[i].Expr.Bool {
			kind = "rowbool"
		}
		names, kinds = append(names, k.Steps[i].Name), append(kinds, kind)
	}
	for _, i := range st.deps.Reductions {
		names, kinds = append(names, ir.ReductionName(i)), append(kinds, "reduction")
	}
	return names, kinds
}

// rowStageFunc writes one stage function in mode c (Invalid: float64).
func rowStageFunc(f *jen.File, k *ir.Kernel, n *names, st rowStage, c dtype.DType) error {
	w := &exprWriter{mode: c, names: n}
	names, kinds := stageValueArgs(k, st)
	var params, results []jen.Code
	for i, name := range names {
		t := w.float()
		if kinds[i] == "rowbool" {
			t = jen.Bool()
		}
		params = append(params, jen.Id(n.local(name)).Add(t))
	}
	for _, t := range st.targets {
		ty := w.float()
		if t.bool {
			ty = jen.Bool()
		}
		results = append(results, jen.Id(t.name).Add(ty))
	}
	var body []jen.Code
	for i, con := range k.Constants {
		if st.deps.Constants[i] {
			v := w.literal(con.Text)
			line := jen.Id(n.local(con.Name)).Op(":=").Add(w.float()).Call(v.code)
			if rendered := fmt.Sprintf("%#v", v.code); rendered != con.Text {
				line.Comment(con.Text)
			}
			body = append(body, line)
		}
	}
	for _, i := range st.deps.ElemLets {
		body = append(body, stepLines(k.Steps[i], n, w)...)
	}
	for _, t := range st.targets {
		v := w.expr(t.expr, true)
		code := v.code
		if v.konst {
			code = jen.Add(w.float()).Call(code)
		}
		body = append(body, jen.Comment(t.name+" = "+k.FormatExpr(t.expr)))
		body = append(body, w.hoisted...)
		w.hoisted = nil
		body = append(body, jen.Id(t.name).Op("=").Add(code))
	}
	if w.err != nil {
		return w.err
	}
	body = append(body, jen.Return())
	what := "the terms of its reductions for one element"
	switch {
	case st.row:
		what = "the per-row values available after pass " + fmt.Sprint(st.level)
	case st.level == k.Rows.Passes+1:
		what = "the outputs of one element"
	}
	mode := "in float64"
	if c != dtype.Invalid {
		mode = "in compute type " + c.String()
	}
	f.Comment(fmt.Sprintf("%s computes %s (pass %d of %s), %s.", st.name+modeName(c), what, st.level, k.Name, mode))
	f.Func().Id(st.name + modeName(c)).Params(params...).Params(results...).Block(body...)
	return nil
}

// rowReferenceFile writes Reference, Reference64 and their stage functions.
func rowReferenceFile(k *ir.Kernel, n *names, opts Options) (*jen.File, error) {
	f := newFile(opts, k.SpecPath)
	rowRegisterCPU(f, k, n)
	rowReferenceMethod(f, k, n)
	rowReference64Method(f, k, n)
	modes := append(k.ComputeTypes(), dtype.Invalid)
	for _, c := range modes {
		for _, st := range rowStages(k, n) {
			if err := rowStageFunc(f, k, n, st, c); err != nil {
				return nil, err
			}
		}
	}
	return f, nil
}

func rowRegisterCPU(f *jen.File, k *ir.Kernel, n *names) {
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
	f.Add(comment(fmt.Sprintf("init registers %s's CPU reference with its descriptor, for RunCPU and RunCPU64Rows.", k.Name)))
	f.Func().Id("init").Params().Block(
		jen.Id(n.desc).Dot("CPU").Op("=").Func().Params(jen.Id("ts").Index().Op("*").Add(rt("Tensor")), jen.Id("ps").Index().Float64()).Error().Block(
			jen.Return(jen.Id(n.exported).Dot("Reference").Call(append(tensors, params...)...))),
		jen.Id(n.desc).Dot("CPU64Rows").Op("=").Func().Params(jen.Id("cols").Int(), jen.Id("ins").Index().Index().Float64(), jen.Id("ps").Index().Float64()).
			Params(jen.Index().Index().Float64(), jen.Error()).Block(
			jen.List(append(vals, jen.Err())...).Op(":=").Id(n.exported).Dot("Reference64").Call(append(append([]jen.Code{jen.Id("cols")}, inputs...), params...)...),
			jen.Return(jen.Index().Index().Float64().Values(vals...), jen.Err())),
	)
}

// rowIO says how the row loops read inputs and write outputs in one mode.
type rowIO struct {
	mode    dtype.DType
	storage *dtype.DType // the variant's dtype, when known
	load    func(b ir.Binding, idx jen.Code) jen.Code
	store   func(b ir.Binding, idx, val jen.Code) jen.Code
	acc     func(red ir.Reduction) jen.Code // a new accumulator
	add     func(acc, j, v jen.Code) jen.Code
	param   func(p ir.Field) jen.Code
}

var rowOps = map[string]string{"row_sum": "RowSum", "row_mean": "RowMean", "row_max": "RowMax", "row_min": "RowMin"}

// rowLoops writes the rows of every segment: per row, the passes in order.
func rowLoops(k *ir.Kernel, n *names, io rowIO) []jen.Code {
	var out []jen.Code
	for s := 0; s < k.NumSegments(); s++ {
		body := []jen.Code{jen.Id("kgenBase").Op(":=").Id("kgenRow").Op("*").Id("cols")}
		body = append(body, rowBodyFor(k, n, io, s)...)
		out = append(out, jen.For(jen.Id("kgenRow").Op(":=").Lit(0), jen.Id("kgenRow").Op("<").Id("kgenRows").Index(jen.Lit(s)), jen.Id("kgenRow").Op("++")).Block(body...))
	}
	return out
}

// rowBodyGen holds what every part of one segment's row body needs, so the
// helpers below need no long parameter lists.
type rowBodyGen struct {
	k       *ir.Kernel
	n       *names
	io      rowIO
	ins     []ir.Binding
	outs    []ir.Binding
	mode    string          // suffix of the stage functions of io.mode
	usedRow map[string]bool // per-row lets a later stage takes
}

// rowBodyFor writes the body of one row of segment seg: its stages in order.
func rowBodyFor(k *ir.Kernel, n *names, io rowIO, seg int) []jen.Code {
	stages := rowStages(k, n)
	g := &rowBodyGen{
		k: k, n: n, io: io,
		ins:     k.SegmentBindings(seg, ir.Input),
		outs:    k.SegmentBindings(seg, ir.Output),
		mode:    modeName(io.mode),
		usedRow: usedRowLets(k, n, stages),
	}
	var body []jen.Code
	for _, st := range stages {
		switch {
		case st.row:
			body = append(body, g.rowCall(st))
		case st.level <= k.Rows.Passes:
			body = append(body, g.reducePass(st)...)
		default:
			body = append(body, g.writePass(st)...)
		}
	}
	return body
}

// usedRowLets marks the per-row lets some stage takes, so unused row
// results can be discarded with _.
func usedRowLets(k *ir.Kernel, n *names, stages []rowStage) map[string]bool {
	usedRow := map[string]bool{}
	for _, st := range stages {
		for _, i := range st.deps.RowLets {
			usedRow[n.local(k.Steps[i].Name)] = true
		}
	}
	return usedRow
}

// valueArgs is the argument list of a stage call, each value named as this
// mode holds it.
func (g *rowBodyGen) valueArgs(st rowStage) []jen.Code {
	names, kinds := stageValueArgs(g.k, st)
	var out []jen.Code
	for i, name := range names {
		switch kinds[i] {
		case "input":
			out = append(out, jen.Id("kgen_v_"+name))
		case "param":
			for _, p := range g.k.Params() {
				if p.Name == name {
					out = append(out, g.io.param(p))
				}
			}
		case "reduction":
			out = append(out, jen.Id(name))
		default:
			out = append(out, jen.Id(g.n.local(name)))
		}
	}
	return out
}

// loads reads, at column kgenJ, every input the stage takes.
func (g *rowBodyGen) loads(st rowStage) []jen.Code {
	var out []jen.Code
	for i, b := range g.ins {
		if !st.deps.Inputs[i] {
			continue
		}
		idx := jen.Id("kgenBase").Op("+").Id("kgenJ")
		if b.Row {
			idx = jen.Id("kgenJ")
		}
		out = append(out, jen.Id("kgen_v_"+rowSpecName(g.k, b)).Op(":=").Add(g.io.load(b, idx)))
	}
	return out
}

// stageResults names the targets a stage call returns.
func stageResults(st rowStage) []jen.Code {
	var out []jen.Code
	for _, t := range st.targets {
		out = append(out, jen.Id(t.name))
	}
	return out
}

// rowColLoop wraps stmts in the loop over the columns of a row.
func rowColLoop(stmts ...jen.Code) jen.Code {
	return jen.For(jen.Id("kgenJ").Op(":=").Lit(0), jen.Id("kgenJ").Op("<").Id("cols"), jen.Id("kgenJ").Op("++")).Block(stmts...)
}

// rowCall calls a per-row stage, keeping only the results a later stage uses.
func (g *rowBodyGen) rowCall(st rowStage) jen.Code {
	var ids []jen.Code
	op := "="
	for _, t := range st.targets {
		if g.usedRow[t.name] {
			ids, op = append(ids, jen.Id(t.name)), ":="
		} else {
			ids = append(ids, jen.Id("_"))
		}
	}
	return jen.List(ids...).Op(op).Id(st.name + g.mode).Call(g.valueArgs(st)...)
}

// reducePass writes one reduction pass: accumulators, the column loop that
// feeds them, and the row values they yield.
func (g *rowBodyGen) reducePass(st rowStage) []jen.Code {
	k, io := g.k, g.io
	body := []jen.Code{jen.Comment(fmt.Sprintf("Pass %d.", st.level))}
	var adds []jen.Code
	for i, red := range k.Rows.Reductions {
		if red.Level != st.level {
			continue
		}
		a := fmt.Sprintf("kgen_a%d", i)
		body = append(body, jen.Id(a).Op(":=").Add(io.acc(red)).Comment(red.Func+"("+k.FormatExpr(red.Arg)+")"))
		adds = append(adds, io.add(jen.Id(a), jen.Id("kgenJ"), jen.Id(fmt.Sprintf("kgen_t%d", i))))
	}
	stmts := g.loads(st)
	stmts = append(stmts, jen.List(stageResults(st)...).Op(":=").Id(st.name+g.mode).Call(g.valueArgs(st)...))
	stmts = append(stmts, adds...)
	body = append(body, rowColLoop(stmts...))
	for i, red := range k.Rows.Reductions {
		if red.Level != st.level {
			continue
		}
		res := jen.Id(fmt.Sprintf("kgen_a%d", i)).Dot("Result").Call(jen.Id("cols"))
		if io.mode == dtype.BF16 || io.mode == dtype.F16 {
			res = roundTo(io.mode, res)
		}
		body = append(body, jen.Id(ir.ReductionName(i)).Op(":=").Add(res))
	}
	return body
}

// writePass writes the last pass, which computes and stores the outputs.
func (g *rowBodyGen) writePass(st rowStage) []jen.Code {
	stmts := g.loads(st)
	var vals []jen.Code
	for i := range st.targets {
		vals = append(vals, jen.Id(fmt.Sprintf("val%d", i)))
	}
	stmts = append(stmts, jen.List(vals...).Op(":=").Id(st.name+g.mode).Call(g.valueArgs(st)...))
	for i, o := range g.outs {
		stmts = append(stmts, g.io.store(o, jen.Id("kgenBase").Op("+").Id("kgenJ"), vals[i]))
	}
	return []jen.Code{jen.Comment(fmt.Sprintf("Pass %d: write.", st.level)), rowColLoop(stmts...)}
}

// rowReferenceMethod writes K.Reference for a rowwise kernel.
func rowReferenceMethod(f *jen.File, k *ir.Kernel, n *names) {
	f.Add(comment(
		fmt.Sprintf("Reference computes %s on the CPU: the fallback path where Select refuses, and the", k.Name),
		"oracle of parity tests. It checks the tensors exactly as Run does and runs the kernel's passes",
		"row by row: inputs converted to the compute type on load, every operation rounded to it,",
		"reductions accumulated in float32 in the kernel's order (kgenrt.RowAcc), outputs rounded to",
		"nearest even in their storage dtype.",
	))
	first := jen.Id("v")
	if len(k.ComputeTypes()) == 1 {
		first = jen.Id("_")
	}
	body := []jen.Code{
		jen.List(first, jen.Id("kgenRows"), jen.Id("cols"), jen.Err()).Op(":=").Id(n.desc).Dot("CheckRows").Call(tensorArgs(k, n)...),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
	}
	// Only the reductions' accumulators read the lane count: declared
	// without one (a rowwise kernel that only broadcasts a row input), it
	// would be an unused variable and the package would not compile.
	if len(k.Rows.Reductions) > 0 {
		body = append(body, jen.Id("kgenLanes").Op(":=").Add(rt("LanesPerRow")).Call(jen.Id("cols"), jen.Lit(k.Threadgroup)))
	}
	ioFor := func(c dtype.DType, storage *dtype.DType) rowIO {
		return rowIO{
			mode: c, storage: storage,
			load: func(b ir.Binding, idx jen.Code) jen.Code {
				return rowLoad(k, n, b, c, storage, idx)
			},
			store: func(b ir.Binding, idx, val jen.Code) jen.Code {
				return jen.Id(n.local(b.Name)).Dot("SetFloat32").Call(idx, val)
			},
			acc: func(red ir.Reduction) jen.Code {
				return rt("NewRowAcc").Call(rt(rowOps[red.Func]), jen.Id("kgenLanes"))
			},
			add: func(acc, j, v jen.Code) jen.Code {
				return jen.Add(acc).Dot("Add").Call(j, v)
			},
			param: func(p ir.Field) jen.Code { return convertParam(p, n, c) },
		}
	}
	if types := k.ComputeTypes(); len(types) == 1 {
		body = append(body, rowLoops(k, n, ioFor(types[0], nil))...)
	} else {
		var cases []jen.Code
		for _, v := range k.Variants {
			d := v.DType
			cases = append(cases, jen.Case(rtType(d)).Block(rowLoops(k, n, ioFor(d, &d))...))
		}
		cases = append(cases, jen.Default().Block(jen.Return(
			jen.Qual("fmt", "Errorf").Call(jen.Lit("kgen: kernel "+k.Name+": no CPU reference for dtype %v"), jen.Id("v").Dot("DType")))))
		body = append(body, jen.Switch(jen.Id("v").Dot("DType")).Block(cases...))
	}
	body = append(body, jen.Return(jen.Nil()))
	f.Func().Params(jen.Id(n.typ)).Id("Reference").Params(launchParams(k, n)...).Error().Block(body...)
}

// rowLoad reads element idx of an input tensor in compute type c.
func rowLoad(k *ir.Kernel, n *names, b ir.Binding, c dtype.DType, storage *dtype.DType, idx jen.Code) jen.Code {
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

// rowReference64Method writes K.Reference64(cols, inputs..., params...).
func rowReference64Method(f *jen.File, k *ir.Kernel, n *names) {
	f.Add(comment(
		fmt.Sprintf("Reference64 evaluates %s's formulas in float64 with no rounding anywhere, row by", k.Name),
		"row through the same passes: the ideal values parity tolerances are measured against.",
		"Each input holds whole rows of cols values (a row vector: cols values); the outputs",
		"come back the same way.",
	))
	params := []param{{"cols", jen.Int(), "int"}}
	var results []param
	var lens, nils, rets []jen.Code
	for _, b := range k.BindingsOf(ir.Input) {
		id := n.local(b.Name)
		params = append(params, param{id, jen.Index().Float64(), "[]float64"})
		lens = append(lens, jen.Len(jen.Id(id)))
	}
	for _, p := range k.Params() {
		params = append(params, param{n.local(p.Name), goParamType(p.Type), p.Type.String()})
	}
	var makes []jen.Code
	for _, b := range k.BindingsOf(ir.Output) {
		id := n.local(b.Name)
		results = append(results, param{id, jen.Index().Float64(), "[]float64"})
		nils = append(nils, jen.Nil())
		rets = append(rets, jen.Id(id))
		makes = append(makes, jen.Id(id).Op("=").Make(jen.Index().Float64(), jen.Id("kgenRows").Index(jen.Lit(b.Segment)).Op("*").Id("cols")))
	}
	results = append(results, param{"err", jen.Error(), "error"})
	io := rowIO{
		mode: dtype.Invalid,
		load: func(b ir.Binding, idx jen.Code) jen.Code { return jen.Id(n.local(b.Name)).Index(idx) },
		store: func(b ir.Binding, idx, val jen.Code) jen.Code {
			return jen.Id(n.local(b.Name)).Index(idx).Op("=").Add(val)
		},
		acc: func(red ir.Reduction) jen.Code { return rt("NewRowAcc64").Call(rt(rowOps[red.Func])) },
		add: func(acc, _, v jen.Code) jen.Code { return jen.Add(acc).Dot("Add").Call(v) },
		param: func(p ir.Field) jen.Code {
			return jen.Float64().Call(jen.Id(n.local(p.Name)))
		},
	}
	body := []jen.Code{
		jen.List(jen.Id("kgenRows"), jen.Err()).Op(":=").Id(n.desc).Dot("RowsOf64").Call(append([]jen.Code{jen.Id("cols")}, lens...)...),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(append(nils, jen.Err())...)),
	}
	body = append(body, makes...)
	body = append(body, rowLoops(k, n, io)...)
	body = append(body, jen.Return(append(rets, jen.Nil())...))
	f.Func().Params(jen.Id(n.typ)).Id("Reference64").Params(grouped(params)...).Params(grouped(results)...).Block(body...)
}

// rowThreads is the descriptor's Threads entry: the threads per group of a
// rowwise kernel (an empty statement for elementwise kernels).
func rowThreads(k *ir.Kernel) jen.Code {
	if k.Rows == nil {
		return jen.Null()
	}
	return item(field("Threads", jen.Lit(k.Threadgroup)))
}

// rowDispatchDoc writes the dispatch and pass schedule of a rowwise kernel
// into its inventory.md section.
func rowDispatchDoc(b *strings.Builder, ik *ir.Kernel, k inventory.Kernel) {
	fmt.Fprintf(b, "- dispatch: dispatchThreads, grid (`%s`), threadgroup (%d, 1, 1); `rows_per_group` = %d / lanes per row, "+
		"lanes per row = the smallest power of two from 32 to %d with 4 × lanes ≥ cols (`kgenrt.RowsPerGroup`): "+
		"cols 64 → 8 rows of 32 lanes per group, cols ≥ %d → one row per group\n",
		strings.Join(k.Dispatch.Grid[:], "`, `"), ik.Threadgroup, ik.Threadgroup, ik.Threadgroup, 4*ik.Threadgroup/2+1)
	if len(ik.Rows.Cached) > 0 {
		fmt.Fprintf(b, "- row cache: %d value(s) per lane and cached input in registers: rows of up to %d columns are read from device memory once\n",
			ik.Rows.CachePerLane, ik.Rows.CachePerLane*ik.Threadgroup)
	}
	for _, p := range k.Passes {
		fmt.Fprintf(b, "- %s\n", p)
	}
	b.WriteString("\n")
}
