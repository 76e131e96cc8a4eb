package kgenrt

// Column reductions for the CPU references of rowwise kernels with [cols]
// outputs (col_sum, col_mean, col_max, col_min): one value per column over
// every row. The constants mirror the generator's (ir.ColChunk, ir.ColWays;
// a test holds them equal).

// The column schedule: rows fold into chunk partials ColChunk at a time, in
// order; the combine folds every ColWays-th chunk per way, then the ways.
const (
	ColChunk = 8
	ColWays  = 8
)

// ColAcc accumulates the column reductions of one [cols] output in float32
// in the generated kernels' order, so the reference gives the kernels' bits
// for the same terms: row r's term at column j folds into partial
// r/ColChunk (the chunk's first row stores it), and Result folds way w's
// chunks w, w+ColWays, … from the identity, then the ways in order.
// max and min ignore NaN operands and keep the first of two equal values
// (RowAcc.combine).
type ColAcc struct {
	acc  RowAcc // op and combine; its lanes are unused
	rows int
	cols int
	part []float32 // [chunks][cols]
}

// NewColAcc returns an accumulator for rows rows of cols columns.
func NewColAcc(op RowOp, rows, cols int) *ColAcc {
	chunks := CeilDiv(rows, ColChunk)
	return &ColAcc{acc: RowAcc{op: op}, rows: rows, cols: cols, part: make([]float32, chunks*cols)}
}

// Add folds row row's term v at column j; rows come in order.
func (a *ColAcc) Add(row, j int, v float32) {
	p := &a.part[row/ColChunk*a.cols+j]
	if row%ColChunk == 0 {
		*p = v
		return
	}
	*p = a.acc.combine(*p, v)
}

// Result is column j's reduction; RowMean divides the sum by rows in
// float32 (0 rows: 0/0, NaN).
func (a *ColAcc) Result(j int) float32 {
	chunks := len(a.part) / max(a.cols, 1)
	r := a.acc.identity()
	for w := range ColWays {
		p := a.acc.identity()
		for c := w; c < chunks; c += ColWays {
			p = a.acc.combine(p, a.part[c*a.cols+j])
		}
		r = a.acc.combine(r, p)
	}
	if a.acc.op == RowMean {
		return r / float32(a.rows)
	}
	return r
}

// ColAcc64 accumulates the column reductions of one [cols] output in
// float64, in row order.
type ColAcc64 struct {
	rows int
	cols []*RowAcc64
}

// NewColAcc64 returns an accumulator for rows rows of cols columns.
func NewColAcc64(op RowOp, rows, cols int) *ColAcc64 {
	a := &ColAcc64{rows: rows, cols: make([]*RowAcc64, cols)}
	for j := range a.cols {
		a.cols[j] = NewRowAcc64(op)
	}
	return a
}

// Add folds the next row's term v at column j.
func (a *ColAcc64) Add(_, j int, v float64) { a.cols[j].Add(v) }

// Result is column j's reduction; RowMean divides the sum by rows.
func (a *ColAcc64) Result(j int) float64 { return a.cols[j].Result(a.rows) }

// TotalWays is the ways of a total_sum's last launch (ir.TotalWays).
const TotalWays = 256

// Total is a total_sum output: the column sums (Result) folded in the
// kernels' order, way w taking columns w, w+TotalWays, … from 0, then the
// ways in order.
func (a *ColAcc) Total() float32 {
	var r float32
	for w := range TotalWays {
		var p float32
		for j := w; j < a.cols; j += TotalWays {
			p += a.Result(j)
		}
		r += p
	}
	return r
}

// Total is a total_sum output: the column sums in column order.
func (a *ColAcc64) Total() float64 {
	var r float64
	for j := range a.cols {
		r += a.Result(j)
	}
	return r
}
