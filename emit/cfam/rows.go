package cfam

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// rows writes rowwise kernels: a team of lanes per row runs the IR's passes
// (ir.Rows): per pass an element loop feeding per-lane float accumulators,
// then team reductions, then the row stage of that level; the last pass
// writes the outputs. How a pass loops (caches, vector loads) is the
// dialect's RowLoops.
type rows struct{}

func (rows) describe(k *ir.Kernel, d *Dialect, v *view) {
	v.Computes = "Computes, per row, in the compute type (math: " + k.Math + ")"
	for _, c := range k.Constants {
		v.Formulas = append(v.Formulas, c.Name+" = "+c.Text+" (constant)")
	}
	for _, s := range k.Steps {
		v.Formulas = append(v.Formulas, s.Name+" = "+s.Source)
	}
	v.Schedule = k.Describe()
	// __launch_bounds__'s minimum resident blocks: 1024 threads per SM, at
	// most 64 registers each.
	v.MinBlocks = max(1, 1024/k.Threadgroup)
}

// helpers: the dialect's row helpers, then one team reduction per combine
// the reductions use.
func (rows) helpers(k *ir.Kernel, d *Dialect) []helper {
	var out []helper
	for _, h := range d.RowHelpers {
		out = append(out, helper{name: h})
	}
	out = append(append(out, teamHelpers(k.Rows(), d)...), topkHelpers(k.Rows(), d)...)
	return append(out, packedHelpers(k)...)
}

// teamData is a team reduction block's data: its combine, the dialect's
// wave, the partials' slots per simdgroup (ir.TeamSlots) and the value a
// lane without a partial folds in (Pad: the combine's identity; -0 for a
// sum, which leaves every value as it was, -0 included).
type teamData struct {
	Op, Wave, HalfWave, Pad string
	Slots                   int
}

// teamHelpers are the team reductions (kgen_team_<op>) r's reductions
// combine with, one per combine in order of first use.
func teamHelpers(r *ir.Rows, d *Dialect) []helper {
	seen := map[string]bool{}
	var out []helper
	for _, red := range r.Reductions {
		if op := red.Op.Combine(); !seen[op] {
			seen[op] = true
			pad := identity(d, red.Op)
			if red.Op.Sums() {
				pad = "-0.0f"
			}
			out = append(out, helper{"team_reduce", teamData{Op: op, Wave: d.Wave, HalfWave: d.HalfWave, Pad: pad, Slots: ir.TeamSlots}})
		}
	}
	return out
}

// teamCall is the team reduction of accumulator acc by op: every thread
// of the group calls it, with the group's partials (kgen_part) and the
// slot the previous reduction used (kgen_slot; ir.TeamSlots says why).
func teamCall(op ir.ReduceOp, acc, width, team, simd, lane string) string {
	return fmt.Sprintf("kgen_team_%s(%s, kgen_part, kgen_slot, %s, %s, %s, %s)", op.Combine(), acc, width, team, simd, lane)
}

// teamScratch declares the team reductions' partials, ir.TeamSlots per
// simdgroup of waves, and the slot in turn.
func teamScratch(w *Writer, d *Dialect, waves string) {
	w.P(d.Shared, " float kgen_part[", ir.TeamSlots, " * ", waves, "]; // the team reductions' partials: ", ir.TeamSlots, " slots per ", d.SimdGroup, ", used in turn")
	w.P(d.Uint, " kgen_slot = 0; // the slot the last team reduction used")
}

func (rows) threads(*ir.Kernel) []ThreadIndex {
	return []ThreadIndex{LocalID, GroupID, SimdLane, SimdID}
}

// rowWriter holds the state shared while a rowwise body is written.
type rowWriter struct {
	*Writer
	k   *ir.Kernel
	d   *Dialect
	r   *ir.Rows
	sts []ir.Stage // the kernel's stages, in order
	si  int        // index of the next stage to call
	// lets: the let-cached path's stages by pass (ir.Rows.CachedStage),
	// when the dialect keeps a let cache.
	lets map[int]ir.Stage
	rows string // the row count of the team's segment
	// last bounds the team's row: rows, or in a batched kernel the rows
	// of every batch element (kgen_grows; rows_batch.go).
	last string
	// rounds marks the top-k selection's walk of the row (topk.go): pass
	// P+1's loops without the write's stores.
	rounds bool
}

// elemBody writes one element's work inside a pass loop; vec says whether
// it is inside a vector path (kgen_e indexes the vector), lets whether on
// the let-cached path (ir.Rows.LetCache: the vector cache path, slot kgen_s).
type elemBody func(vec, lets bool)

func (rows) body(w *Writer, k *ir.Kernel, d *Dialect) {
	rw := &rowWriter{Writer: w, k: k, d: d, r: k.Rows(), sts: k.Stages(), lets: map[int]ir.Stage{}}
	if d.LetCache {
		for _, st := range rw.r.CachedStages(k) {
			rw.lets[st.Level] = st
		}
	}
	rw.threadGeometry()
	rows, group := "args.rows", d.Threads[GroupID].Expr
	if len(k.Segments) > 0 {
		rw.selectSegment()
		rows, group = "kgen_rows", "kgen_group"
	}
	rw.rows, rw.last = rows, rows
	if k.Batched() {
		rw.last = rw.batchRowCount()
	}
	row := func() {
		rw.rowGeometry(group + " * kgen_rpg + kgen_team")
		rw.rowPasses()
	}
	if k.ColReductions() == nil {
		row()
		return
	}
	// ir.Cols: a team per chunk of rows, in order; every team of the group
	// runs every iteration (past the last row with no elements), so the
	// team reductions' barriers stay uniform.
	rw.P("const ", d.Uint, " kgen_chunk = ", group, " * kgen_rpg + kgen_team; // this team's chunk of ", ir.ColChunk, " rows")
	rw.Block(fmt.Sprintf("for (%s kgen_ci = 0; kgen_ci < %du; ++kgen_ci)", d.Uint, ir.ColChunk), func() {
		rw.rowGeometry(fmt.Sprintf("kgen_chunk * %du + kgen_ci", ir.ColChunk))
		rw.rowPasses()
	})
}

// rowPasses writes one row's work after its geometry: the dialect's
// declarations, the level-0 row stage, the reduction passes and the write.
func (rw *rowWriter) rowPasses() {
	d := rw.d
	d.RowDecls(rw)
	rw.rowStage()
	if rw.r.PairWidth != nil { // ir.PairColWidth's h, from the level-0 row stage's width
		rw.P("const ", d.Uint, " kgen_ph = (", ir.PairWidthName, " < 0 ? 0u : min((", d.Uint, ")", ir.PairWidthName, ", args.cols)) / 2u; // pair_half's width clamped to the row, halved")
	}
	for p := 1; p <= rw.r.Passes; p++ {
		rw.reducePass(p)
	}
	if rw.si < len(rw.sts) && rw.sts[rw.si].Kind == ir.StageWrite { // absent when every output is [rows] or a selection
		rw.writePass()
	}
	rw.topkRounds()
}

// threadGeometry declares the compute type, the team scratch and where
// this thread sits in its simdgroup and row team.
func (rw *rowWriter) threadGeometry() {
	d, u := rw.d, rw.d.Uint
	rw.P("using C = ", computeName(rw.k, d), ";")
	rw.P("constexpr ", u, " kThreads = ", rw.k.Threadgroup, ";")
	if len(rw.r.Reductions) > 0 {
		teamScratch(rw.Writer, d, d.Waves("kThreads"))
	}
	rw.topkShared()
	for _, ix := range []ThreadIndex{LocalID, SimdLane, SimdID} {
		if l := d.Threads[ix].Local; l != "" {
			rw.P(l)
		}
	}
	rw.P("const ", u, " kgen_rpg = args.rows_per_group;")
	rw.P("const ", u, " kgen_width = kThreads / kgen_rpg; // lanes per row")
	rw.P("const ", u, " kgen_team = kgen_tid / kgen_width;")
	rw.P("const ", u, " kgen_lane = kgen_tid % kgen_width;")
}

// selectSegment maps the group onto its segment and its group within that
// segment, so one launch covers every segment in turn, then binds each
// formula name to the segment's tensor.
func (rw *rowWriter) selectSegment() {
	k, d, segs := rw.k, rw.d, rw.k.Segments
	rw.P(fmt.Sprintf("// Segments: %ss [0, ceildiv(%s_rows, rows_per_group)) work on %s, the next ones on %s, and so on.",
		d.ThreadGroup, segs[0], segs[0], segs[1]))
	rw.P(d.Uint, " kgen_group = ", d.Threads[GroupID].Expr, ";")
	rw.P(d.Uint, " kgen_seg = 0;")
	rw.P(d.Uint, " kgen_rows = args.", segs[0], "_rows;")
	for s := 0; s < len(segs)-1; s++ {
		rw.Block(fmt.Sprintf("if (kgen_seg == %d && kgen_group >= (kgen_rows + kgen_rpg - 1) / kgen_rpg)", s), func() {
			rw.P("kgen_group -= (kgen_rows + kgen_rpg - 1) / kgen_rpg;")
			rw.P("kgen_seg = ", s+1, ";")
			rw.P("kgen_rows = args.", segs[s+1], "_rows;")
		})
	}
	for _, role := range []ir.Role{ir.Input, ir.Output} {
		for i, bd := range k.SegmentBindings(0, role) {
			sel := k.SegmentBindings(len(segs)-1, role)[i].Name
			for s := len(segs) - 2; s >= 0; s-- {
				sel = fmt.Sprintf("kgen_seg == %d ? %s : %s", s, k.SegmentBindings(s, role)[i].Name, sel)
			}
			ptr := d.In
			if role == ir.Output {
				ptr = d.Out
			}
			rw.P(ptr(d.TypeName(bd.DType)), " ", k.FormulaName(bd), " = ", sel, ";")
		}
	}
}

// rowGeometry declares the team's row (row, an expression), its column
// count (0 past the last row), the row's offset, the per-lane caches and
// the scalar parameters.
func (rw *rowWriter) rowGeometry(row string) {
	d, u := rw.d, rw.d.Uint
	rw.P("const ", u, " kgen_row = ", row, ";")
	rw.P("// Teams past the last row do no element work but join every barrier.")
	rw.P("const ", u, " kgen_cols = kgen_row < ", rw.last, " ? args.cols : 0;")
	if rw.k.Batched() {
		rw.batchRow()
	} else {
		offset := "kgen_row"
		if d.Offset != u {
			offset = "(" + d.Offset + ")kgen_row"
		}
		rw.P("const ", d.Offset, " kgen_base = ", offset, " * args.cols;")
	}
	if len(rw.r.Cached) > 0 && d.ScalarRowCache {
		rw.P("constexpr ", u, " kCache = ", rw.r.CachePerLane, "; // cached values per lane and input")
		rw.P("const bool kgen_cached = args.cols <= kCache * kgen_width;")
		for _, i := range rw.r.Cached {
			rw.P(rw.valType(i), " kgen_c_", rw.inputName(i), "[kCache];")
		}
	}
	for _, p := range rw.k.Params() {
		if p.Type != dtype.F32 { // i32 and u32 params are integers (u32 wraps)
			rw.P("const int ", p.Name, " = (int)args.", p.Name, ";")
			continue
		}
		rw.P("const C ", p.Name, " = ", d.Cvt("C", "args."+p.Name), ";")
	}
	// [rows] inputs: the row's one value, read once (0 for teams past the
	// last row, which must not read past the tensor).
	for i, b := range rw.k.SegmentBindings(0, ir.Input) {
		if b.IsPerRow() {
			n := rw.inputName(i)
			zero := d.Cvt("C", "0.0f")
			if b.DType.IsInt() {
				zero = "0"
			}
			rw.P("const ", rw.valType(i), " kgen_v_", n, " = kgen_row < ", rw.last, " ? ", rw.loadCvt(i, d.ReadOnly(n+"["+rw.rowAt()+"]")), " : ", zero, ";")
		}
	}
	rw.gatherRows()
	rw.scatterRows()
}

// stageCall is the call of stage st with extra appended to its arguments;
// pass and write stages read the loaded kgen_v_ values of the inputs.
func (rw *rowWriter) stageCall(st ir.Stage, extra []string) string {
	return rw.stageCallAt(st, extra, false)
}

// stageCallAt is stageCall inside an element loop; vec says whether the
// loop is a vector path, where the column is kgen_j0 + kgen_e.
func (rw *rowWriter) stageCallAt(st ir.Stage, extra []string, vec bool) string {
	var names []string
	for _, a := range st.Args {
		if a.Kind == ir.ArgIndex {
			col := "(int)kgen_j"
			if vec {
				col = "(int)(kgen_j0 + kgen_e)"
			}
			names = append(names, map[string]string{"row": "(int)" + rw.rowIndex(), "rows": "(int)" + rw.rows, "cols": "(int)args.cols", "col": col}[a.Name])
			continue
		}
		if a.Kind == ir.ArgInput {
			names = append(names, "kgen_v_"+a.Name)
			continue
		}
		if a.Kind == ir.ArgGather { // loaded by the loop (gatherLoads)
			names = append(names, a.Name)
			continue
		}
		if a.Kind == ir.ArgPair {
			names = append(names, "kgen_p_"+rw.inputName(a.Index))
			continue
		}
		if a.Kind == ir.ArgCachedLet {
			names = append(names, letCacheName(a.Name)+"[kgen_s * kV + kgen_e]")
			continue
		}
		names = append(names, a.Name)
	}
	return st.Name + "(" + strings.Join(append(names, extra...), ", ") + ");"
}

// passCall is the call of pass p's stage st with its targets outs; on the
// let-cached path, of the pass's cached stage when the let cache changes
// it, which also stores the lets it exports into their cache slots.
func (rw *rowWriter) passCall(st ir.Stage, p int, outs []string, vec, lets bool) string {
	cst, ok := rw.lets[p]
	if !lets || !ok {
		return rw.stageCallAt(st, outs, vec)
	}
	for _, i := range rw.r.LetCacheExports(p) {
		outs = append(outs, letCacheName(rw.k.Steps[i].Name)+"[kgen_s * kV + kgen_e]")
	}
	return rw.stageCallAt(cst, outs, vec)
}

// letCachedReads lists the inputs pass p reads on the let-cached path:
// those its stage there takes (a let taken from the cache needs no input).
func (rw *rowWriter) letCachedReads(p int) []int {
	st, ok := rw.lets[p]
	if !ok {
		return rw.r.Reads[p-1]
	}
	var out []int
	for _, i := range rw.r.Reads[p-1] {
		for _, a := range st.Args {
			if (a.Kind == ir.ArgInput || a.Kind == ir.ArgPair) && a.Index == i {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

// rowStage calls the next stage when it computes per-row values (one call
// per row, between passes), declaring its targets first.
func (rw *rowWriter) rowStage() {
	if rw.si >= len(rw.sts) || rw.sts[rw.si].Kind != ir.StageRowLets {
		return
	}
	st := rw.sts[rw.si]
	rw.si++
	var outs []string
	for _, t := range st.Targets {
		ty, n := "C", t.Name
		if t.Bool {
			ty = "bool"
		}
		if t.Int {
			ty = "int"
		}
		if t.RowOutput {
			n = "kgen_o_" + n // the output's pointer has its name
		}
		rw.P(ty, " ", n, ";")
		outs = append(outs, n)
	}
	rw.P(rw.stageCall(st, outs))
	// [rows] outputs: one store per row, by the team's first lane.
	for i, t := range st.Targets {
		if t.RowOutput {
			o := rw.k.SegmentBindings(0, ir.Output)[t.OutIndex]
			rw.Block("if (kgen_lane == 0 && kgen_row < "+rw.last+")", func() {
				rw.P(rw.k.FormulaName(o), "[", rw.rowAt(), "] = ", storeCvt(rw.d, o, outs[i]), ";")
			})
		}
	}
}

// reducePass writes reduction pass p: its accumulators, the element loop
// that feeds them, the team reductions and the row stage that follows.
func (rw *rowWriter) reducePass(p int) {
	st := rw.sts[rw.si]
	rw.si++
	rw.P("// Pass ", p, ".")
	reds := rw.reductions(p)
	var terms []string
	for _, i := range reds {
		red := rw.r.Reductions[i]
		rw.P(fmt.Sprintf("float kgen_a%d = %s; // %s(%s)", i, identity(rw.d, red.Op), red.Op.Func(), rw.k.FormatExpr(red.Arg)))
		terms = append(terms, fmt.Sprintf("kgen_t%d", i))
	}
	rw.d.RowLoops(rw, p, func(vec, lets bool) {
		rw.P("C ", strings.Join(terms, ", "), ";")
		rw.P(rw.passCall(st, p, terms, vec, lets))
		for j, i := range reds {
			acc, t := fmt.Sprintf("kgen_a%d", i), rw.d.ToFloat(terms[j])
			if op := rw.r.Reductions[i].Op; op.Sums() {
				rw.P(acc, " += ", t, ";")
			} else {
				rw.P(acc, " = ", rw.d.FloatFunc("f"+op.Combine()), "(", acc, ", ", t, ");")
			}
		}
	})
	for _, i := range reds {
		op := rw.r.Reductions[i].Op
		v := teamCall(op, fmt.Sprintf("kgen_a%d", i), "kgen_width", "kgen_team", "kgen_simd", "kgen_simd_lane")
		if op.Divides() {
			v += " / " + rw.d.FloatCast("args.cols")
		}
		rw.P("const C ", ir.ReductionName(i), " = ", rw.d.FromFloat("C", v), ";")
	}
	rw.rowStage()
}

// writePass writes the last pass: the write stage per element and the
// stores of its results.
func (rw *rowWriter) writePass() {
	st := rw.sts[rw.si]
	rw.P("// Pass ", rw.r.Passes+1, ": write.")
	var outs []string
	for _, t := range st.Targets {
		outs = append(outs, "kgen_o_"+t.Name)
	}
	rw.d.RowLoops(rw, rw.r.Passes+1, func(vec, lets bool) {
		var floats, ints []string // integer outputs are int until their store
		for i, t := range st.Targets {
			if t.Int {
				ints = append(ints, outs[i])
			} else {
				floats = append(floats, outs[i])
			}
		}
		if len(floats) > 0 {
			rw.P("C ", strings.Join(floats, ", "), ";")
		}
		if len(ints) > 0 {
			rw.P("int ", strings.Join(ints, ", "), ";")
		}
		rw.P(rw.passCall(st, rw.r.Passes+1, outs, vec, lets))
		col := "kgen_j"
		if vec {
			col = "kgen_j0 + kgen_e"
		}
		for i, t := range st.Targets {
			o := rw.k.SegmentBindings(0, ir.Output)[t.OutIndex]
			switch {
			case o.IsScatter():
				rw.scatterStore(t.OutIndex, o, outs[i], col, vec)
			case t.Col:
				rw.colFold(t, outs[i], col)
			case vec:
				rw.P("kgen_y_", rw.k.FormulaName(o), "[kgen_e] = ", rw.d.Cvt("T", outs[i]), ";")
			default:
				rw.P(rw.k.FormulaName(o), "[", rw.colAt(o, "kgen_j"), "] = ", storeCvt(rw.d, o, outs[i]), ";")
			}
		}
	})
}

// elemOutputs lists segment 0's per-element outputs (not [rows], not
// [cols]), in the order of the write stage's stored targets.
func elemOutputs(k *ir.Kernel) []ir.Binding {
	var out []ir.Binding
	for _, o := range k.SegmentBindings(0, ir.Output) {
		if !o.IsPerRow() && !o.IsColOutput() && !o.IsTopKOutput() && !o.IsScatter() { // a positioned write stores element by element
			out = append(out, o)
		}
	}
	return out
}

// reductions lists the reductions pass p computes.
func (rw *rowWriter) reductions(p int) []int {
	var out []int
	for i, red := range rw.r.Reductions {
		if red.Level == p {
			out = append(out, i)
		}
	}
	return out
}

// deviceLoad reads input i at column kgen_j of the row (of the row vector,
// for a row-vector input) from device memory, converted to C. [rows]
// inputs are never loaded here: rowGeometry reads them once per row.
func (rw *rowWriter) deviceLoad(i int) string {
	n, b := rw.inputName(i), rw.k.SegmentBindings(0, ir.Input)[i]
	if b.IsRowVector() {
		return rw.loadCvt(i, rw.d.ReadOnly(n+"["+rw.colAt(b, "kgen_j")+"]"))
	}
	return rw.loadCvt(i, n+"["+rw.colAt(b, "kgen_j")+"]")
}

// pairLoads declares kgen_p_<x>, input x at the element paired with
// column col, for the inputs pass p reads in pairs: a device load (the
// partner belongs to another lane in the strided scalar loops).
func (rw *rowWriter) pairLoads(p int, col string) {
	for _, i := range rw.r.PairReads[p-1] {
		n, b := rw.inputName(i), rw.k.SegmentBindings(0, ir.Input)[i]
		src := n + "[" + rw.colAt(b, rw.pairCol(col)) + "]"
		if b.IsRowVector() {
			src = rw.d.ReadOnly(n + "[" + rw.colAt(b, rw.pairCol(col)) + "]")
		}
		rw.P("const C kgen_p_", n, " = ", rw.loadCvt(i, src), ";")
	}
}

// pairCol is the column paired with col (ir.PairCol): col ^ 1 (kept inside
// the row when cols is odd, which launchers refuse), or the other half; with
// pair_half's width (ir.PairColWidth), the other half of the first 2·kgen_ph
// columns, the column itself past them.
func (rw *rowWriter) pairCol(col string) string {
	if rw.r.PairWidth != nil {
		return "(" + col + " < kgen_ph ? " + col + " + kgen_ph : " + col + " < 2u * kgen_ph ? " + col + " - kgen_ph : " + col + ")"
	}
	if rw.r.Pair == "half" {
		return "(" + col + " < args.cols / 2u ? " + col + " + args.cols / 2u : " + col + " - args.cols / 2u)"
	}
	return "min(" + col + " ^ 1u, args.cols - 1u)"
}

// valType is the type input i's values take in the kernel: int for an
// integer tensor (i8 sign-extends, u8 zero-extends, u32 wraps), else C.
func (rw *rowWriter) valType(i int) string {
	if rw.k.SegmentBindings(0, ir.Input)[i].DType.IsInt() {
		return "int"
	}
	return "C"
}

// loadCvt converts an element of input i, read by src, to its valType.
func (rw *rowWriter) loadCvt(i int, src string) string {
	if rw.k.SegmentBindings(0, ir.Input)[i].DType.IsInt() {
		return "(int)" + src
	}
	return rw.d.Cvt("C", src)
}

// inputIndex is the index of the input whose formula name is n.
func (rw *rowWriter) inputIndex(n string) int {
	for i := range rw.k.SegmentBindings(0, ir.Input) {
		if rw.inputName(i) == n {
			return i
		}
	}
	return -1
}

// storeCvt converts a stage result v to output o's storage type: an
// integer output keeps the low bits (the formula saturates explicitly).
func storeCvt(d *Dialect, o ir.Binding, v string) string {
	if o.DType.IsInt() {
		return "(" + d.Types[o.DType] + ")(" + v + ")"
	}
	return d.Cvt(d.TypeName(o.DType), v)
}

// inputName is the formula name of input i.
func (rw *rowWriter) inputName(i int) string {
	return rw.k.FormulaName(rw.k.SegmentBindings(0, ir.Input)[i])
}
