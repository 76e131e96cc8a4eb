package ir

import "math"

// ColFold is the float64 reference of one [cols] output (Cols) with its
// running error bound: EvalRowsBound gives, row by row, the output's term
// at every column with its bound; Add folds them in row order and Result
// finishes the reduction.
//
// A sum's bound is the sum of its terms' bounds plus D·u·Σ|terms|, D the
// depth of the kernels' order (Cols.Depth: the chunk's rows, a way's
// chunks, the ways) and u the float accumulators' unit roundoff; col_mean
// adds the rounding of the division by rows; max and min keep the largest
// term bound (their result is one of the terms).
type ColFold struct {
	op   ReduceOp
	cols *Cols
	acc  []rowAcc
	rows int
	// whole marks a total_sum output: Total, not Result, finishes it.
	whole bool
}

// NewColFolds returns one ColFold per [cols] output, in Cols.Outputs
// order, over cols columns.
func (k *Kernel) NewColFolds(cols int) []*ColFold {
	c := k.ColReductions()
	if c == nil {
		return nil
	}
	var out []*ColFold
	for _, o := range c.Outputs {
		f := &ColFold{op: o.Op, cols: c, acc: make([]rowAcc, cols), whole: o.Whole}
		for j := range f.acc {
			f.acc[j].v = o.Op.Identity()
		}
		out = append(out, f)
	}
	return out
}

// Add folds one row's terms (vals) and their bounds.
func (f *ColFold) Add(vals, bounds []float64) {
	for j := range f.acc {
		f.acc[j].add(f.op, dual{vals[j], bounds[j]})
	}
	f.rows++
}

// Result is the reduction at every column with its bound; r is the
// rounding the terms were evaluated with (Unit 0: no accumulation error).
func (f *ColFold) Result(r Rounding) (vals, bounds []float64) {
	depth := float64(f.cols.Depth(f.rows))
	rounds := boolf(r.Unit > 0)
	for _, a := range f.acc {
		v, e := a.v, a.e
		switch {
		case f.op.Sums():
			e += depth * accumUnit * a.abs * rounds
			if f.op.Divides() {
				v, e = v/float64(f.rows), e/float64(f.rows)
				e += accumUnit * math.Abs(v) * rounds
			}
		}
		vals, bounds = append(vals, v), append(bounds, e)
	}
	return vals, bounds
}
