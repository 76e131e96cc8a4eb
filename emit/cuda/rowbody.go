package cuda

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// rowWriter accumulates the lines of a rowwise kernel body and the state its
// parts share, so each part can be written by a short method.
type rowWriter struct {
	k      *ir.Kernel
	r      *ir.Rows
	lines  []string
	sts    []ir.Stage // the kernel's stages, in order
	si     int        // index of the next stage to call
	cached bool       // some inputs are cached in registers
	vector bool       // every tensor is stored in T: the 16-byte vector paths exist
}

// elemBody writes one element's work inside a pass loop at indent ind; vec
// says whether it is inside the vector path (kgen_e indexes the vector).
type elemBody func(ind string, vec bool)

// add appends one formatted line to the body.
func (w *rowWriter) add(format string, a ...any) {
	w.lines = append(w.lines, fmt.Sprintf(format, a...))
}

// rowBody writes the kernel body (the template wraps it in the templated
// __device__ function).
func rowBody(k *ir.Kernel) []string {
	w := &rowWriter{
		k:      k,
		r:      k.Rows(),
		sts:    k.Stages(),
		cached: len(k.Rows().Cached) > 0,
		vector: allStoredInT(k),
	}
	w.threadGeometry()
	rows, group := "args.rows", "blockIdx.x"
	if len(w.k.Segments) > 0 {
		w.selectSegment()
		w.segmentPointers()
		rows, group = "kgen_rows", "kgen_group"
	}
	w.rowGeometry(rows, group)
	w.cacheDecls()
	w.paramDecls()
	if w.vector {
		w.vectorDecls()
	}
	w.rowStage()
	for p := 1; p <= w.r.Passes; p++ {
		w.reducePass(p)
	}
	w.writePass()
	return w.lines
}

// allStoredInT reports whether every tensor is stored in T, the condition for
// the 16-byte vector paths.
func allStoredInT(k *ir.Kernel) bool {
	for _, bd := range k.Bindings {
		if bd.Role != ir.Args && bd.DType != dtype.Invalid {
			return false
		}
	}
	return true
}

// threadGeometry declares the compute type, the block size, the warp
// partials and where this thread sits in its warp and row team.
func (w *rowWriter) threadGeometry() {
	compute := "T"
	if w.k.Compute != dtype.Invalid {
		compute = cudaNames[w.k.Compute]
	}
	w.add("using C = %s;", compute)
	w.add("constexpr unsigned int kThreads = %d;", w.k.Threadgroup)
	if len(w.r.Reductions) > 0 {
		w.add("__shared__ float kgen_part[kThreads / 32]; // one partial per warp")
	}
	w.add("const unsigned int kgen_tid = threadIdx.x;")
	w.add("const unsigned int kgen_simd_lane = kgen_tid %% 32;")
	w.add("const unsigned int kgen_simd = kgen_tid / 32;")
	w.add("const unsigned int kgen_rpg = args.rows_per_group;")
	w.add("const unsigned int kgen_width = kThreads / kgen_rpg; // lanes per row")
	w.add("const unsigned int kgen_team = kgen_tid / kgen_width;")
	w.add("const unsigned int kgen_lane = kgen_tid %% kgen_width;")
}

// selectSegment maps the block index to its segment and its block within
// that segment, segment after segment.
func (w *rowWriter) selectSegment() {
	segs := w.k.Segments
	w.add("// Segments: blocks [0, ceildiv(%s_rows, rows_per_group)) work on %s, the next ones on %s, and so on.", segs[0], segs[0], segs[1])
	w.add("unsigned int kgen_group = blockIdx.x;")
	w.add("unsigned int kgen_seg = 0;")
	w.add("unsigned int kgen_rows = args.%s_rows;", segs[0])
	for s := 0; s < len(segs)-1; s++ {
		w.add("if (kgen_seg == %d && kgen_group >= (kgen_rows + kgen_rpg - 1) / kgen_rpg) {", s)
		w.add("    kgen_group -= (kgen_rows + kgen_rpg - 1) / kgen_rpg;")
		w.add("    kgen_seg = %d;", s+1)
		w.add("    kgen_rows = args.%s_rows;", segs[s+1])
		w.add("}")
	}
}

// segmentPointers binds each input and output's formula name to the selected
// segment's tensor, so the passes read the same names in every segment.
func (w *rowWriter) segmentPointers() {
	k, segs := w.k, w.k.Segments
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
			w.add("%s%s* __restrict__ %s = %s;", qual, elemType(bd.DType), k.FormulaName(bd), sel)
		}
	}
}

// rowGeometry declares the team's row, its column count (0 past the last
// row) and the row's offset; rows and group name the segment's row count and
// block index.
func (w *rowWriter) rowGeometry(rows, group string) {
	w.add("const unsigned int kgen_row = %s * kgen_rpg + kgen_team;", group)
	w.add("// Teams past the last row do no element work but join every barrier.")
	w.add("const unsigned int kgen_cols = kgen_row < %s ? args.cols : 0;", rows)
	w.add("const unsigned long long kgen_base = (unsigned long long)kgen_row * args.cols;")
}

// cacheDecls declares the per-lane register caches of the cached inputs and
// whether the row fits them.
func (w *rowWriter) cacheDecls() {
	if !w.cached {
		return
	}
	w.add("constexpr unsigned int kCache = %d; // cached values per lane and input", w.r.CachePerLane)
	w.add("const bool kgen_cached = args.cols <= kCache * kgen_width;")
	for _, i := range w.r.Cached {
		w.add("C kgen_c_%s[kCache];", inputSpecName(w.k, i))
	}
}

// paramDecls converts the scalar parameters to C once, up front.
func (w *rowWriter) paramDecls() {
	for _, p := range w.k.Params() {
		w.add("const C %s = kgen_cvt<C>(args.%s);", p.Name, p.Name)
	}
}

// vectorDecls declares the vector width and whether this launch may take the
// 16-byte vector path (and its cached variant).
func (w *rowWriter) vectorDecls() {
	w.add("// 16-byte vectors when every row starts 16-byte aligned (cols a multiple of kV, aligned pointers).")
	w.add("constexpr unsigned int kV = 16 / sizeof(T);")
	var ors []string
	for _, bd := range w.k.Bindings {
		if bd.Role != ir.Args {
			ors = append(ors, fmt.Sprintf("reinterpret_cast<unsigned long long>(%s)", bd.Name))
		}
	}
	w.add("const bool kgen_vec = args.cols %% kV == 0 && ((%s) & 15) == 0;", strings.Join(ors, " | "))
	if w.cached {
		w.add("constexpr unsigned int kSlots = kCache / kV; // cached vectors per lane and input")
		w.add("const bool kgen_vcached = args.cols <= kSlots * kV * kgen_width;")
	}
}

// stageCall returns the call of stage st with extra appended to its
// arguments; element stages read inputs through their kgen_v_ values.
func (w *rowWriter) stageCall(st ir.Stage, extra []string) string {
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

// rowStage calls the next stage when it is a row-value stage (one call per
// row, between passes), declaring its targets first.
func (w *rowWriter) rowStage() {
	if w.si >= len(w.sts) || w.sts[w.si].Kind != ir.StageRowLets {
		return
	}
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
	w.add("%s", w.stageCall(st, outs))
	w.si++
}

// reducePass writes reduction pass p: its accumulators, the element loop
// that feeds them, the team reductions and the row stage that follows.
func (w *rowWriter) reducePass(p int) {
	st := w.sts[w.si]
	w.si++
	w.add("// Pass %d.", p)
	accs, terms := w.accumulators(p)
	w.loops(p, func(ind string, vec bool) {
		w.add("%sC %s;", ind, strings.Join(terms, ", "))
		w.add("%s%s", ind, w.stageCall(st, terms))
		for j, i := range redIndices(w.r, p) {
			switch reduceOp(w.r.Reductions[i].Op.Func()) {
			case "sum":
				w.add("%s%s += kgen_f(%s);", ind, accs[j], terms[j])
			case "max":
				w.add("%s%s = fmaxf(%s, kgen_f(%s));", ind, accs[j], accs[j], terms[j])
			case "min":
				w.add("%s%s = fminf(%s, kgen_f(%s));", ind, accs[j], accs[j], terms[j])
			}
		}
	})
	w.teamReductions(p)
	w.rowStage()
}

// accumulators declares pass p's per-lane float accumulators at their
// identity and returns their names and the names of the per-element terms.
func (w *rowWriter) accumulators(p int) (accs, terms []string) {
	for i, red := range w.r.Reductions {
		if red.Level != p {
			continue
		}
		init := "0.0f"
		switch reduceOp(red.Op.Func()) {
		case "max":
			init = "__int_as_float(0xff800000)"
		case "min":
			init = "__int_as_float(0x7f800000)"
		}
		w.add("float kgen_a%d = %s; // %s(%s)", i, init, red.Op.Func(), w.k.FormatExpr(red.Arg))
		accs = append(accs, fmt.Sprintf("kgen_a%d", i))
		terms = append(terms, fmt.Sprintf("kgen_t%d", i))
	}
	return accs, terms
}

// teamReductions combines pass p's lane accumulators across the row's team
// into the reduction values the later stages read.
func (w *rowWriter) teamReductions(p int) {
	for _, i := range redIndices(w.r, p) {
		red := w.r.Reductions[i]
		v := fmt.Sprintf("kgen_team_%s(kgen_a%d, kgen_part, kgen_width, kgen_team, kgen_simd, kgen_simd_lane)", reduceOp(red.Op.Func()), i)
		if red.Op.Func() == "row_mean" {
			v = fmt.Sprintf("%s / (float)args.cols", v)
		}
		w.add("const C %s = kgen_to<C>(%s);", ir.ReductionName(i), v)
	}
}

// writePass writes the last pass: the output stage per element and the
// stores of its results.
func (w *rowWriter) writePass() {
	st := w.sts[w.si]
	w.add("// Pass %d: write.", w.r.Passes+1)
	var outs []string
	for _, t := range st.Targets {
		outs = append(outs, "kgen_o_"+t.Name)
	}
	w.loops(w.r.Passes+1, func(ind string, vec bool) {
		w.add("%sC %s;", ind, strings.Join(outs, ", "))
		w.add("%s%s", ind, w.stageCall(st, outs))
		if vec {
			w.vectorStores(ind, outs)
		} else {
			w.scalarStores(ind, outs)
		}
	})
}

// vectorStores puts an element's outputs into the vectors that are stored
// whole after the element loop.
func (w *rowWriter) vectorStores(ind string, outs []string) {
	for i, o := range w.k.SegmentBindings(0, ir.Output) {
		w.add("%skgen_y_%s[kgen_e] = kgen_cvt<T>(%s);", ind, w.k.FormulaName(o), outs[i])
	}
}

// scalarStores writes an element's outputs straight to device memory.
func (w *rowWriter) scalarStores(ind string, outs []string) {
	for i, o := range w.k.SegmentBindings(0, ir.Output) {
		w.add("%s%s[kgen_base + kgen_j] = kgen_cvt<%s>(%s);", ind, w.k.FormulaName(o), elemType(o.DType), outs[i])
	}
}

// loops writes pass p's element loops: the vector and scalar paths, chosen at
// run time, when vectors are possible, else the scalar path alone.
func (w *rowWriter) loops(p int, body elemBody) {
	if !w.vector {
		w.scalarLoops(p, body)
		return
	}
	w.add("if (kgen_vec) {")
	n0 := len(w.lines)
	w.vecLoops(p, body)
	w.indentFrom(n0)
	w.add("} else {")
	n0 = len(w.lines)
	w.scalarLoops(p, body)
	w.indentFrom(n0)
	w.add("}")
}

// indentFrom indents the lines from n0 on by one level, leaving pragmas at
// the start of their lines.
func (w *rowWriter) indentFrom(n0 int) {
	for i := n0; i < len(w.lines); i++ {
		if !strings.HasPrefix(w.lines[i], "#") {
			w.lines[i] = "    " + w.lines[i]
		}
	}
}

// cacheFills returns the cached inputs that pass p reads first, whose caches
// the pass fills.
func (w *rowWriter) cacheFills(p int) []int {
	var fill []int
	for _, i := range w.r.Reads[p-1] {
		if w.r.IsCached(i) && w.r.FirstRead(i, p) {
			fill = append(fill, i)
		}
	}
	return fill
}

// scalarLoops writes a pass's element loop: unrolled over the cache when the
// row fits it, else strided over the row.
func (w *rowWriter) scalarLoops(p int, body elemBody) {
	reads := w.r.Reads[p-1]
	if !w.cached {
		w.add("#pragma unroll 4")
		w.add("for (unsigned int kgen_j = kgen_lane; kgen_j < kgen_cols; kgen_j += kgen_width) {")
		w.loads("    ", reads, false)
		body("    ", false)
		w.add("}")
		return
	}
	w.add("if (kgen_cached) {")
	w.scalarFill(p)
	w.add("#pragma unroll")
	w.add("    for (unsigned int kgen_i = 0; kgen_i < kCache; ++kgen_i) {")
	w.add("        const unsigned int kgen_j = kgen_lane + kgen_i * kgen_width;")
	w.add("        if (kgen_j < kgen_cols) {")
	w.loads("            ", reads, true)
	body("            ", false)
	w.add("        }")
	w.add("    }")
	w.add("} else {")
	w.add("#pragma unroll 4")
	w.add("    for (unsigned int kgen_j = kgen_lane; kgen_j < kgen_cols; kgen_j += kgen_width) {")
	w.loads("        ", reads, false)
	body("        ", false)
	w.add("    }")
	w.add("}")
}

// scalarFill fills the caches pass p reads first before its element loop, so
// the loads are independent and all in flight at once.
func (w *rowWriter) scalarFill(p int) {
	fill := w.cacheFills(p)
	if len(fill) == 0 {
		return
	}
	w.add("    // Fill the cache first: independent guarded loads, all in flight at once.")
	w.add("#pragma unroll")
	w.add("    for (unsigned int kgen_i = 0; kgen_i < kCache; ++kgen_i) {")
	w.add("        const unsigned int kgen_j = kgen_lane + kgen_i * kgen_width;")
	w.add("        if (kgen_j < kgen_cols) {")
	for _, i := range fill {
		n := inputSpecName(w.k, i)
		w.add("            kgen_c_%s[kgen_i] = kgen_cvt<C>(%s[kgen_base + kgen_j]);", n, n)
	}
	w.add("        }")
	w.add("    }")
}

// loads writes an element's input reads in the scalar path; fromCache: the
// row fits the cache (the unrolled loop).
func (w *rowWriter) loads(ind string, reads []int, fromCache bool) {
	for _, i := range reads {
		in := w.k.SegmentBindings(0, ir.Input)[i]
		n := inputSpecName(w.k, i)
		switch {
		case in.IsRowVector():
			w.add("%sconst C kgen_v_%s = kgen_cvt<C>(__ldg(&%s[kgen_j]));", ind, n, n)
		case !fromCache || !w.r.IsCached(i):
			w.add("%sconst C kgen_v_%s = kgen_cvt<C>(%s[kgen_base + kgen_j]);", ind, n, n)
		default:
			w.add("%sconst C kgen_v_%s = kgen_c_%s[kgen_i];", ind, n, n)
		}
	}
}

// vecLoops writes a pass's loop over 16-byte vectors (kV elements of T):
// lane l takes vectors l, l + lanes, … of the row; over the cache slots
// when the row fits the cache, else strided over the row.
func (w *rowWriter) vecLoops(p int, body elemBody) {
	if !w.cached {
		w.add("#pragma unroll 4")
		w.add("for (unsigned int kgen_j0 = kgen_lane * kV; kgen_j0 < kgen_cols; kgen_j0 += kgen_width * kV) {")
		w.vecElems(p, "    ", false, body)
		w.add("}")
		return
	}
	w.add("if (kgen_vcached) {")
	w.vecFill(p)
	w.add("#pragma unroll")
	w.add("    for (unsigned int kgen_s = 0; kgen_s < kSlots; ++kgen_s) {")
	w.add("        const unsigned int kgen_j0 = (kgen_lane + kgen_s * kgen_width) * kV;")
	w.add("        if (kgen_j0 < kgen_cols) {")
	w.vecElems(p, "            ", true, body)
	w.add("        }")
	w.add("    }")
	w.add("} else {")
	w.add("#pragma unroll 4")
	w.add("    for (unsigned int kgen_j0 = kgen_lane * kV; kgen_j0 < kgen_cols; kgen_j0 += kgen_width * kV) {")
	w.vecElems(p, "        ", false, body)
	w.add("    }")
	w.add("}")
}

// vecFill fills the caches pass p reads first with 16-byte loads before its
// vector loop, so the loads are independent and all in flight at once.
func (w *rowWriter) vecFill(p int) {
	fill := w.cacheFills(p)
	if len(fill) == 0 {
		return
	}
	w.add("    // Fill the cache first: independent guarded 16-byte loads, all in flight at once.")
	w.add("#pragma unroll")
	w.add("    for (unsigned int kgen_s = 0; kgen_s < kSlots; ++kgen_s) {")
	w.add("        const unsigned int kgen_j0 = (kgen_lane + kgen_s * kgen_width) * kV;")
	w.add("        if (kgen_j0 < kgen_cols) {")
	for _, i := range fill {
		n := inputSpecName(w.k, i)
		w.add("            alignas(16) T kgen_w_%s[kV];", n)
		w.add("            *reinterpret_cast<uint4*>(kgen_w_%s) = *reinterpret_cast<const uint4*>(%s + kgen_base + kgen_j0);", n, n)
		w.add("#pragma unroll")
		w.add("            for (unsigned int kgen_e = 0; kgen_e < kV; ++kgen_e) {")
		w.add("                kgen_c_%s[kgen_s * kV + kgen_e] = kgen_cvt<C>(kgen_w_%s[kgen_e]);", n, n)
		w.add("            }")
	}
	w.add("        }")
	w.add("    }")
}

// vecElems writes the work on one vector of pass p at indent ind: its
// loads, the per-element loop around body and, in the write pass, the
// 16-byte output stores; fromCache: the row fits the cache.
func (w *rowWriter) vecElems(p int, ind string, fromCache bool, body elemBody) {
	reads := w.r.Reads[p-1]
	write := p == w.r.Passes+1
	w.vecLoads(ind, reads, fromCache)
	if write {
		for _, o := range w.k.SegmentBindings(0, ir.Output) {
			w.add("%salignas(16) T kgen_y_%s[kV];", ind, w.k.FormulaName(o))
		}
	}
	w.add("#pragma unroll")
	w.add("%sfor (unsigned int kgen_e = 0; kgen_e < kV; ++kgen_e) {", ind)
	for _, i := range reads {
		in := w.k.SegmentBindings(0, ir.Input)[i]
		n := inputSpecName(w.k, i)
		if fromCache && !in.IsRowVector() && w.r.IsCached(i) {
			w.add("%s    const C kgen_v_%s = kgen_c_%s[kgen_s * kV + kgen_e];", ind, n, n)
		} else {
			w.add("%s    const C kgen_v_%s = kgen_cvt<C>(kgen_w_%s[kgen_e]);", ind, n, n)
		}
	}
	body(ind+"    ", true)
	w.add("%s}", ind)
	if write {
		for _, o := range w.k.SegmentBindings(0, ir.Output) {
			n := w.k.FormulaName(o)
			w.add("%s*reinterpret_cast<uint4*>(%s + kgen_base + kgen_j0) = *reinterpret_cast<const uint4*>(kgen_y_%s);", ind, n, n)
		}
	}
}

// vecLoads loads, as whole 16-byte vectors, the inputs one vector of the
// pass reads from device memory (cached inputs come from the cache instead).
func (w *rowWriter) vecLoads(ind string, reads []int, fromCache bool) {
	for _, i := range reads {
		in := w.k.SegmentBindings(0, ir.Input)[i]
		n := inputSpecName(w.k, i)
		switch {
		case in.IsRowVector():
			w.add("%salignas(16) T kgen_w_%s[kV];", ind, n)
			w.add("%s*reinterpret_cast<uint4*>(kgen_w_%s) = __ldg(reinterpret_cast<const uint4*>(%s + kgen_j0));", ind, n, n)
		case !fromCache || !w.r.IsCached(i):
			w.add("%salignas(16) T kgen_w_%s[kV];", ind, n)
			w.add("%s*reinterpret_cast<uint4*>(kgen_w_%s) = *reinterpret_cast<const uint4*>(%s + kgen_base + kgen_j0);", ind, n, n)
		}
	}
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
