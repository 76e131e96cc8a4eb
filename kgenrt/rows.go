package kgenrt

import (
	"fmt"
	"math"
)

// Rowwise kernels reduce over the last axis. Their tensors are [rows, cols]
// (any leading dims: rows is their product) or, for inputs declared
// `shape: row`, [cols] vectors shared by every row. A multi-segment kernel
// has one such problem per segment, each with its own tensors and rows and
// one shared cols.

// simdWidth is the lanes of an Apple simdgroup.
const simdWidth = 32

// LanesPerRow is how many threads of a threadgroup of tg threads share a row
// of cols values: the smallest power of two from 32 up to tg with at most 4
// values per lane. It must agree with ir.LanesPerRow (a test checks it).
func LanesPerRow(cols, tg int) int {
	w := simdWidth
	for w < tg && w*4 < cols {
		w *= 2
	}
	return w
}

// RowsPerGroup is the size field rows_per_group a launcher passes: how many
// rows one threadgroup of tg threads works on.
func RowsPerGroup(cols, tg int) int { return tg / LanesPerRow(cols, tg) }

// CheckRows checks the tensors of a rowwise launch against the binding
// table: dtypes as Check does; every [rows, cols] tensor of a segment has the
// shape of the segment's first one; all segments share cols (the last dim);
// row vectors are [cols]; outputs overlap nothing but an identical input. It
// returns the variant, the rows of each segment and cols.
func (k *Kernel) CheckRows(tensors ...*Tensor) (*Variant, []int, int, error) {
	bs := k.Tensors()
	if len(tensors) != len(bs) {
		return nil, nil, 0, fmt.Errorf("kgenrt: kernel %s takes %d tensors, got %d", k.Name, len(bs), len(tensors))
	}
	nseg := 1
	for i, t := range tensors {
		if t == nil {
			return nil, nil, 0, k.tensorErr(bs[i], "is nil")
		}
		nseg = max(nseg, bs[i].Segment+1)
	}
	v, err := k.variantOf(bs, tensors)
	if err != nil {
		return nil, nil, 0, err
	}
	rows := make([]int, nseg)
	first := make([]int, nseg)
	for s := range first {
		first[s] = -1
	}
	cols, colsFrom := -1, -1
	for i, t := range tensors {
		b := bs[i]
		want := b.DType
		if want == T {
			want = v.DType
		}
		if t.dtype != want {
			return nil, nil, 0, &DTypeError{Kernel: k.Name, Tensor: b.Name, DType: t.dtype, Want: want, Pinned: b.DType != T}
		}
		if b.Row {
			continue
		}
		if len(t.shape) == 0 {
			return nil, nil, 0, k.tensorErr(b, "has no dimensions; want [rows, cols]")
		}
		c := t.shape[len(t.shape)-1]
		switch {
		case first[b.Segment] >= 0:
			if f := tensors[first[b.Segment]]; !sameShape(t.shape, f.shape) {
				return nil, nil, 0, k.tensorErr(b, fmt.Sprintf("has shape %v, want %v (the shape of %s)", t.shape, f.shape, bs[first[b.Segment]].Name))
			}
		case cols >= 0 && c != cols:
			return nil, nil, 0, k.tensorErr(b, fmt.Sprintf("has %d columns (shape %v), want %d (the columns of %s)", c, t.shape, cols, bs[colsFrom].Name))
		default:
			first[b.Segment] = i
			cols, colsFrom = c, i
			r := 1
			for _, d := range t.shape[:len(t.shape)-1] {
				r *= d
			}
			rows[b.Segment] = r
		}
		if int64(t.Len()) > k.MaxElems() {
			return nil, nil, 0, k.tensorErr(b, fmt.Sprintf("has %d elements; kernel %s takes at most %d", t.Len(), k.Name, k.MaxElems()))
		}
	}
	if cols < 0 {
		return nil, nil, 0, fmt.Errorf("kgenrt: kernel %s has no [rows, cols] tensor", k.Name)
	}
	for i, t := range tensors {
		if bs[i].Row && (len(t.shape) != 1 || t.shape[0] != cols) {
			return nil, nil, 0, k.tensorErr(bs[i], fmt.Sprintf("has shape %v, want [%d] (a row vector of cols = the last dim of %s)", t.shape, cols, bs[colsFrom].Name))
		}
	}
	if err := k.checkOverlap(bs, tensors); err != nil {
		return nil, nil, 0, err
	}
	return v, rows, cols, nil
}

// RowsOf64 checks the input lengths of a rowwise float64 evaluation (in
// input binding order) against cols and returns each segment's rows: a row
// vector has cols values, the other inputs of a segment a whole number of
// rows, all the same.
func (k *Kernel) RowsOf64(cols int, lens ...int) ([]int, error) {
	ins := k.Inputs()
	if len(lens) != len(ins) {
		return nil, fmt.Errorf("kgenrt: kernel %s takes %d inputs, got %d", k.Name, len(ins), len(lens))
	}
	if cols < 0 {
		return nil, fmt.Errorf("kgenrt: kernel %s: negative cols %d", k.Name, cols)
	}
	nseg := 1
	for _, b := range ins {
		nseg = max(nseg, b.Segment+1)
	}
	rows := make([]int, nseg)
	seen := make([]bool, nseg)
	for i, b := range ins {
		n := lens[i]
		if b.Row {
			if n != cols {
				return nil, k.tensorErr(b, fmt.Sprintf("has %d values, want cols = %d", n, cols))
			}
			continue
		}
		r := 0
		if cols > 0 {
			if n%cols != 0 {
				return nil, k.tensorErr(b, fmt.Sprintf("has %d values, not a whole number of rows of %d", n, cols))
			}
			r = n / cols
		}
		if seen[b.Segment] && r != rows[b.Segment] {
			return nil, k.tensorErr(b, fmt.Sprintf("has %d rows, want %d", r, rows[b.Segment]))
		}
		rows[b.Segment], seen[b.Segment] = r, true
	}
	return rows, nil
}

// RunCPU64Rows evaluates a rowwise kernel's formulas in float64 on inputs
// in binding order with rows of cols values.
func (k *Kernel) RunCPU64Rows(cols int, inputs [][]float64, params ...float64) ([][]float64, error) {
	if err := k.counts("RunCPU64Rows", len(inputs), len(k.Inputs()), len(params), k.CPU64Rows == nil); err != nil {
		return nil, err
	}
	return k.CPU64Rows(cols, inputs, params)
}

// RowOp is a row reduction.
type RowOp int

// The row reductions of the formula language.
const (
	RowSum RowOp = iota
	RowMean
	RowMax
	RowMin
)

// RowAcc accumulates one row reduction in float32 as the generated kernels
// do: lane j%lanes adds element j in order, then the lanes of each
// simdgroup are combined in lane order, then the simdgroups in order.
// max and min ignore NaN operands (IEEE maxNum/minNum, MSL fmax/fmin).
type RowAcc struct {
	op    RowOp
	lanes []float32
}

// NewRowAcc returns an empty accumulator over lanes lanes.
func NewRowAcc(op RowOp, lanes int) *RowAcc {
	a := &RowAcc{op: op, lanes: make([]float32, lanes)}
	for i := range a.lanes {
		a.lanes[i] = a.identity()
	}
	return a
}

func (a *RowAcc) identity() float32 {
	switch a.op {
	case RowMax:
		return float32(math.Inf(-1))
	case RowMin:
		return float32(math.Inf(1))
	}
	return 0
}

func (a *RowAcc) combine(x, y float32) float32 {
	switch a.op {
	case RowMax:
		return float32(maxNum(float64(x), float64(y)))
	case RowMin:
		return float32(-maxNum(-float64(x), -float64(y)))
	}
	return x + y
}

// Add accumulates element j's term v.
func (a *RowAcc) Add(j int, v float32) {
	l := j % len(a.lanes)
	a.lanes[l] = a.combine(a.lanes[l], v)
}

// Result combines the lanes; RowMean divides the sum by cols in float32.
func (a *RowAcc) Result(cols int) float32 {
	var parts []float32
	for s := 0; s < len(a.lanes); s += simdWidth {
		p := a.lanes[s]
		for l := s + 1; l < min(s+simdWidth, len(a.lanes)); l++ {
			p = a.combine(p, a.lanes[l])
		}
		parts = append(parts, p)
	}
	r := parts[0]
	for _, p := range parts[1:] {
		r = a.combine(r, p)
	}
	if a.op == RowMean {
		return r / float32(cols)
	}
	return r
}

// RowAcc64 accumulates one row reduction in float64, in element order.
type RowAcc64 struct {
	op RowOp
	v  float64
}

// NewRowAcc64 returns an empty float64 accumulator.
func NewRowAcc64(op RowOp) *RowAcc64 {
	a := &RowAcc64{op: op}
	switch op {
	case RowMax:
		a.v = math.Inf(-1)
	case RowMin:
		a.v = math.Inf(1)
	}
	return a
}

// Add accumulates the next term.
func (a *RowAcc64) Add(v float64) {
	switch a.op {
	case RowMax:
		a.v = maxNum(a.v, v)
	case RowMin:
		a.v = -maxNum(-a.v, -v)
	default:
		a.v += v
	}
}

// Result is the reduction; RowMean divides the sum by cols.
func (a *RowAcc64) Result(cols int) float64 {
	if a.op == RowMean {
		return a.v / float64(cols)
	}
	return a.v
}

func maxNum(a, b float64) float64 {
	switch {
	case math.IsNaN(a):
		return b
	case math.IsNaN(b):
		return a
	}
	return math.Max(a, b)
}
