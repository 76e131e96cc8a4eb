package ir

import "math"

// accumUnit is the unit roundoff of the row accumulators: kgen's kernels
// accumulate row_sum and row_mean in float whatever the compute type.
const accumUnit = 0x1p-24

// EvalRows evaluates one row of a rowwise kernel in float64 with no rounding:
// in[i] is input i's row (cols values; for a [cols] input, the vector; for
// a [rows] input, the row's one value), params are in order; the outputs
// come back in order, cols values each (one for a [rows] output).
func (k *Kernel) EvalRows(in [][]float64, params []float64) [][]float64 {
	vals, _ := k.EvalRowsBound(in, params, Rounding{})
	return vals
}

// EvalRowsBound is EvalRows with EvalBound's running error analysis. A
// reduction's bound is the sum of its terms' bounds (max for row_max and
// row_min) plus D·u·Σ|terms| for the float accumulation, where D is the
// depth of the summation as the kernel runs it: each lane's strided chain
// (ceil(cols/lanes)), one simdgroup (32) and the simdgroups of a row; any
// order with a shallower tree, Apple's simd_sum included, is within it.
func (k *Kernel) EvalRowsBound(in [][]float64, params []float64, r Rounding) (vals, bounds [][]float64) {
	return k.EvalRowsBoundAt(0, 1, in, params, r)
}

// EvalRowsBoundAt is EvalRowsBound for row `row` of `rows` (of its
// segment): the values the formulas' integers row and rows take.
func (k *Kernel) EvalRowsBoundAt(row, rows int, in [][]float64, params []float64, r Rounding) (vals, bounds [][]float64) {
	return k.EvalRowsBoundSized(row, rows, nil, nil, in, params, r)
}

// EvalRowsBoundSized is EvalRowsBoundAt given the launch's size fields
// (nil: cols from the inputs) and each input's whole tensor (whole[i], nil
// for none), which its gathers read at their coordinates (gather.go); an
// indexable input's in[i] may be its whole tensor too.
func (k *Kernel) EvalRowsBoundSized(row, rows int, sizes map[string]int, whole, in [][]float64, params []float64, r Rounding) (vals, bounds [][]float64) {
	e := k.rowEvalAt(row, rows, sizes, whole, in, params, r)
	return e.selectTopK(e.outputs())
}

// rowEvalAt runs a row's passes up to the write pass, for outputs.
func (k *Kernel) rowEvalAt(row, rows int, sizes map[string]int, whole, in [][]float64, params []float64, r Rounding) *rowEval {
	cols := rowCols(k, in)
	if c, ok := sizes["cols"]; ok {
		cols = c
	}
	sched := k.Schedule.(*Rows)
	lanes := LanesPerRow(cols, k.Threadgroup)
	e := &rowEval{
		k: k, rows: sched, in: in, cols: cols, elem: make([]float64, len(in)),
		env: boundEnv{k: k, params: params, r: r, pairs: make([]float64, len(in)),
			lets: make([]dual, len(k.Steps)), reds: make([]dual, len(sched.Reductions)),
			ints: map[string]int32{"row": int32(row), "rows": int32(rows), "cols": int32(cols)}},
		depth: float64((cols+lanes-1)/lanes + SimdWidth + lanes/SimdWidth),
		sizes: sizes, whole: whole,
	}
	e.perRow = make([]bool, len(in))
	for i, b := range k.SegmentBindings(0, Input) {
		if b.IsPerRow() { // one value for the whole row
			e.elem[i], e.perRow[i] = in[i][0], true
		}
	}
	e.env.inputs = e.elem
	for p := 1; p <= sched.Passes; p++ {
		e.rowLets(p - 1)
		e.finishReductions(p, e.accumulate(p))
	}
	e.rowLets(sched.Passes)
	return e
}

// EvalMatmulRowBound is EvalRowsBound for row at.Row of a row-reducing
// matmul (Matmul.Rows; at.Col is set per element, n is at.N): in[e] is
// epilogue input e at the row's n elements
// (an [m] input repeated), accs[b] and accErrs[b] accumulator b and its
// error bound there. The summation depth is the row-owning kernel's: each
// of 32 lanes sums a strided chain of ceil(n/32) terms, then a butterfly
// of 5 levels (32 covers it).
func (k *Kernel) EvalMatmulRowBound(at MatmulAt, in, accs, accErrs [][]float64, params []float64, r Rounding) (vals, bounds [][]float64) {
	rows, n := k.Rows(), at.N
	e := &rowEval{
		k: k, rows: rows, in: in, cols: n, elem: make([]float64, len(in)), accIn: accs, accErr: accErrs,
		perRow: make([]bool, len(in)), // an [m] input comes repeated along the row
		env: boundEnv{k: k, params: params, r: r, accs: make([]dual, len(accs)), ints: at.ints(),
			lets: make([]dual, len(k.Steps)), reds: make([]dual, len(rows.Reductions))},
		depth: float64((n+SimdWidth-1)/SimdWidth + SimdWidth),
	}
	for p := 1; p <= rows.Passes; p++ {
		e.rowLets(p - 1)
		e.finishReductions(p, e.accumulate(p))
	}
	e.rowLets(rows.Passes)
	return e.outputs()
}

// rowEval is the state of one EvalRowsBound call, shared by its passes.
type rowEval struct {
	k    *Kernel
	rows *Rows
	in   [][]float64
	// accIn and accErr are a matmul's accumulators along the row and
	// their bounds, by B (nil for a rowwise kernel).
	accIn, accErr [][]float64
	cols          int
	elem          []float64 // the inputs at the current column
	perRow        []bool    // by input: one value for the whole row (set once, not per column)
	env           boundEnv
	depth         float64        // summation depth D of the float accumulators
	sizes         map[string]int // the launch's size fields (EvalRowsBoundSized), nil when not given
	whole         [][]float64    // each input's whole tensor, for its gathers (EvalRowsBoundSized)
	// paired and pairedSet keep pairInputs, which setElem asks for at
	// every element: listing the bindings each time was a tenth of
	// kgen verify's reference time.
	paired    []int
	pairedSet bool
}

// rowAcc is one reduction's running value, error bound and Σ|terms|.
type rowAcc struct {
	v, e, abs float64
	// exactInf: a sum met an infinite term known exactly (an infinite
	// input, say), and unbounded: a term whose bound is infinite. A sum
	// with an exact infinite term and no unbounded one is that infinity
	// (or NaN, with the opposite one) in any order: no rounding to bound.
	exactInf, unbounded bool
}

// rowCols is the row length: the length of the first [rows, cols] input.
func rowCols(k *Kernel, in [][]float64) int {
	for i, b := range k.SegmentBindings(0, Input) {
		if len(b.Shape) == 2 && !b.IsIndexable() && !b.IsPacked() {
			return len(in[i])
		}
	}
	return 0
}

// setElem points the environment's inputs at column j.
func (e *rowEval) setElem(j int) {
	for i := range e.in {
		if !e.perRow[i] && j < len(e.in[i]) { // an indexable input is read by its gathers
			e.elem[i] = e.in[i][j]
		}
	}
	pj := -1
	for _, i := range e.pairInputs() {
		if pj < 0 {
			pj = e.pairCol(j)
		}
		e.env.pairs[i] = e.in[i][pj]
	}
	e.env.ints["col"] = int32(j)
	e.env.inputs = e.elem
	e.setGathers()
	for b := range e.accIn {
		e.env.accs[b] = dual{e.accIn[b][j], e.accErr[b][j]}
	}
}

// pairCol is the column paired with j: PairCol, or PairColWidth at the
// row's pair width (evaluated after the level-0 per-row lets it may use).
func (e *rowEval) pairCol(j int) int {
	if e.rows.PairWidth == nil {
		return PairCol(e.rows.Pair, j, e.cols)
	}
	w, _ := e.env.evalInt(e.rows.PairWidth)
	return PairColWidth(j, e.cols, int(w))
}

// pairInputs lists the inputs read at the paired element (Binding.Paired).
func (e *rowEval) pairInputs() []int {
	if e.pairedSet {
		return e.paired
	}
	e.pairedSet = true
	if e.rows == nil || e.rows.Pair == "" {
		return nil
	}
	for i, b := range e.k.SegmentBindings(0, Input) {
		if b.Paired {
			e.paired = append(e.paired, i)
		}
	}
	return e.paired
}

// elemLets evaluates the per-element lets available by pass p.
func (e *rowEval) elemLets(p int) {
	for i, st := range e.k.Steps {
		if !st.Output && !e.rows.Info[i].PerRow && e.rows.Info[i].Level < p {
			e.env.lets[i] = e.env.eval(st.Expr)
		}
	}
}

// rowLets evaluates the per-row lets of the given level, once per row.
func (e *rowEval) rowLets(level int) {
	for i, st := range e.k.Steps {
		if !st.Output && e.rows.Info[i].PerRow && e.rows.Info[i].Level == level {
			e.env.lets[i] = e.env.eval(st.Expr)
		}
	}
}

// accumulate runs pass p over the row, feeding every reduction of level p.
func (e *rowEval) accumulate(p int) []rowAcc {
	accs := make([]rowAcc, len(e.rows.Reductions))
	for ri, red := range e.rows.Reductions {
		accs[ri].v = red.Op.Identity()
	}
	for j := 0; j < e.cols; j++ {
		e.setElem(j)
		e.elemLets(p)
		for ri, red := range e.rows.Reductions {
			if red.Level == p {
				accs[ri].add(red.Op, e.env.eval(red.Arg))
			}
		}
	}
	return accs
}

// add folds one term d into the accumulator of a reduction: sums add their
// terms' bounds, max and min keep the largest. A NaN term, which max and
// min pass over (Fold), brings no bound either: its NaN bound (an input
// rounded to the compute type, say) would otherwise make the row's bound
// NaN, and parity would judge the whole row by the tolerance alone.
func (a *rowAcc) add(op ReduceOp, d dual) {
	acc := a.v
	a.v = op.Fold(a.v, d.v)
	if op.Sums() {
		a.e += d.e
		a.abs += math.Abs(d.v)
		a.exactInf = a.exactInf || exactInf(d)
		a.unbounded = a.unbounded || math.IsInf(d.e, 1)
		return
	}
	if math.IsNaN(d.v) && !math.IsNaN(acc) {
		return
	}
	a.e = math.Max(a.e, d.e)
}

// finishReductions turns the accumulators of pass p into the reductions'
// values, adding the float accumulation's rounding to their bounds.
func (e *rowEval) finishReductions(p int, accs []rowAcc) {
	env, r := &e.env, e.env.r
	for ri, red := range e.rows.Reductions {
		if red.Level != p {
			continue
		}
		a := accs[ri]
		if red.Op.Sums() && a.exactInf && !a.unbounded && (math.IsInf(a.v, 0) || math.IsNaN(a.v)) {
			env.reds[ri] = dual{a.v, 0} // an exact infinite term decides the sum (a mean: ∞/n = ∞)
			continue
		}
		switch red.Op {
		case ReduceSum:
			env.reds[ri] = env.round(a.v, a.e+e.depth*accumUnit*a.abs*boolf(r.Unit > 0))
		case ReduceMean:
			n := float64(e.cols)
			err := (a.e + e.depth*accumUnit*a.abs*boolf(r.Unit > 0)) / n
			v := a.v / n
			env.reds[ri] = env.round(v, err+accumUnit*math.Abs(v)*boolf(r.Unit > 0))
		default:
			env.reds[ri] = dual{a.v, a.e}
		}
	}
}

// outputs runs the write pass: every per-element output step at every
// column; a [rows] output is one value, evaluated once.
func (e *rowEval) outputs() (vals, bounds [][]float64) {
	for i, st := range e.k.Steps {
		if !st.Output {
			continue
		}
		n := e.cols
		if e.rows.Info[i].PerRow {
			n = 1
			d := e.env.eval(st.Expr)
			vals, bounds = append(vals, []float64{d.v}), append(bounds, []float64{d.e})
			continue
		}
		vals, bounds = append(vals, make([]float64, n)), append(bounds, make([]float64, n))
	}
	for j := 0; j < e.cols; j++ {
		e.setElem(j)
		e.elemLets(e.rows.Passes + 1)
		o := 0
		for i, st := range e.k.Steps {
			if st.Output && e.rows.Info[i].PerRow {
				o++
			} else if st.Output {
				d := e.env.eval(st.Expr)
				vals[o][j], bounds[o][j] = d.v, d.e
				o++
			}
		}
	}
	return vals, bounds
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
