package cuda

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// The rowwise shape. The CUDA port runs the IR's pass schedule (the same
// passes, reductions, cached inputs and ir.Stage functions as the Metal port)
// in blocks of the spec's threadgroup; a row is worked on by a team of
// threadgroup / rows_per_group lanes (whole warps), ceildiv(rows,
// rows_per_group) blocks per segment. rows_per_group comes from the args
// struct: the CUDA port sets it with kgenrt.CUDARowsPerGroup (at most two
// 16-byte vectors per lane) rather than the Metal rule (4 values per lane),
// because the kernel loads 16-byte vectors: with the Metal rule a 1K-column
// bf16 row took a whole block with half its lanes idle, and too few bytes
// were in flight per SM. When cols is a multiple of the vector (kV = 16 /
// sizeof(T)) and every pointer is 16-byte aligned, lane l takes the row's
// vectors l, l + lanes, …; otherwise its elements l, l + lanes, …, as on
// Metal. Reductions accumulate in float per lane in that order, then across
// the warp with __shfl_xor_sync, then, when a row spans several warps, the
// warp partials in warp order through shared memory between two barriers.
// Cached inputs (ir.Rows.Cached) live in registers: when the row fits the
// cache, the pass that first reads an input fills the cache with
// independent guarded loads (all in flight at once), and every pass is a
// fully unrolled loop over the cache slots (constant indices, so the arrays
// stay in registers); wider rows take a loop that re-reads device memory.

// rowView is the flat data the rowwise template reads.
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
	ParamNames string
	CallArgs   string
	EntryNames string
	Funcs      []stageFunc
	Body       []string
	Instances  []instance
	Threads    int
	MinBlocks  int // __launch_bounds__'s minimum resident blocks: 1024 threads per SM, at most 64 registers each
	Reduce     []string
}

type stageFunc struct {
	Comment string
	Name    string
	Params  string
	Lines   []string
}

func emitRows(k *ir.Kernel, opts Options) ([]byte, error) {
	v := rowView{
		Header: opts.Header, Kernel: k.Name, SpecPath: k.SpecPath, Math: k.Math,
		ArgsStruct: k.Name + "_args", Threads: k.Threadgroup, MinBlocks: max(1, 1024/k.Threadgroup),
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
	v.Schedule = k.Schedule()
	for _, name := range preludeBlocks(k) {
		var block bytes.Buffer
		if err := kernelTemplate.ExecuteTemplate(&block, "prelude_"+name, nil); err != nil {
			return nil, fmt.Errorf("cuda prelude %s: %w", name, err)
		}
		v.Prelude = append(v.Prelude, strings.TrimSpace(block.String()))
	}
	v.Reduce = reduceHelpers(k)
	var names []string
	for _, b := range k.Bindings {
		names = append(names, b.Name)
		if b.Role == ir.Args {
			for _, f := range b.Fields {
				v.ArgsFields = append(v.ArgsFields, field{Type: cudaNames[f.Type], Name: f.Name})
			}
		}
	}
	v.Params = params(k, "T")
	v.ParamNames = strings.Join(names, ", ")
	v.CallArgs = strings.Join(names, ", ")
	for _, c := range k.ComputeTypes() {
		v.Funcs = append(v.Funcs, stageFuncs(k, c)...)
	}
	v.Body = rowBody(k)
	var entries []string
	for _, variant := range k.Variants {
		t := cudaNames[variant.DType]
		v.Instances = append(v.Instances, instance{HostName: variant.HostName, Type: t, Params: params(k, t)})
		entries = append(entries, variant.HostName)
	}
	v.EntryNames = strings.Join(entries, ", ")
	var buf bytes.Buffer
	if err := kernelTemplate.ExecuteTemplate(&buf, "rowwise.tmpl", v); err != nil {
		return nil, fmt.Errorf("cuda template for %s: %w", k.Name, err)
	}
	return tidy(buf.Bytes()), nil
}

func reduceHelpers(k *ir.Kernel) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range k.Rows.Reductions {
		op := reduceOp(r.Func)
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
	r := renderer{compute: c, d: dialectFor(k.Math)}
	ct := cudaNames[c]
	var out []stageFunc
	for _, st := range k.Stages() {
		var ps []string
		names, bools := k.StageArgs(st)
		for i, n := range names {
			t := ct
			if bools[i] {
				t = "bool"
			}
			ps = append(ps, t+" "+n)
		}
		for _, t := range st.Targets {
			ty := ct
			if t.Bool {
				ty = "bool"
			}
			ps = append(ps, ty+"& "+t.Name)
		}
		f := stageFunc{Comment: st.Comment, Name: st.Name, Params: strings.Join(ps, ", ")}
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

// rowBody writes the kernel body (the template wraps it in the templated
// __device__ function).
func rowBody(k *ir.Kernel) []string {
	r := k.Rows
	var b []string
	add := func(format string, a ...any) { b = append(b, fmt.Sprintf(format, a...)) }
	compute := "T"
	if k.Compute != dtype.Invalid {
		compute = cudaNames[k.Compute]
	}
	add("using C = %s;", compute)
	add("constexpr unsigned int kThreads = %d;", k.Threadgroup)
	if len(r.Reductions) > 0 {
		add("__shared__ float kgen_part[kThreads / 32]; // one partial per warp")
	}
	add("const unsigned int kgen_tid = threadIdx.x;")
	add("const unsigned int kgen_simd_lane = kgen_tid %% 32;")
	add("const unsigned int kgen_simd = kgen_tid / 32;")
	add("const unsigned int kgen_rpg = args.rows_per_group;")
	add("const unsigned int kgen_width = kThreads / kgen_rpg; // lanes per row")
	add("const unsigned int kgen_team = kgen_tid / kgen_width;")
	add("const unsigned int kgen_lane = kgen_tid %% kgen_width;")
	rows := "args.rows"
	group := "blockIdx.x"
	if segs := r.Segments; len(segs) > 0 {
		add("// Segments: blocks [0, ceildiv(%s_rows, rows_per_group)) work on %s, the next ones on %s, and so on.", segs[0], segs[0], segs[1])
		add("unsigned int kgen_group = blockIdx.x;")
		add("unsigned int kgen_seg = 0;")
		add("unsigned int kgen_rows = args.%s_rows;", segs[0])
		for s := 0; s < len(segs)-1; s++ {
			add("if (kgen_seg == %d && kgen_group >= (kgen_rows + kgen_rpg - 1) / kgen_rpg) {", s)
			add("    kgen_group -= (kgen_rows + kgen_rpg - 1) / kgen_rpg;")
			add("    kgen_seg = %d;", s+1)
			add("    kgen_rows = args.%s_rows;", segs[s+1])
			add("}")
		}
		for _, role := range []ir.Role{ir.Input, ir.Output} {
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
				qual := "const "
				if role == ir.Output {
					qual = ""
				}
				add("%s%s* __restrict__ %s = %s;", qual, elemType(bd.DType), k.FormulaName(bd), sel)
			}
		}
		rows, group = "kgen_rows", "kgen_group"
	}
	add("const unsigned int kgen_row = %s * kgen_rpg + kgen_team;", group)
	add("// Teams past the last row do no element work but join every barrier.")
	add("const unsigned int kgen_cols = kgen_row < %s ? args.cols : 0;", rows)
	add("const unsigned long long kgen_base = (unsigned long long)kgen_row * args.cols;")
	cached := len(r.Cached) > 0
	if cached {
		add("constexpr unsigned int kCache = %d; // cached values per lane and input", r.CachePerLane)
		add("const bool kgen_cached = args.cols <= kCache * kgen_width;")
		for _, i := range r.Cached {
			add("C kgen_c_%s[kCache];", inputSpecName(k, i))
		}
	}
	for _, p := range k.Params() {
		add("const C %s = kgen_cvt<C>(args.%s);", p.Name, p.Name)
	}
	sts := k.Stages()
	si := 0
	call := func(st ir.Stage, extra []string) string {
		names, _ := k.StageArgs(st)
		if !st.Row {
			for i, n := range names {
				if isInputName(k, n) {
					names[i] = "kgen_v_" + n
				}
			}
		}
		return fmt.Sprintf("%s(%s);", st.Name, strings.Join(append(names, extra...), ", "))
	}
	rowStage := func() {
		if si < len(sts) && sts[si].Row {
			st := sts[si]
			var outs []string
			for _, t := range st.Targets {
				ty := "C"
				if t.Bool {
					ty = "bool"
				}
				add("%s %s;", ty, t.Name)
				outs = append(outs, t.Name)
			}
			add("%s", call(st, outs))
			si++
		}
	}
	// loads writes an element's input reads for pass p; fromCache: the row
	// fits the cache (the unrolled loop).
	loads := func(ind string, p int, reads []int, fromCache bool) {
		for _, i := range reads {
			in := k.SegmentBindings(0, ir.Input)[i]
			n := inputSpecName(k, i)
			switch {
			case in.Row:
				add("%sconst C kgen_v_%s = kgen_cvt<C>(__ldg(&%s[kgen_j]));", ind, n, n)
			case !fromCache || !r.IsCached(i):
				add("%sconst C kgen_v_%s = kgen_cvt<C>(%s[kgen_base + kgen_j]);", ind, n, n)
			default:
				add("%sconst C kgen_v_%s = kgen_c_%s[kgen_i];", ind, n, n)
			}
		}
	}
	// loops writes a pass's element loop: unrolled over the cache when the
	// row fits it, else strided over the row.
	scalarLoops := func(p int, body func(ind string, vec bool)) {
		if cached {
			add("if (kgen_cached) {")
			var fill []int
			for _, i := range r.Reads[p-1] {
				if r.IsCached(i) && r.FirstRead(i, p) {
					fill = append(fill, i)
				}
			}
			if len(fill) > 0 {
				add("    // Fill the cache first: independent guarded loads, all in flight at once.")
				add("#pragma unroll")
				add("    for (unsigned int kgen_i = 0; kgen_i < kCache; ++kgen_i) {")
				add("        const unsigned int kgen_j = kgen_lane + kgen_i * kgen_width;")
				add("        if (kgen_j < kgen_cols) {")
				for _, i := range fill {
					n := inputSpecName(k, i)
					add("            kgen_c_%s[kgen_i] = kgen_cvt<C>(%s[kgen_base + kgen_j]);", n, n)
				}
				add("        }")
				add("    }")
			}
			add("#pragma unroll")
			add("    for (unsigned int kgen_i = 0; kgen_i < kCache; ++kgen_i) {")
			add("        const unsigned int kgen_j = kgen_lane + kgen_i * kgen_width;")
			add("        if (kgen_j < kgen_cols) {")
			loads("            ", p, r.Reads[p-1], true)
			body("            ", false)
			add("        }")
			add("    }")
			add("} else {")
			add("#pragma unroll 4")
			add("    for (unsigned int kgen_j = kgen_lane; kgen_j < kgen_cols; kgen_j += kgen_width) {")
			loads("        ", p, r.Reads[p-1], false)
			body("        ", false)
			add("    }")
			add("}")
			return
		}
		add("#pragma unroll 4")
		add("for (unsigned int kgen_j = kgen_lane; kgen_j < kgen_cols; kgen_j += kgen_width) {")
		loads("    ", p, r.Reads[p-1], false)
		body("    ", false)
		add("}")
	}
	// vecLoops writes a pass's loop over 16-byte vectors (kV elements of T):
	// lane l takes vectors l, l + lanes, … of the row; over the cache slots
	// when the row fits the cache, else strided over the row.
	vecLoops := func(p int, body func(ind string, vec bool)) {
		reads := r.Reads[p-1]
		outsOf := k.SegmentBindings(0, ir.Output)
		emit := func(ind string, fromCache bool) {
			for _, i := range reads {
				in := k.SegmentBindings(0, ir.Input)[i]
				n := inputSpecName(k, i)
				switch {
				case in.Row:
					add("%salignas(16) T kgen_w_%s[kV];", ind, n)
					add("%s*reinterpret_cast<uint4*>(kgen_w_%s) = __ldg(reinterpret_cast<const uint4*>(%s + kgen_j0));", ind, n, n)
				case !fromCache || !r.IsCached(i):
					add("%salignas(16) T kgen_w_%s[kV];", ind, n)
					add("%s*reinterpret_cast<uint4*>(kgen_w_%s) = *reinterpret_cast<const uint4*>(%s + kgen_base + kgen_j0);", ind, n, n)
				}
			}
			if p == r.Passes+1 {
				for _, o := range outsOf {
					add("%salignas(16) T kgen_y_%s[kV];", ind, k.FormulaName(o))
				}
			}
			add("#pragma unroll")
			add("%sfor (unsigned int kgen_e = 0; kgen_e < kV; ++kgen_e) {", ind)
			for _, i := range reads {
				in := k.SegmentBindings(0, ir.Input)[i]
				n := inputSpecName(k, i)
				if fromCache && !in.Row && r.IsCached(i) {
					add("%s    const C kgen_v_%s = kgen_c_%s[kgen_s * kV + kgen_e];", ind, n, n)
				} else {
					add("%s    const C kgen_v_%s = kgen_cvt<C>(kgen_w_%s[kgen_e]);", ind, n, n)
				}
			}
			body(ind+"    ", true)
			add("%s}", ind)
			if p == r.Passes+1 {
				for _, o := range outsOf {
					n := k.FormulaName(o)
					add("%s*reinterpret_cast<uint4*>(%s + kgen_base + kgen_j0) = *reinterpret_cast<const uint4*>(kgen_y_%s);", ind, n, n)
				}
			}
		}
		if cached {
			add("if (kgen_vcached) {")
			var fill []int
			for _, i := range reads {
				if r.IsCached(i) && r.FirstRead(i, p) {
					fill = append(fill, i)
				}
			}
			if len(fill) > 0 {
				add("    // Fill the cache first: independent guarded 16-byte loads, all in flight at once.")
				add("#pragma unroll")
				add("    for (unsigned int kgen_s = 0; kgen_s < kSlots; ++kgen_s) {")
				add("        const unsigned int kgen_j0 = (kgen_lane + kgen_s * kgen_width) * kV;")
				add("        if (kgen_j0 < kgen_cols) {")
				for _, i := range fill {
					n := inputSpecName(k, i)
					add("            alignas(16) T kgen_w_%s[kV];", n)
					add("            *reinterpret_cast<uint4*>(kgen_w_%s) = *reinterpret_cast<const uint4*>(%s + kgen_base + kgen_j0);", n, n)
					add("#pragma unroll")
					add("            for (unsigned int kgen_e = 0; kgen_e < kV; ++kgen_e) {")
					add("                kgen_c_%s[kgen_s * kV + kgen_e] = kgen_cvt<C>(kgen_w_%s[kgen_e]);", n, n)
					add("            }")
				}
				add("        }")
				add("    }")
			}
			add("#pragma unroll")
			add("    for (unsigned int kgen_s = 0; kgen_s < kSlots; ++kgen_s) {")
			add("        const unsigned int kgen_j0 = (kgen_lane + kgen_s * kgen_width) * kV;")
			add("        if (kgen_j0 < kgen_cols) {")
			emit("            ", true)
			add("        }")
			add("    }")
			add("} else {")
			add("#pragma unroll 4")
			add("    for (unsigned int kgen_j0 = kgen_lane * kV; kgen_j0 < kgen_cols; kgen_j0 += kgen_width * kV) {")
			emit("        ", false)
			add("    }")
			add("}")
			return
		}
		add("#pragma unroll 4")
		add("for (unsigned int kgen_j0 = kgen_lane * kV; kgen_j0 < kgen_cols; kgen_j0 += kgen_width * kV) {")
		emit("    ", false)
		add("}")
	}
	vector := true
	for _, bd := range k.Bindings {
		if bd.Role != ir.Args && bd.DType != dtype.Invalid {
			vector = false // 16-byte vectors of T only when every tensor is stored in T
		}
	}
	loops := func(p int, body func(ind string, vec bool)) {
		if !vector {
			scalarLoops(p, body)
			return
		}
		add("if (kgen_vec) {")
		n0 := len(b)
		vecLoops(p, body)
		for i := n0; i < len(b); i++ {
			if !strings.HasPrefix(b[i], "#") {
				b[i] = "    " + b[i]
			}
		}
		add("} else {")
		n0 = len(b)
		scalarLoops(p, body)
		for i := n0; i < len(b); i++ {
			if !strings.HasPrefix(b[i], "#") {
				b[i] = "    " + b[i]
			}
		}
		add("}")
	}
	if vector {
		add("// 16-byte vectors when every row starts 16-byte aligned (cols a multiple of kV, aligned pointers).")
		add("constexpr unsigned int kV = 16 / sizeof(T);")
		var ors []string
		for _, bd := range k.Bindings {
			if bd.Role != ir.Args {
				ors = append(ors, fmt.Sprintf("reinterpret_cast<unsigned long long>(%s)", bd.Name))
			}
		}
		add("const bool kgen_vec = args.cols %% kV == 0 && ((%s) & 15) == 0;", strings.Join(ors, " | "))
		if cached {
			add("constexpr unsigned int kSlots = kCache / kV; // cached vectors per lane and input")
			add("const bool kgen_vcached = args.cols <= kSlots * kV * kgen_width;")
		}
	}
	rowStage()
	for p := 1; p <= r.Passes; p++ {
		st := sts[si]
		si++
		add("// Pass %d.", p)
		var accs, terms []string
		for i, red := range r.Reductions {
			if red.Level != p {
				continue
			}
			init := "0.0f"
			switch reduceOp(red.Func) {
			case "max":
				init = "__int_as_float(0xff800000)"
			case "min":
				init = "__int_as_float(0x7f800000)"
			}
			add("float kgen_a%d = %s; // %s(%s)", i, init, red.Func, k.FormatExpr(red.Arg))
			accs = append(accs, fmt.Sprintf("kgen_a%d", i))
			terms = append(terms, fmt.Sprintf("kgen_t%d", i))
		}
		loops(p, func(ind string, vec bool) {
			add("%sC %s;", ind, strings.Join(terms, ", "))
			add("%s%s", ind, call(st, terms))
			for j, i := range redIndices(r, p) {
				switch reduceOp(r.Reductions[i].Func) {
				case "sum":
					add("%s%s += kgen_f(%s);", ind, accs[j], terms[j])
				case "max":
					add("%s%s = fmaxf(%s, kgen_f(%s));", ind, accs[j], accs[j], terms[j])
				case "min":
					add("%s%s = fminf(%s, kgen_f(%s));", ind, accs[j], accs[j], terms[j])
				}
			}
		})
		for _, i := range redIndices(r, p) {
			red := r.Reductions[i]
			v := fmt.Sprintf("kgen_team_%s(kgen_a%d, kgen_part, kgen_width, kgen_team, kgen_simd, kgen_simd_lane)", reduceOp(red.Func), i)
			if red.Func == "row_mean" {
				v = fmt.Sprintf("%s / (float)args.cols", v)
			}
			add("const C %s = kgen_to<C>(%s);", ir.ReductionName(i), v)
		}
		rowStage()
	}
	st := sts[si]
	add("// Pass %d: write.", r.Passes+1)
	var outs []string
	for _, t := range st.Targets {
		outs = append(outs, "kgen_o_"+t.Name)
	}
	loops(r.Passes+1, func(ind string, vec bool) {
		add("%sC %s;", ind, strings.Join(outs, ", "))
		add("%s%s", ind, call(st, outs))
		for i, o := range k.SegmentBindings(0, ir.Output) {
			if vec {
				add("%skgen_y_%s[kgen_e] = kgen_cvt<T>(%s);", ind, k.FormulaName(o), outs[i])
				continue
			}
			add("%s%s[kgen_base + kgen_j] = kgen_cvt<%s>(%s);", ind, k.FormulaName(o), elemType(o.DType), outs[i])
		}
	})
	return b
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

func isInputName(k *ir.Kernel, n string) bool {
	for _, b := range k.SegmentBindings(0, ir.Input) {
		if k.FormulaName(b) == n {
			return true
		}
	}
	return false
}
