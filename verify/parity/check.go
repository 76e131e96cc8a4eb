package parity

import (
	"bytes"
	"fmt"
	"math"
	"slices"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// check is the state of one variant at one shape, shared by the kind's
// reference walk and the kind-neutral judgement.
type check struct {
	k        *ir.Kernel
	v        ir.Variant
	gen      shapeGen
	opts     Options
	sizes    map[string]int // every size field of the launch, derived ones included
	vals     [][]float64    // inputs as stored, by binding index
	params   []float64
	rounding ir.Rounding
	got      [][]byte // the kernel's buffers after the first run
	res      Result
	worst    float64 // largest excess seen so far
}

// count is the elements of tensor b: the product of its Shape's sizes.
func (c *check) count(b ir.Binding) int { return storedCount(b, c.sizes) }

// visitor receives one output element of the reference walk: output b's
// element idx, the row it belongs to (-1 for kinds without rows), and its
// float64 reference with the rounding bound.
type visitor func(b ir.Binding, idx, row int, want, bound float64)

// sampler is the reference walk's visitor: judgeLane, and when the
// options ask for samples and the launch is small enough, the bounds of a
// Sample that done hands over once the walk is over (see Differ).
func (c *check) sampler(in [][]byte) (visit visitor, done func()) {
	outs := c.k.BindingsOf(ir.Output)
	total := 0
	for _, b := range outs {
		total += c.count(b)
	}
	if c.opts.Sample == nil || c.opts.Mutate != NoMutation || total == 0 || total > MaxSampleElems {
		return c.judgeLane, func() {}
	}
	s := &Sample{Kernel: c.k, Variant: c.v, Sizes: c.sizes, Params: c.params, In: in, Got: c.got,
		Bounds: make([][]float64, len(c.k.Bindings))}
	for _, b := range outs {
		s.Bounds[b.Index] = make([]float64, c.count(b))
	}
	visit = func(b ir.Binding, idx, row int, w, bound float64) {
		c.judgeLane(b, idx, row, w, bound)
		s.Bounds[b.Index][idx] = bound
	}
	return visit, func() { c.opts.Sample(s) }
}

// judgeLane judges one element: it updates the counts and statistics and
// records the lane if it failed or is the worst so far.
func (c *check) judgeLane(b ir.Binding, idx, row int, w, bound float64) {
	t := elemType(b, c.v)
	g := decode(c.got[b.Index], t, idx)
	c.tally(row, w, bound)
	allowed, ok, note := judge(g, w, bound, t, c.v.Tolerance)
	d := math.Abs(g - w)
	if !math.IsNaN(d) && !math.IsInf(d, 0) {
		if math.Abs(w) <= 1 { // above 1 the relative error is the meaningful one (max_rel)
			c.res.MaxAbs = math.Max(c.res.MaxAbs, d)
		}
		if math.Abs(w) >= LimitsOf(t).MinNormal {
			c.res.MaxRel = math.Max(c.res.MaxRel, d/math.Abs(w))
		}
	}
	excess := 0.0
	if g != dtype.Round(w, t) || !ok {
		excess = excessOf(g, w, allowed, note)
	}
	if !ok {
		c.res.Failed++
	}
	// A lane is described only where the report keeps it: building one
	// for every failing lane of a wrong kernel (every lane, for the
	// mutation tests) was most of their time.
	record := !ok && len(c.res.Failures) < maxFailures
	if excess <= c.worst && !record {
		return
	}
	lane := c.lane(b, idx)
	lane.Got, lane.Want, lane.Allowed, lane.Excess, lane.Note = g, w, allowed, excess, note
	if excess > c.worst {
		c.worst, c.res.Worst = excess, &lane
	}
	if record {
		c.res.Failures = append(c.res.Failures, lane)
	}
}

// tally counts a checked element and the undecided, NaN and Inf wants.
func (c *check) tally(row int, w, bound float64) {
	res := &c.res
	res.Checked++
	if math.IsInf(bound, 1) {
		res.Undecided++
	}
	switch {
	case math.IsNaN(w):
		res.NaNs++
		if row >= 0 && !slices.Contains(res.NaNRows, row) {
			res.NaNRows = append(res.NaNRows, row)
		}
	case math.IsInf(w, 0):
		res.Infs++
	}
}

// lane locates output element idx of b for the report, with the inputs it
// was computed from: those of b's segment, each at the same element, or,
// for an input of fewer elements (a [cols] row vector under a [rows, cols]
// output), at the element its trailing dimension broadcasts to. A 2-D
// output names the row and column, and what the row holds.
func (c *check) lane(b ir.Binding, idx int) Lane {
	l := Lane{N: c.sizes[b.Shape[0]], Index: idx, Output: b.Name}
	for _, in := range c.k.ElementInputs(b.Segment) {
		vals := c.vals[in.Index]
		if len(vals) == 0 {
			continue
		}
		at := idx % len(vals) // [n], [rows, cols] and [cols] tensors
		if len(b.Shape) == 2 && len(in.Shape) == 1 && in.Shape[0] == b.Shape[0] {
			at = idx / c.sizes[b.Shape[1]] // a matmul's [m]: one value per output row
		}
		l.Inputs = append(l.Inputs, in.Name)
		l.Values = append(l.Values, vals[at])
	}
	if len(b.Shape) == 2 {
		l.Cols = c.sizes[b.Shape[1]]
		l.Row, l.Col = idx/l.Cols, idx%l.Cols
		l.Kind = MixedRow
		if !c.opts.Plain {
			l.Kind = rowKindFor(c.k, l.Row, l.N)
		}
	}
	return l
}

var orderName = map[mslcpu.LaneOrder]string{mslcpu.Forward: "forward", mslcpu.Reverse: "reverse", mslcpu.Shuffled: "shuffled"}

// orderDiff counts the output elements whose bytes changed with the lane
// order: a race between the lanes of a threadgroup.
func (c *check) orderDiff(a, b [][]byte, oa, ob mslcpu.LaneOrder) {
	for _, out := range c.k.BindingsOf(ir.Output) {
		t := elemType(out, c.v)
		size := t.Size()
		for j := range c.count(out) {
			x, y := a[out.Index][j*size:(j+1)*size], b[out.Index][j*size:(j+1)*size]
			if bytes.Equal(x, y) {
				continue
			}
			c.res.Failed++
			if len(c.res.Failures) >= maxFailures {
				continue
			}
			l := c.lane(out, j)
			l.Got, l.Want, l.Excess = decode(b[out.Index], t, j), decode(a[out.Index], t, j), math.Inf(1)
			l.Note = fmt.Sprintf("%s lane order gives %s, %s order %s: a race between lanes", orderName[ob],
				num(l.Got), orderName[oa], num(l.Want))
			c.res.Failures = append(c.res.Failures, l)
		}
	}
}
