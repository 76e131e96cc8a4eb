package msl

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// rowView is the flat data the rowwise template reads; every line of the
// kernel body is decided here.
type rowView struct {
	Header     string
	Kernel     string
	Doc        []string
	SpecPath   string
	Math       string
	Formulas   []string
	Schedule   []string
	Prelude    []string
	ArgsStruct string
	ArgsFields []field
	Params     []string
	Funcs      []stageFunc
	Body       []string
	Instances  []instance
	Threads    int
	Grid       string
	Reduce     []string // the team reduction helpers used: "sum", "max", "min"
}

// stageFunc is one inline function of per-element or per-row work.
type stageFunc struct {
	Comment string
	Name    string
	Params  string
	Lines   []string
}

// emitRows returns the .metal source of a rowwise kernel.
func emitRows(k *ir.Kernel, opts Options) ([]byte, error) {
	v := rowView{
		Header: opts.Header, Kernel: k.Name, SpecPath: k.SpecPath, Math: k.Math,
		ArgsStruct: k.Name + "_args", Threads: k.Threadgroup, Grid: strings.Join(k.Grid(ir.Metal), ", "),
	}
	if k.Doc != "" {
		v.Doc = strings.Split(strings.TrimSpace(k.Doc), "\n")
	}
	for _, c := range k.Constants {
		v.Formulas = append(v.Formulas, c.Name+" = "+c.Text+" (constant)")
	}
	for _, s := range k.Steps {
		v.Formulas = append(v.Formulas, s.Name+" = "+s.Source)
	}
	v.Schedule = k.Describe()
	for _, name := range preludeBlocks(k, rowExprs(k)...) {
		var block bytes.Buffer
		if err := kernelTemplate.ExecuteTemplate(&block, name, nil); err != nil {
			return nil, fmt.Errorf("msl prelude %s: %w", name, err)
		}
		v.Prelude = append(v.Prelude, strings.TrimSpace(block.String()))
	}
	v.Reduce = reduceHelpers(k)
	v.Params, _, _, v.ArgsFields = signature(k)
	v.Params = v.Params[:len(v.Params)-1] // no thread_position_in_grid
	v.Params = append(v.Params,
		"uint kgen_tid [[thread_index_in_threadgroup]]",
		"uint kgen_tg [[threadgroup_position_in_grid]]",
		"uint kgen_simd_lane [[thread_index_in_simdgroup]]",
		"uint kgen_simd [[simdgroup_index_in_threadgroup]]")
	for _, c := range k.ComputeTypes() {
		v.Funcs = append(v.Funcs, stageFuncs(k, c)...)
	}
	v.Body = rowBody(k)
	for _, variant := range k.Variants {
		v.Instances = append(v.Instances, instance{HostName: variant.HostName, Type: variant.DType.MSL()})
	}
	var buf bytes.Buffer
	if err := kernelTemplate.ExecuteTemplate(&buf, "rowwise.tmpl", v); err != nil {
		return nil, fmt.Errorf("msl template for %s: %w", k.Name, err)
	}
	return tidy(buf.Bytes()), nil
}

// rowExprs lists every expression of a rowwise kernel, reduction arguments
// included (the steps hold references in their place).
func rowExprs(k *ir.Kernel) []*ir.Expr {
	var out []*ir.Expr
	for _, r := range k.Rows().Reductions {
		out = append(out, r.Arg)
	}
	return out
}

func reduceHelpers(k *ir.Kernel) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range k.Rows().Reductions {
		op := reduceOp(r.Op.Func())
		if !seen[op] {
			seen[op] = true
			out = append(out, op)
		}
	}
	return out
}

// reduceOp is the combine of a reduction: sum (row_sum, row_mean), max, min.
func reduceOp(fn string) string {
	switch fn {
	case "row_max":
		return "max"
	case "row_min":
		return "min"
	}
	return "sum"
}

func stageFuncs(k *ir.Kernel, c dtype.DType) []stageFunc {
	r := renderer{compute: c, math: k.Math}
	ct := c.MSL()
	var out []stageFunc
	for _, st := range k.Stages() {
		var params []string
		names, bools := k.StageArgs(st)
		for i, n := range names {
			t := ct
			if bools[i] {
				t = "bool"
			}
			params = append(params, t+" "+n)
		}
		for _, t := range st.Targets {
			ty := ct
			if t.Bool {
				ty = "bool"
			}
			params = append(params, "thread "+ty+"& "+t.Name)
		}
		f := stageFunc{Comment: st.Comment, Name: st.Name, Params: strings.Join(params, ", ")}
		for i, con := range k.Constants {
			if st.Deps.Constants[i] {
				val, _ := dtype.Literal(con.Text, c)
				f.Lines = append(f.Lines, fmt.Sprintf("const %s %s = %s; // %s", ct, con.Name, r.number(val), con.Text))
			}
		}
		for _, i := range st.Deps.ElemLets {
			s := k.Steps[i]
			t := ct
			if s.Expr.Bool {
				t = "bool"
			}
			f.Lines = append(f.Lines, fmt.Sprintf("const %s %s = %s;", t, s.Name, r.expr(s.Expr)))
		}
		for _, t := range st.Targets {
			f.Lines = append(f.Lines, fmt.Sprintf("%s = %s;", t.Name, r.expr(t.Expr)))
		}
		out = append(out, f)
	}
	return out
}

// rowBodyWriter holds the state shared while the kernel body is written, so
// the helpers below need no long parameter lists.
type rowBodyWriter struct {
	k   *ir.Kernel
	r   *ir.Rows
	b   []string
	sts []ir.Stage
	si  int // index of the next stage to call
}

// rowLoop is the strided per-lane loop over the columns of a row.
const rowLoop = "for (uint kgen_i = 0, kgen_j = kgen_lane; kgen_j < kgen_cols; ++kgen_i, kgen_j += kgen_width) {"

// rowBody writes the kernel body.
func rowBody(k *ir.Kernel) []string {
	w := &rowBodyWriter{k: k, r: k.Rows(), sts: k.Stages()}
	w.preamble()
	rows, group := "args.rows", "kgen_tg"
	if len(w.k.Segments) > 0 {
		w.segments()
		rows, group = "kgen_rows", "kgen_group"
	}
	w.rowSetup(rows, group)
	w.rowStage()
	for p := 1; p <= w.r.Passes; p++ {
		w.reducePass(p)
		w.rowStage()
	}
	w.writePass()
	return w.b
}

// add appends one formatted line to the body.
func (w *rowBodyWriter) add(format string, a ...any) {
	w.b = append(w.b, fmt.Sprintf(format, a...))
}

// preamble declares the compute type, the team geometry and the scratch
// the team reductions need.
func (w *rowBodyWriter) preamble() {
	compute := "T"
	if w.k.Compute != dtype.Invalid {
		compute = w.k.Compute.MSL()
	}
	w.add("using C = %s;", compute)
	w.add("constexpr uint kThreads = %d;", w.k.Threadgroup)
	if len(w.r.Reductions) > 0 {
		w.add("threadgroup float kgen_part[kThreads / 32]; // one partial per simdgroup")
	}
	w.add("const uint kgen_rpg = args.rows_per_group;")
	w.add("const uint kgen_width = kThreads / kgen_rpg; // lanes per row")
	w.add("const uint kgen_team = kgen_tid / kgen_width;")
	w.add("const uint kgen_lane = kgen_tid %% kgen_width;")
}

// segments maps the threadgroup onto its segment and group within it, so
// one dispatch covers every segment in turn.
func (w *rowBodyWriter) segments() {
	segs := w.k.Segments
	w.add("// Segments: threadgroups [0, ceildiv(%s_rows, rows_per_group)) work on %s, the next ones on %s, and so on.", segs[0], segs[0], segs[1])
	w.add("uint kgen_group = kgen_tg;")
	w.add("uint kgen_seg = 0;")
	w.add("uint kgen_rows = args.%s_rows;", segs[0])
	for s := 0; s < len(segs)-1; s++ {
		w.add("if (kgen_seg == %d && kgen_group >= (kgen_rows + kgen_rpg - 1) / kgen_rpg) {", s)
		w.add("    kgen_group -= (kgen_rows + kgen_rpg - 1) / kgen_rpg;")
		w.add("    kgen_seg = %d;", s+1)
		w.add("    kgen_rows = args.%s_rows;", segs[s+1])
		w.add("}")
	}
	for _, role := range []ir.Role{ir.Input, ir.Output} {
		w.segmentPointers(role)
	}
}

// segmentPointers binds each formula name of role to the buffer of the
// segment this threadgroup works on.
func (w *rowBodyWriter) segmentPointers(role ir.Role) {
	k, segs := w.k, w.k.Segments
	for i, bd := range k.SegmentBindings(0, role) {
		sel := ""
		for s := len(segs) - 1; s >= 0; s-- {
			name := k.SegmentBindings(s, role)[i].Name
			if sel == "" {
				sel = name
			} else {
				sel = fmt.Sprintf("kgen_seg == %d ? %s : %s", s, name, sel)
			}
		}
		qual := "device const"
		if role == ir.Output {
			qual = "device"
		}
		w.add("%s %s* %s = %s;", qual, mslType(bd.DType), k.FormulaName(bd), sel)
	}
}

// rowSetup locates the team's row and declares the per-lane cache and the
// scalar parameters the stages read.
func (w *rowBodyWriter) rowSetup(rows, group string) {
	w.add("const uint kgen_row = %s * kgen_rpg + kgen_team;", group)
	w.add("// Teams past the last row do no element work but join every barrier.")
	w.add("const uint kgen_cols = kgen_row < %s ? args.cols : 0;", rows)
	w.add("const uint kgen_base = kgen_row * args.cols;")
	if len(w.r.Cached) > 0 {
		w.add("constexpr uint kCache = %d; // cached values per lane and input", w.r.CachePerLane)
		w.add("const bool kgen_cached = args.cols <= kCache * kgen_width;")
		for _, i := range w.r.Cached {
			w.add("C kgen_c_%s[kCache];", inputSpecName(w.k, i))
		}
	}
	for _, p := range w.k.Params() {
		w.add("const C %s = C(args.%s);", p.Name, p.Name)
	}
}

// call is the call of stage st; pass and write stages read the loaded
// kgen_v_ values in place of the inputs.
func (w *rowBodyWriter) call(st ir.Stage, extra []string) string {
	var names []string
	for _, a := range st.Args {
		if a.Kind == ir.ArgInput && st.Kind != ir.StageRowLets {
			names = append(names, "kgen_v_"+a.Name)
			continue
		}
		names = append(names, a.Name)
	}
	return fmt.Sprintf("%s(%s);", st.Name, strings.Join(append(names, extra...), ", "))
}

// rowStage calls the next stage if it is per-row work, declaring its targets.
func (w *rowBodyWriter) rowStage() {
	if w.si < len(w.sts) && w.sts[w.si].Kind == ir.StageRowLets {
		st := w.sts[w.si]
		var outs []string
		for _, t := range st.Targets {
			ty := "C"
			if t.Bool {
				ty = "bool"
			}
			w.add("%s %s;", ty, t.Name)
			outs = append(outs, t.Name)
		}
		w.add("%s", w.call(st, outs))
		w.si++
	}
}

// loads reads the inputs of pass p for column kgen_j, filling or using the
// per-lane cache where the input is cached.
func (w *rowBodyWriter) loads(p int, reads []int) {
	k, r := w.k, w.r
	for _, i := range reads {
		in := k.SegmentBindings(0, ir.Input)[i]
		n := inputSpecName(k, i)
		switch {
		case in.IsRowVector():
			w.add("    const C kgen_v_%s = C(%s[kgen_j]);", n, n)
		case !r.IsCached(i):
			w.add("    const C kgen_v_%s = C(%s[kgen_base + kgen_j]);", n, n)
		case r.FirstRead(i, p):
			w.add("    const C kgen_v_%s = C(%s[kgen_base + kgen_j]);", n, n)
			w.add("    if (kgen_cached) {")
			w.add("        kgen_c_%s[kgen_i] = kgen_v_%s;", n, n)
			w.add("    }")
		default:
			w.add("    const C kgen_v_%s = kgen_cached ? kgen_c_%s[kgen_i] : C(%s[kgen_base + kgen_j]);", n, n, n)
		}
	}
}

// reducePass writes reduction pass p: the per-lane accumulation loop, then
// the team reductions that turn the partials into row values.
func (w *rowBodyWriter) reducePass(p int) {
	st := w.sts[w.si]
	w.si++
	w.add("// Pass %d.", p)
	accs, terms := w.accumulators(p)
	w.add("%s", rowLoop)
	w.loads(p, w.r.Reads[p-1])
	w.add("    C %s;", strings.Join(terms, ", "))
	w.add("    %s", w.call(st, terms))
	for j, i := range redIndices(w.r, p) {
		switch reduceOp(w.r.Reductions[i].Op.Func()) {
		case "sum":
			w.add("    %s += float(%s);", accs[j], terms[j])
		case "max":
			w.add("    %s = metal::fmax(%s, float(%s));", accs[j], accs[j], terms[j])
		case "min":
			w.add("    %s = metal::fmin(%s, float(%s));", accs[j], accs[j], terms[j])
		}
	}
	w.add("}")
	for _, i := range redIndices(w.r, p) {
		red := w.r.Reductions[i]
		v := fmt.Sprintf("kgen_team_%s(kgen_a%d, kgen_part, kgen_width, kgen_team, kgen_simd, kgen_simd_lane)", reduceOp(red.Op.Func()), i)
		if red.Op.Func() == "row_mean" {
			v = fmt.Sprintf("%s / float(args.cols)", v)
		}
		w.add("const C %s = C(%s);", ir.ReductionName(i), v)
	}
}

// accumulators declares the identity-initialised accumulator of each
// reduction of pass p and returns the accumulator and term names.
func (w *rowBodyWriter) accumulators(p int) (accs, terms []string) {
	for i, red := range w.r.Reductions {
		if red.Level != p {
			continue
		}
		init := "0.0f"
		switch reduceOp(red.Op.Func()) {
		case "max":
			init = "-INFINITY"
		case "min":
			init = "INFINITY"
		}
		w.add("float kgen_a%d = %s; // %s(%s)", i, init, red.Op.Func(), w.k.FormatExpr(red.Arg))
		accs = append(accs, fmt.Sprintf("kgen_a%d", i))
		terms = append(terms, fmt.Sprintf("kgen_t%d", i))
	}
	return accs, terms
}

// writePass writes the final pass, which computes and stores the outputs.
func (w *rowBodyWriter) writePass() {
	k, r := w.k, w.r
	st := w.sts[w.si]
	w.add("// Pass %d: write.", r.Passes+1)
	w.add("%s", rowLoop)
	w.loads(r.Passes+1, r.Reads[r.Passes])
	var outs []string
	for _, t := range st.Targets {
		outs = append(outs, "kgen_o_"+t.Name)
	}
	w.add("    C %s;", strings.Join(outs, ", "))
	w.add("    %s", w.call(st, outs))
	for i, o := range k.SegmentBindings(0, ir.Output) {
		w.add("    %s[kgen_base + kgen_j] = %s(%s);", k.FormulaName(o), mslType(o.DType), outs[i])
	}
	w.add("}")
}

func redIndices(r *ir.Rows, p int) []int {
	var out []int
	for i, red := range r.Reductions {
		if red.Level == p {
			out = append(out, i)
		}
	}
	return out
}

func inputSpecName(k *ir.Kernel, i int) string {
	return k.FormulaName(k.SegmentBindings(0, ir.Input)[i])
}
