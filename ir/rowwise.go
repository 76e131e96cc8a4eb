package ir

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kgen-dev/kgen/backend"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/launch"
	"github.com/kgen-dev/kgen/spec"
)

// Rows is the schedule of a rowwise kernel: every value classified as
// per-row or per-element, the row reductions, and the passes over the row
// that compute them.
//
// A reduction's pass is one more than the latest pass any value its argument
// uses becomes available after (0 = before any pass: params and constants).
// Pass p (1..Passes) walks the row once, accumulating every reduction of
// pass p; the write pass (Passes+1) walks it once more and stores the
// outputs. Softmax, y = e / row_sum(e) with e = exp(x - row_max(x)), is
// pass 1 row_max, pass 2 row_sum, pass 3 write.
//
// Segments (Kernel.Segments) are independent row problems sharing cols:
// segment s has its own tensors and row count <segment>_rows.
type Rows struct {
	// Batch is a batched rowwise kernel's launch dimensions (size fields,
	// outermost first; rowwise_batch.go), nil for one row problem.
	Batch      []string
	Reductions []Reduction
	Passes     int // reduction passes; the write pass is Passes+1
	// Info describes each step (Steps[i]).
	Info []StepInfo
	// Reads[p-1] lists the inputs (indices among the spec's inputs) that
	// pass p reads, for p = 1..Passes+1.
	Reads [][]int
	// Cached lists the [rows, cols] inputs read by more than one pass: each
	// thread keeps its strided slice of them in registers (CachePerLane
	// values each) when the row fits, so they are read from device memory
	// once per row.
	Cached       []int
	CachePerLane int
	// LetCache lists the per-element lets a reduction pass exports and
	// later passes take instead of recomputing (CachedLet), on the CUDA
	// vector cache path; CUDAVectors counts their registers.
	LetCache []CachedLet
	// CUDAVectors is the 16-byte vectors a CUDA lane takes below the whole
	// block (its team is the narrowest holding the row at that many) and
	// the vectors its register cache holds per cached input and let: a
	// power of two sharing cudaCacheVectors among the cached inputs (4 for
	// one, 2 for two), 4 without a cache; with cached lets, sharing
	// cudaLetCacheVectors, a let costing cudaLetCost (cudaVectors). Fewer, fuller lanes measured faster
	// (H200, rms_norm bf16 at 1K columns: 4 vectors per lane 97% of copy,
	// 2 vectors 92.5%): less reduction per element.
	CUDAVectors int
	// Pair is the layout of the kernel's pair reads (expr.PairFuncs), ""
	// without any; PairReads[p-1] lists the inputs pass p reads at the
	// paired element. Paired inputs' bindings are marked Paired.
	Pair      string
	PairReads [][]int
	// PairWidth is pair_half's width w (pair_half(x, w), PairColWidth), nil
	// when the pairs span the whole row: a per-row value of level 0, the
	// level-0 row stage's last target (PairWidthName).
	PairWidth *Expr
	// ThreadgroupBytes is the kernel's threadgroup memory: the team fold's
	// partials (TeamBytes), for combining the simdgroups that share a row.
	ThreadgroupBytes int
	// Cols is the kernel's column reductions, its [cols] outputs and two
	// launches (colwise.go); nil without any.
	Cols *Cols
	// TopK is the kernel's top-k selection, its [rows, k] outputs (topk.go);
	// nil without one.
	TopK *TopK
	// Gathers is the kernel's indexed reads (gather.go), by RefGather Index.
	Gathers []Gather
	// Scatters is the kernel's positioned writes (scatter.go).
	Scatters []Scatter
}

// StepInfo classifies one let or output.
type StepInfo struct {
	PerRow bool // one value per row (no input element outside a reduction)
	Level  int  // the pass after which the value is available (0: before pass 1)
}

// Reduction is one row_* call, replaced in its formula by an OpRef with
// Ref RefReduce and Name ReductionName(i).
type Reduction struct {
	Op    ReduceOp
	Arg   *Expr // per-element
	Level int   // its pass
}

// ReductionName is the generated name of reduction i's per-row value.
func ReductionName(i int) string { return fmt.Sprintf("kgen_r%d", i) }

// SimdWidth is the lanes of an Apple simdgroup.
const SimdWidth = 32

// LanesPerRow is how many threads of a threadgroup of tg threads share one
// row of cols values: the smallest power of two from one simdgroup (32) up
// to the whole threadgroup that leaves each lane at most 4 values, so narrow
// rows pack several rows into a group (64 columns: 8 rows of 32 lanes at
// 256 threads) and wide rows use the whole group and loop. The Metal
// launch's derived field rows_per_group is tg / LanesPerRow (Rows.Launch).
func LanesPerRow(cols, tg int) int { return launch.LanesFor(cols, tg, metalValuesPerLane) }

// metalValuesPerLane is the most values one lane of a Metal row team takes
// before the team doubles.
const metalValuesPerLane = 4

// cudaCacheVectors is the 16-byte vectors (4 registers each) a CUDA thread
// keeps of its row caches, whatever the block size (__launch_bounds__ caps
// every thread at 64 registers): more spills some entries (ptxas).
const cudaCacheVectors = 4

// cacheBudget is the register values per thread kgen spends on cached rows
// at 256 threads per group (scaled inversely with the group size).
const cacheBudget = 32

// rowSchedule classifies the steps of a checked rowwise kernel.
func rowSchedule(s *spec.Spec, k *Kernel, diags *diag.List) Schedule {
	rows := &Rows{Batch: rowBatchNames(s, &diag.List{})}
	k.Schedule = rows // the scheduler reads reductions through k
	schedule(s, k, rows, diags)
	checkRowBatch(s, rows, diags)
	layOutRowBatch(k, rows)
	return rows
}

// Kind implements Schedule.
func (*Rows) Kind() Kind { return Rowwise }

// rowBindings fixes buffer indices of a rowwise kernel: the inputs in order,
// then the outputs in order (segment by segment when there are segments),
// then the args struct: the size fields (rows, cols, rows_per_group; with
// segments <segment>_rows for each, then cols, rows_per_group), then the
// params.
func rowBindings(s *spec.Spec, k *Kernel, diags *diag.List) []Binding {
	segs := k.Segments
	prefixes := []string{""}
	if len(segs) > 0 {
		prefixes = nil
		for _, sg := range segs {
			prefixes = append(prefixes, sg+"_")
		}
	}
	hasRowTensor := false
	batch := rowBatchNames(s, diags)
	var out []Binding
	for si, pre := range prefixes {
		tensor := Shape{pre + "rows", "cols"}
		for _, in := range s.Inputs {
			shape := tensor
			if in.Quant != nil { // quant_rows.go
				hasRowTensor = true
				out = append(out, packedBinding(in.Name.Name, in.Quant, tensor, len(out)))
				checkQuantInput(s, in, diags)
				continue
			}
			if isIndexable(in.Dims) { // gather.go: its own shape, read by subscript; the outputs give rows and cols
				hasRowTensor = true
				out = append(out, Binding{Index: len(out), Name: pre + in.Name.Name, Role: Input, DType: in.DType.Type, Shape: append(Shape(nil), in.Dims...), Segment: si})
				continue
			}
			if checkDims(in, diags, "a rowwise input has shape [rows, cols], [cols] (one row shared by every row) or [rows] (one value per row), or names dimensions of its own to be read by subscript ([vocab, cols])",
				Shape{"rows", "cols"}, Shape{"cols"}, Shape{"rows"}) && in.Dims != nil {
				shape = append(Shape(nil), in.Dims...) // segments rename rows: never alias the spec's
				if shape[0] == "rows" {
					shape[0] = pre + "rows"
				}
			}
			if len(shape) == 2 {
				hasRowTensor = true
			}
			out = append(out, Binding{Index: len(out), Name: pre + in.Name.Name, Role: Input, DType: in.DType.Type, Shape: shape, Segment: si})
		}
		out = append(out, quantTables(s, len(out))...)
	}
	for si, pre := range prefixes {
		for _, o := range s.Outputs {
			shape := Shape{pre + "rows", "cols"}
			if o.Dims != nil { // a positioned write (scatter.go): its own shape
				shape = append(Shape(nil), o.Dims...)
			}
			out = append(out, Binding{Index: len(out), Name: pre + o.Name.Name, Role: Output, DType: o.DType.Type, Shape: shape, Segment: si, Indexed: o.Dims != nil})
		}
	}
	if !hasRowTensor && len(s.Inputs) > 0 {
		diags.Addf(s.Inputs[0].Pos, "a rowwise kernel needs an input of shape [rows, cols]; here every input is [cols] or [rows]")
	}
	var fields []Field
	if len(segs) == 0 {
		fields = append(fields, Field{Name: "rows", Type: dtype.U32, Size: true})
	}
	for _, sg := range segs {
		fields = append(fields, Field{Name: sg + "_rows", Type: dtype.U32, Size: true})
	}
	fields = append(fields, Field{Name: "cols", Type: dtype.U32, Size: true},
		Field{Name: "rows_per_group", Type: dtype.U32, Size: true,
			Derived: rowsPerGroupDoc(s.Threadgroup, 32, "4 * lanes")})
	fields = append(fields, specBatchBindings(s, batch, out, diags)...)
	fields = append(fields, indexDimFields(s, diags)...)
	for _, p := range s.Params {
		fields = append(fields, Field{Name: p.Name.Name, Type: p.Type.Type, Example: p.ExampleText})
	}
	fields = append(fields, batchTail(batch, out)...)
	for i := range fields {
		fields[i].Offset = 4 * i
	}
	return append(out, Binding{Index: len(out), Name: "args", Role: Args, Fields: fields})
}

// Launch implements Schedule: one threadgroup per rows_per_group rows of
// each segment, rows_per_group = threads / the team width. Metal's teams
// take at most 4 values per lane; CUDA's load 16-byte vectors and take two
// vectors per lane (32 / element bytes values), so rows get fewer lanes.
func (r *Rows) Launch(k *Kernel, b Backend) launch.Launch {
	tg := launch.N(k.Threadgroup)
	lanes, perDoc, from := launch.TeamLanes(launch.V("cols"), tg, launch.N(metalValuesPerLane)), "4 * lanes", 32
	if b == CUDA || b == ROCm { // ROCm's HIP body is CUDA's (16-byte vectors, the same register cache)
		// Teams from one lane: narrow rows share a warp (a 128-column bf16
		// row takes 4 lanes of 4 vectors, 8 rows per warp), shuffling
		// within the team.
		per := launch.Over(launch.N(16*r.CUDAVectors), launch.V(launch.ElemBytes))
		lanes, perDoc, from = launch.TeamLanesFrom(launch.V("cols"), tg, per, launch.N(1)), fmt.Sprintf("(%d / element bytes) * lanes", 16*r.CUDAVectors), 1
	}
	rpg := launch.V("rows_per_group")
	var groups []*launch.Expr
	for _, f := range k.ArgsBinding().Fields {
		if f.Size && f.Name != "cols" && f.Derived == "" && !f.Dim && len(r.Batch) == 0 {
			groups = append(groups, launch.Ceil(launch.V(f.Name), rpg))
		}
	}
	if len(r.Batch) > 0 {
		groups = []*launch.Expr{rowGroups(r.Batch)}
	}
	l := launch.Launch{
		Grid:        [3]*launch.Expr{launch.Times(tg, launch.Sum(groups...)), launch.N(1), launch.N(1)},
		Threadgroup: [3]int{k.Threadgroup, 1, 1},
		Derived: []launch.Derived{{Field: "rows_per_group", Rule: launch.Over(tg, lanes),
			Doc: rowsPerGroupDoc(k.Threadgroup, from, perDoc)}},
	}
	if r.Cols != nil { // the first of its two launches: a team per chunk of rows
		l.Grid[0] = colRowsGrid(k)
		l.Derived = append(l.Derived, chunksDerived())
	}
	return l
}

// rowsPerGroupDoc is the rows_per_group rule in words; perLanes is what a
// team of lanes covers ("4 * lanes" on Metal).
func rowsPerGroupDoc(tg, from int, perLanes string) string {
	return fmt.Sprintf("%d / lanes_per_row(cols): lanes_per_row is the smallest power of two from %d to %d with %s >= cols", tg, from, tg, perLanes)
}

// valueInfo is what an expression depends on.
type valueInfo struct {
	elem   bool // an input element (outside reductions)
	tensor bool // an element of a [rows, cols] input (not only row vectors)
	byRow  bool // something that changes from row to row (checkColTerm)
	level  int
}

func (a valueInfo) merge(b valueInfo) valueInfo {
	return valueInfo{elem: a.elem || b.elem, tensor: a.tensor || b.tensor, byRow: a.byRow || b.byRow, level: max(a.level, b.level)}
}

// scheduler classifies the steps of one rowwise kernel.
type scheduler struct {
	s     *spec.Spec
	k     *Kernel
	rows  *Rows
	diags *diag.List
	info  []valueInfo // per step
	cur   spec.Formula
}

func schedule(s *spec.Spec, k *Kernel, r *Rows, diags *diag.List) {
	sc := &scheduler{s: s, k: k, rows: r, diags: diags}
	collectGathers(k, r)
	collectScatters(s, k, r, diags)
	formulas := append(append([]spec.Formula(nil), s.Let...), s.Outputs...)
	sc.colOutputs()
	sc.topkOutputs()
	for i, st := range k.Steps {
		sc.cur = formulas[i]
		in := sc.classify(st.Expr)
		sc.info = append(sc.info, in)
		r.Info = append(r.Info, StepInfo{PerRow: !in.elem, Level: in.level})
		if o, ok := r.Cols.ColOf(i); ok {
			sc.checkColTerm(o, in)
			continue
		}
		if o, ok := r.TopK.OutputOf(i); ok {
			sc.checkTopKKey(o, in)
			continue
		}
		if st.Output && !in.elem && st.At == nil { // a positioned write is refused instead (collectScatters)
			if k.Kind == KindMatmul {
				// The matmul's kernels and its Go reference store outputs
				// per element of [m, n] only; an [m] output would need its
				// own store in every form (row-owning, split, CUDA).
				sc.diags.Addf(sc.cur.Pos, "output %s has one value per row (acc appears only inside row reductions), but a matmul writes [m, n] outputs only; an [m] output of a matmul is not supported yet: compute it with a rowwise kernel over the matmul's output", st.Name)
				continue
			}
			perRowOutput(k, i)
		}
	}
	sc.checkCols()
	sc.checkTopK()
	for _, red := range r.Reductions {
		r.Passes = max(r.Passes, red.Level)
	}
	if k.Kind == KindMatmul {
		return // the matmul sizes its own memory and reads no input twice
	}
	sc.reads()
	sc.letCache()
	tg := k.Threadgroup
	r.ThreadgroupBytes = TeamBytes(tg)
	for b := Backend(0); b < NumBackends; b++ {
		if lim := backend.Table[b].ThreadgroupBytes; k.Ports[b] && r.ThreadgroupBytes > lim {
			diags.Addf(s.KindPos, "the kernel needs %d bytes of threadgroup memory; %s allows %d", r.ThreadgroupBytes, b, lim)
		}
	}
	r.CUDAVectors = r.cudaVectors()
	if n := len(r.Cached); n > 0 {
		per := cacheBudget * 256 / (tg * n)
		r.CachePerLane = 1
		for r.CachePerLane*2 <= per {
			r.CachePerLane *= 2
		}
	}
	if r.Cols != nil && diags.Len() == 0 {
		layOutCols(k, r.Cols)
	}
	layOutTopK(k, r)
}

// perRowOutput makes the output of step i a [rows] tensor (one per
// segment): its formula uses no input element outside a reduction, so it
// has one value per row (a row's max, its scale), stored once per row.
func perRowOutput(k *Kernel, step int) {
	o := k.OutputIndex(step)
	for s := range k.NumSegments() {
		b := k.SegmentBindings(s, Output)[o]
		k.Bindings[b.Index].Shape = Shape{b.Shape[0]}
	}
}

// classify works out what e depends on, replacing each row_* call by a
// reference to a new Reduction (inner reductions first).
func (sc *scheduler) classify(e *Expr) valueInfo {
	switch e.Op {
	case OpRef:
		switch e.Ref {
		case RefInput:
			if e.Index >= len(sc.s.Inputs) {
				// A name the spec does not declare (reported where it
				// was resolved); classify on without indexing past them.
				return valueInfo{elem: true, tensor: true}
			}
			if sc.k.Kind == KindMatmul {
				// Computed per element whatever its shape ([m] inputs
				// too: a per-row let takes no inputs); only an [m, n]
				// input varies along the row like the accumulators.
				return valueInfo{elem: true, tensor: len(sc.s.Inputs[e.Index].Dims) == 2}
			}
			switch b := sc.k.SegmentBindings(0, Input)[e.Index]; {
			case b.IsPerRow():
				return valueInfo{byRow: true} // one value per row, like a param
			case b.IsRowVector():
				return valueInfo{elem: true}
			}
			return valueInfo{elem: true, tensor: true, byRow: true}
		case RefAcc, RefGather: // a gather: per element, its row may depend on the row
			return valueInfo{elem: true, tensor: true, byRow: true}
		case RefPair:
			sc.rows.Pair = e.Text
			if e.Width != nil { // one width per kernel (formulaChecker.checkWidth)
				sc.rows.PairWidth = e.Width
			}
			for s := range sc.k.NumSegments() {
				sc.k.Bindings[sc.k.SegmentBindings(s, Input)[e.Index].Index].Paired = true
			}
			return valueInfo{elem: true, tensor: true, byRow: true}
		case RefLet:
			return sc.info[e.Index]
		case RefReduce:
			return valueInfo{level: sc.rows.Reductions[e.Index].Level, byRow: true}
		case RefIndex:
			switch e.Name {
			case "col": // per element, but the same in every row, like a [cols] input
				return valueInfo{elem: true}
			case "row":
				return valueInfo{byRow: true}
			}
		}
		return valueInfo{}
	case OpCall:
		var in valueInfo
		for _, a := range e.Args {
			in = in.merge(sc.classify(a))
		}
		if sc.misplacedTopK(e) {
			return in
		}
		pos := sc.cur.Map.At(e.Off)
		if _, isCol := ColReduceOpOf(e.Func); isCol || e.Func == TotalFunc {
			if sc.k.Kind == KindMatmul {
				what := "reduces a column over the rows"
				if e.Func == TotalFunc {
					what = "sums over every element"
				}
				sc.diags.Addf(pos, "%s %s: column reductions and totals are for rowwise kernels; a matmul's epilogue reduces rows only", e.Func, what)
			} else {
				what, eg := "one value per column", "dw: "+e.Func+"(dy * x)"
				if e.Func == TotalFunc {
					what, eg = "one value for the whole launch", "loss: total_sum(e * e)"
				}
				sc.diags.Addf(pos, "%s is %s, known only after every row: it must be an output's whole formula (%s), not part of a let or of a larger expression", e.Func, what, eg)
			}
			return in
		}
		op, isReduction := ReduceOpOf(e.Func)
		if !isReduction {
			return in
		}
		switch {
		case !in.elem:
			sc.diags.Addf(pos, "%s of a per-row value: its argument uses no input element, so every term is the same; reduce an expression of the row's elements", e.Func)
		case !in.tensor && !in.byRow: // (row_sum(select(col == target, …)) differs by row)
			sc.diags.Addf(pos, "%s of row-shaped inputs only: the result is the same for every row; compute it once outside the kernel, or reduce an expression of a [rows, cols] input", e.Func)
		}
		rows := sc.rows
		idx := len(rows.Reductions)
		arg := e.Args[0]
		rows.Reductions = append(rows.Reductions, Reduction{Op: op, Arg: arg, Level: in.level + 1})
		*e = Expr{Op: OpRef, Ref: RefReduce, Index: idx, Name: ReductionName(idx)}
		return valueInfo{level: in.level + 1, byRow: true}
	}
	var in valueInfo
	for _, a := range e.Args {
		in = in.merge(sc.classify(a))
	}
	return in
}

// reads lists the inputs each pass reads and the inputs worth caching.
func (sc *scheduler) reads() {
	r := sc.rows
	r.Reads = make([][]int, r.Passes+1)
	r.PairReads = make([][]int, r.Passes+1)
	count := make([]int, len(sc.s.Inputs))
	ins := sc.k.SegmentBindings(0, Input)
	for p := 1; p <= r.Passes+1; p++ {
		var targets []*Expr
		if p <= r.Passes {
			for _, red := range r.Reductions {
				if red.Level == p {
					targets = append(targets, red.Arg)
				}
			}
		} else {
			for i, st := range sc.k.Steps {
				if st.Output && !r.Info[i].PerRow {
					targets = append(targets, st.Expr)
				}
			}
		}
		d := sc.k.ElementDeps(targets)
		for i := range sc.s.Inputs {
			// A pass that reads an input's pairs reads the input: the
			// partner of an interleaved pair sits in the same vector.
			if (d.Inputs[i] || d.Pairs[i]) && !ins[i].IsPerRow() { // per-row inputs are read once per row, not per pass
				r.Reads[p-1] = append(r.Reads[p-1], i)
				count[i]++
			}
			if d.Pairs[i] {
				r.PairReads[p-1] = append(r.PairReads[p-1], i)
			}
		}
	}
	for i, in := range ins[:len(sc.s.Inputs)] { // a packed input's tables follow the spec's inputs, read by no pass
		if len(in.Shape) == 2 && count[i] > 1 {
			r.Cached = append(r.Cached, i)
		}
	}
}

// Deps is what a set of per-element expressions needs: the per-element lets
// they use (transitively, by step index), and the inputs, params, constants,
// per-row lets and reductions those use directly.
type Deps struct {
	ElemLets   []int // step indices, in order
	Inputs     map[int]bool
	Pairs      map[int]bool // inputs read at the paired element (RefPair)
	Gathers    map[int]bool // indexed reads (RefGather), by index into Rows.Gathers
	Params     map[int]bool
	Constants  map[int]bool
	Indices    map[string]bool // the index and size names used (IndexNames)
	RowLets    []int           // step indices, in order
	CachedLets []int           // per-element lets taken from the let cache (Rows.CachedStage), in order
	Reductions []int           // in order
	Accs       []bool          // matmul: the accumulators used, by index into Matmul.B
}

// ElementDeps computes the Deps of targets in a rowwise kernel.
func (k *Kernel) ElementDeps(targets []*Expr) Deps {
	r := k.Rows()
	return k.elementDeps(targets, func(i int) bool { return r.Info[i].PerRow })
}

// elementDeps computes the Deps of per-element targets; perRow tells the
// lets computed once per row (passed as arguments) from the per-element
// ones (computed in place).
func (k *Kernel) elementDeps(targets []*Expr, perRow func(step int) bool) Deps {
	return k.elementDepsCached(targets, perRow, func(int) bool { return false })
}

// elementDepsCached is elementDeps where the lets cached tells are taken
// as arguments from the let cache (Deps.CachedLets), not computed.
func (k *Kernel) elementDepsCached(targets []*Expr, perRow, cached func(step int) bool) Deps {
	d := Deps{Inputs: map[int]bool{}, Pairs: map[int]bool{}, Gathers: map[int]bool{}, Params: map[int]bool{}, Constants: map[int]bool{}, Indices: map[string]bool{}}
	lets, rowLets, cachedLets, reds := map[int]bool{}, map[int]bool{}, map[int]bool{}, map[int]bool{}
	var walk func(e *Expr)
	walk = func(e *Expr) {
		if e.Op == OpRef {
			switch e.Ref {
			case RefIndex:
				d.Indices[e.Name] = true
			case RefInput:
				d.Inputs[e.Index] = true
			case RefPair:
				d.Pairs[e.Index] = true
			case RefGather:
				d.Gathers[e.Index] = true
			case RefParam:
				d.Params[e.Index] = true
			case RefConstant:
				d.Constants[e.Index] = true
			case RefReduce:
				reds[e.Index] = true
			case RefAcc:
				for len(d.Accs) <= e.Index {
					d.Accs = append(d.Accs, false)
				}
				d.Accs[e.Index] = true
			case RefLet:
				switch {
				case perRow(e.Index):
					rowLets[e.Index] = true
				case cached(e.Index):
					cachedLets[e.Index] = true
				case !lets[e.Index]:
					lets[e.Index] = true
					walk(k.Steps[e.Index].Expr)
				}
			}
		}
		for _, a := range e.Args {
			walk(a)
		}
	}
	for _, t := range targets {
		walk(t)
	}
	for i := range k.Steps {
		if lets[i] {
			d.ElemLets = append(d.ElemLets, i)
		}
		if rowLets[i] {
			d.RowLets = append(d.RowLets, i)
		}
		if cachedLets[i] {
			d.CachedLets = append(d.CachedLets, i)
		}
	}
	for i := range reds {
		d.Reductions = append(d.Reductions, i)
	}
	sort.Ints(d.Reductions)
	return d
}

// RowDeps computes what the per-row lets of one level need: params,
// constants, reductions and per-row lets of earlier levels (lets of the same
// level are computed together, in order).
func (k *Kernel) RowDeps(level int) (steps []int, d Deps) {
	r := k.Rows()
	d = Deps{Inputs: map[int]bool{}, Params: map[int]bool{}, Constants: map[int]bool{}, Indices: map[string]bool{}}
	same, rowLets, reds := map[int]bool{}, map[int]bool{}, map[int]bool{}
	for i, st := range k.Steps {
		if !r.Info[i].PerRow || r.Info[i].Level != level { // per-row outputs included
			continue
		}
		steps = append(steps, i)
		Walk(st.Expr, func(e *Expr) {
			if e.Op != OpRef {
				return
			}
			switch e.Ref {
			case RefInput: // a [rows] input: one value per row
				d.Inputs[e.Index] = true
			case RefIndex: // row, rows, cols
				d.Indices[e.Name] = true
			case RefParam:
				d.Params[e.Index] = true
			case RefConstant:
				d.Constants[e.Index] = true
			case RefReduce:
				reds[e.Index] = true
			case RefLet:
				if !same[e.Index] {
					rowLets[e.Index] = true
				}
			}
		})
		same[i] = true
	}
	for i := range k.Steps {
		if rowLets[i] {
			d.RowLets = append(d.RowLets, i)
		}
	}
	for i := range r.Reductions {
		if reds[i] {
			d.Reductions = append(d.Reductions, i)
		}
	}
	return steps, d
}

// Walk calls f on e and every node below it.
func Walk(e *Expr, f func(*Expr)) {
	f(e)
	for _, a := range e.Args {
		Walk(a, f)
	}
}

// SegmentBindings returns the bindings of one role and segment, in order.
func (k *Kernel) SegmentBindings(seg int, r Role) []Binding {
	var out []Binding
	for _, b := range k.BindingsOf(r) {
		if b.Segment == seg {
			out = append(out, b)
		}
	}
	return out
}

// NumSegments is 1, or the number of segments of a multi-segment kernel.
func (k *Kernel) NumSegments() int { return max(1, len(k.Segments)) }

// FormatExpr writes e in the formula language (reductions by their calls),
// for comments in generated code.
func (k *Kernel) FormatExpr(e *Expr) string {
	switch e.Op {
	case OpLiteral:
		return e.Text
	case OpRef:
		if r, ok := k.Schedule.(*Rows); ok && e.Ref == RefReduce {
			red := r.Reductions[e.Index]
			return red.Op.Func() + "(" + k.FormatExpr(red.Arg) + ")"
		}
		if e.Ref == RefGather {
			return k.formatIndex(e)
		}
		return e.Name
	case OpUnary:
		return e.Operator + k.formatOperand(e.Args[0], 7)
	case OpBinary:
		p := opPrec(e.Operator)
		return k.formatOperand(e.Args[0], p) + " " + e.Operator + " " + k.formatOperand(e.Args[1], p+1)
	case OpCall:
		var args []string
		for _, a := range e.Args {
			args = append(args, k.FormatExpr(a))
		}
		return e.Func + "(" + strings.Join(args, ", ") + ")"
	}
	return "?"
}

func (k *Kernel) formatOperand(e *Expr, min int) string {
	s := k.FormatExpr(e)
	p := 8
	switch e.Op {
	case OpBinary:
		p = opPrec(e.Operator)
	case OpUnary:
		p = 7
	}
	if p < min {
		return "(" + s + ")"
	}
	return s
}

func opPrec(op string) int {
	switch op {
	case "||":
		return 1
	case "&&":
		return 2
	case "==", "!=", "<", "<=", ">", ">=":
		return 3
	case "+", "-":
		return 4
	}
	return 5
}

// Describe implements Schedule: the passes in words, for comments and
// inventory.md.
func (r *Rows) Describe(k *Kernel) []string {
	var out []string
	for p := 1; p <= r.Passes+1; p++ {
		var what []string
		if p <= r.Passes {
			for i, red := range r.Reductions {
				if red.Level == p {
					what = append(what, ReductionName(i)+" = "+red.Op.Func()+"("+k.FormatExpr(red.Arg)+")")
				}
			}
		} else {
			for i, st := range k.Steps {
				if o, ok := r.Cols.ColOf(i); ok {
					what = append(what, fmt.Sprintf("fold %s's term %s into its chunk's partials (%s)", st.Name, k.FormatExpr(st.Expr), o.Func()))
				} else if st.Output && !r.Info[i].PerRow && !r.TopK.Has(i) {
					what = append(what, "store "+st.Name)
				}
			}
			if r.TopK != nil {
				what = append(what, r.describeTopK(k, len(what) > 0))
			}
		}
		var reads []string
		for _, i := range r.Reads[p-1] {
			src := "device memory"
			if contains(r.Cached, i) && !firstRead(r, i, p) {
				src = "registers when the row fits"
			}
			reads = append(reads, fmt.Sprintf("%s (%s)", k.inputName(i), src))
		}
		reads = append(reads, r.describeGathers(k, p)...)
		line := fmt.Sprintf("pass %d: %s; reads %s", p, strings.Join(what, ", "), strings.Join(reads, ", "))
		for _, c := range r.LetCache {
			switch {
			case c.Pass == p:
				line += fmt.Sprintf("; keeps %s in registers for pass %s (CUDA, when the row fits)", k.Steps[c.Step].Name, joinInts(c.Users))
			case contains(c.Users, p):
				line += fmt.Sprintf("; takes %s from pass %d's registers there instead of recomputing it", k.Steps[c.Step].Name, c.Pass)
			}
		}
		out = append(out, line)
	}
	if c := r.Cols; c != nil {
		out = append(out, fmt.Sprintf("then: %s", c.Combine.Comment))
		if c.HasTotal() {
			out = append(out, fmt.Sprintf("then: %s", c.Total.Comment))
		}
	}
	return out
}

// inputName is the spec's name of input i (without a segment prefix).
func (k *Kernel) inputName(i int) string {
	name := k.BindingsOf(Input)[i].Name
	if len(k.Segments) > 0 {
		name = strings.TrimPrefix(name, k.Segments[0]+"_")
	}
	return name
}

// FirstRead reports whether pass p is the first to read input i.
func (r *Rows) FirstRead(i, p int) bool { return firstRead(r, i, p) }

func firstRead(r *Rows, i, p int) bool {
	for q := 1; q < p; q++ {
		if contains(r.Reads[q-1], i) {
			return false
		}
	}
	return true
}

// IsCached reports whether input i is kept in registers between passes.
func (r *Rows) IsCached(i int) bool { return contains(r.Cached, i) }

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
