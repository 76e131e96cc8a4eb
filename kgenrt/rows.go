package kgenrt

import "math"

// Row reductions for the CPU references of rowwise kernels, which reduce
// over the last axis (see Binding.Shape for how their tensors are checked).

// simdWidth is the lanes of an Apple simdgroup.
const simdWidth = 32

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
	// butterfly: the one simdgroup's lanes combine by shuffle-xor at
	// offsets 16, 8, 4, 2, 1 (a matmul's row passes) instead of in lane
	// order (the rowwise kernels' simd reductions).
	butterfly bool
}

// NewRowAccButterfly is NewRowAcc for a matmul's row passes: one
// simdgroup of 32 lanes per row, combined by the xor butterfly the kernel
// writes out (emit/cfam matmul_rows.go), so the sum rounds in its order.
func NewRowAccButterfly(op RowOp) *RowAcc {
	a := NewRowAcc(op, simdWidth)
	a.butterfly = true
	return a
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

// combine is one step of the reduction, the accumulator x first. max and
// min of two equal values keep x: the kernel's fmax(acc, v) and the simd
// reductions' fold in lane order keep their first operand when the two
// compare equal, so a row's max of -0 and +0 is whichever came first, not
// +0 as math.Max would have it (issue 27: 1/(x*-0 + row_max(z)*0) gave +Inf
// where the kernel gives -Inf).
func (a *RowAcc) combine(x, y float32) float32 {
	switch a.op {
	case RowMax:
		return firstMax(x, y)
	case RowMin:
		return -firstMax(-x, -y)
	}
	return x + y
}

// firstMax is IEEE maxNum (a NaN operand yields the other) that returns x
// when x and y compare equal (±0).
func firstMax(x, y float32) float32 {
	switch {
	case x != x:
		return y
	case y != y:
		return x
	case y > x:
		return y
	}
	return x
}

// Add accumulates element j's term v.
func (a *RowAcc) Add(j int, v float32) {
	l := j % len(a.lanes)
	a.lanes[l] = a.combine(a.lanes[l], v)
}

// Result combines the lanes; RowMean divides the sum by cols in float32.
func (a *RowAcc) Result(cols int) float32 {
	if a.butterfly {
		return a.finish(a.xorButterfly(), cols)
	}
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
	return a.finish(r, cols)
}

// finish is the reduction's value from the combined lanes r.
func (a *RowAcc) finish(r float32, cols int) float32 {
	if a.op == RowMean {
		return r / float32(cols)
	}
	return r
}

// xorButterfly is lane 0's value after the kernel's butterfly: at each
// offset o every lane l combines its value (first) with lane l^o's.
func (a *RowAcc) xorButterfly() float32 {
	v := append([]float32(nil), a.lanes...)
	next := make([]float32, len(v))
	for o := len(v) / 2; o > 0; o /= 2 {
		for l := range v {
			next[l] = a.combine(v[l], v[l^o])
		}
		v, next = next, v
	}
	return v[0]
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
