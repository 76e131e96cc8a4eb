package parity

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgenrt"
	"github.com/kgen-dev/kgen/launch"
)

// A batched matmul (ir.Kernel.Batched) is checked as a stack of the
// unbatched checks: its launch runs once over every batch element, each
// tensor laid out as a strided view with gaps between its rows and
// matrices (and operand A's batch dimensions stored in reverse order), so
// a kernel that ignored a stride, a group or a batch index reads a gap or
// another matrix. Gaps of inputs hold NaN (a read of one poisons its
// output); gaps of outputs must come back untouched. The reference then
// walks each batch element's matrices, gathered dense, exactly as the
// unbatched kind's reference walks one launch.

// BatchGap is the elements of padding after every row and every matrix of
// a batched matmul check's tensors.
const BatchGap = 3

// RowBatchGap is BatchGap for a batched rowwise or elementwise kernel: 8
// elements, so a row (a batch element's n elements) whose length is whole
// 16-byte vectors still starts 16-byte aligned and the vector paths run
// (ir.AlignedField), except where input 0 is read at a stride of 2 along
// its last dim (a NaN between its elements), which takes the scalar
// paths: a rowwise kernel at one row per batch element, an elementwise
// one at an odd n.
const RowBatchGap = 8

// rowColStride is the stride along the last dim of tensor b in a batched
// check at shape sh: 2 for input 0 where RowBatchGap says, else 1.
func rowColStride(k *ir.Kernel, b ir.Binding, sh shape) int {
	strided := (k.Kind == ir.Rowwise && sh.rows == 1) || (k.Kind == ir.Elementwise && sh.n%2 == 1)
	if b.Index == 0 && strided {
		return 2
	}
	return 1
}

// batchGap is the padding of kernel k's batched layouts.
func batchGap(k *ir.Kernel) int {
	if k.Kind != ir.KindMatmul {
		return RowBatchGap
	}
	return BatchGap
}

// batchSizes are the batch and group sizes a batched check runs at: the
// first batch dimension 2, the others 4 (two groups of 2 where a grouped
// tensor reads one: group 2; a baked group g makes that dimension 2·g).
func batchSizes(k *ir.Kernel) map[string]int {
	sizes := map[string]int{}
	for i, b := range k.Batch() {
		sizes[b] = 4
		if i == 0 {
			sizes[b] = 2
		}
	}
	for _, bd := range k.Bindings {
		for _, d := range bd.Batch {
			switch {
			case d.Group != "":
				sizes[d.Group] = 2
			case d.GroupConst > 0:
				sizes[d.Size] = 2 * d.GroupConst
			}
		}
	}
	return sizes
}

// dimSize is the size of one batch dimension of a tensor.
func dimSize(d ir.BatchDim, sizes map[string]int) int {
	switch {
	case d.Group != "":
		return sizes[d.Size] / max(sizes[d.Group], 1)
	case d.GroupConst > 0:
		return sizes[d.Size] / d.GroupConst
	}
	return sizes[d.Size]
}

// stridedLayout is one tensor's view in a batched check: its full shape
// (batch dimensions, then the matrix), element strides, and the buffer's
// length in elements.
type stridedLayout struct {
	shape, strides []int
	batch          int // matrices: the product of the batch dimensions
	elems          int // the buffer's length
}

// layoutOf lays tensor b out with gap elements after each row and each
// matrix, and its elements colStride apart along a row; reversed stores
// its batch dimensions innermost-first.
func layoutOf(b ir.Binding, sizes map[string]int, reversed bool, gap, colStride int) stridedLayout {
	var l stridedLayout
	l.batch = 1
	for _, d := range b.Batch {
		n := dimSize(d, sizes)
		l.shape = append(l.shape, n)
		l.batch *= n
	}
	for _, d := range b.Shape {
		l.shape = append(l.shape, sizes[d])
	}
	l.strides = make([]int, len(l.shape))
	nb := len(b.Batch)
	stride := colStride
	for j := len(l.shape) - 1; j >= nb; j-- { // the matrix: padded rows
		l.strides[j] = stride
		stride *= l.shape[j]
		if j == len(l.shape)-1 {
			stride += gap
		}
	}
	stride += gap // between matrices
	order := make([]int, nb)
	for j := range order {
		order[j] = nb - 1 - j // innermost first
		if reversed {
			order[j] = j
		}
	}
	for _, j := range order {
		l.strides[j] = stride
		stride *= max(l.shape[j], 1)
	}
	l.elems = stride + gap
	return l
}

// matrixOffset is the element offset of matrix z (row-major over the
// tensor's own batch dimensions) of layout l.
func (l stridedLayout) matrixOffset(z, nb int) int {
	off := 0
	for j := nb - 1; j >= 0; j-- {
		n := max(l.shape[j], 1)
		off += (z % n) * l.strides[j]
		z /= n
	}
	return off
}

// elemOffset is element e (row-major over the matrix) of matrix z.
func (l stridedLayout) elemOffset(z, e, nb int) int {
	off := l.matrixOffset(z, nb)
	for j := len(l.shape) - 1; j >= nb; j-- {
		n := max(l.shape[j], 1)
		off += (e % n) * l.strides[j]
		e /= n
	}
	return off
}

// tensorMatrix is the matrix of tensor b that launch batch element z
// reads: a missing batch dimension is shared, a grouped one divided.
func tensorMatrix(k *ir.Kernel, b ir.Binding, z int, sizes map[string]int) int {
	batch := k.Batch()
	idx := make([]int, len(batch))
	for a := len(batch) - 1; a >= 0; a-- {
		n := max(sizes[batch[a]], 1)
		idx[a] = z % n
		z /= n
	}
	m := 0
	for _, d := range b.Batch {
		i := idx[d.Axis]
		switch {
		case d.Group != "":
			i /= max(sizes[d.Group], 1)
		case d.GroupConst > 0:
			i /= d.GroupConst
		}
		m = m*dimSize(d, sizes) + i
	}
	return m
}

// batchOf is the matrices of the kernel's first output: every batch
// element's (an output has every batch dimension), so a Result's N counts
// the whole launch's output elements, not one matrix's.
func batchOf(k *ir.Kernel, layouts map[int]stridedLayout) int {
	for _, b := range k.BindingsOf(ir.Output) {
		return layouts[b.Index].batch
	}
	return 1
}

// checkBatched is checkOne for a batched kernel.
func checkBatched(ctx context.Context, k *ir.Kernel, v ir.Variant, gen shapeGen, source []byte, sh shape, opts Options) (Result, error) {
	l := k.Launch(opts.Backend)
	given := maps.Clone(sh.sizes)
	maps.Copy(given, batchSizes(k))
	given[launch.ElemBytes] = v.DType.Size()
	layouts := map[int]stridedLayout{}
	for _, b := range k.Bindings {
		if b.Role != ir.Args {
			lay := layoutOf(b, given, b.Index == 0, batchGap(k), rowColStride(k, b, sh))
			layouts[b.Index] = lay
			for j, s := range lay.strides {
				given[ir.StrideField(b, j)] = s
			}
		}
	}
	putAligned(k, v, layouts, given)
	sizes, err := l.Sizes(given)
	if err != nil {
		return Result{}, fmt.Errorf("parity: %s: %w", v.HostName, err)
	}
	grid, err := l.GridSize(sizes)
	if err != nil {
		return Result{}, fmt.Errorf("parity: %s: %w", v.HostName, err)
	}
	opts.Sample = nil // the differential check reads dense buffers
	c := &check{k: k, v: v, gen: gen, opts: opts, sizes: sizes,
		params: paramValues(k, gen.f32Param, opts.Params), rounding: roundingOf(k, v),
		res: Result{HostName: v.HostName, DType: v.DType, N: sh.n * batchOf(k, layouts), Rows: sh.rows, Cols: sh.cols}}
	// Each input's matrices: matrix j of every input drawn together, so
	// the adversarial rows of A land in every matrix.
	matrices := make([][][]float64, len(k.Bindings))
	most := 0
	for _, b := range k.BindingsOf(ir.Input) {
		most = max(most, layouts[b.Index].batch)
	}
	r := rand.New(rand.NewPCG(opts.Seed, sh.seed))
	for j := range most {
		vals := gen.inputs(r, k, v, sizes, opts)
		for _, b := range k.BindingsOf(ir.Input) {
			if j < layouts[b.Index].batch {
				matrices[b.Index] = append(matrices[b.Index], vals[b.Index])
			}
		}
	}
	buffers := make([][]byte, len(k.Bindings))
	for _, b := range k.Bindings {
		if b.Role == ir.Args {
			continue
		}
		lay := layouts[b.Index]
		flat := make([]float64, lay.elems)
		for i := range flat {
			flat[i] = math.NaN()
		}
		for z, mat := range matrices[b.Index] {
			for e, x := range mat {
				flat[lay.elemOffset(z, e, len(b.Batch))] = x
			}
		}
		buffers[b.Index] = encode(flat, elemType(b, v))
	}
	args := k.ArgsBinding()
	if buffers[args.Index], err = argsBytes(args, sizes, c.params); err != nil {
		return Result{}, fmt.Errorf("parity: %s: %w", v.HostName, err)
	}
	var first [][]byte
	for i, order := range opts.Orders {
		got, err := runLaunch(ctx, k, v, opts, order, source, sizes, buffers, grid, l.Threadgroup)
		if err != nil {
			return Result{}, err
		}
		if i > 0 {
			for _, b := range k.BindingsOf(ir.Output) {
				if !slices.Equal(first[b.Index], got[b.Index]) {
					c.res.Failed++
					c.res.Failures = append(c.res.Failures, Lane{Output: b.Name, Excess: math.Inf(1),
						Note: fmt.Sprintf("the %s lane order changes %s's bytes: a race between lanes", orderName[order], b.Name)})
				}
			}
			continue
		}
		first = got
		c.untouchedGaps(buffers, got, layouts)
		c.batchReference(got, matrices, layouts)
	}
	if len(c.res.Failures) > 0 {
		c.res.First = c.res.Failures[0].String()
	}
	return c.res, nil
}

// batchReference runs the kind's reference once per batch element over
// that element's matrices, gathered dense (c.vals and c.got as the
// unbatched check has them).
func (c *check) batchReference(got [][]byte, matrices [][][]float64, layouts map[int]stridedLayout) {
	k := c.k
	total := 1
	for _, b := range k.Batch() {
		total *= c.sizes[b]
	}
	for z := range total {
		c.vals = make([][]float64, len(k.Bindings))
		c.got = make([][]byte, len(k.Bindings))
		for _, b := range k.Bindings {
			if b.Role == ir.Args {
				continue
			}
			mz := tensorMatrix(k, b, z, c.sizes)
			if b.Role == ir.Input {
				c.vals[b.Index] = matrices[b.Index][mz]
				continue
			}
			t := elemType(b, c.v)
			lay, nb := layouts[b.Index], len(b.Batch)
			dense := make([]byte, c.count(b)*t.Size())
			for e := range c.count(b) {
				off := lay.elemOffset(mz, e, nb)
				copy(dense[e*t.Size():(e+1)*t.Size()], got[b.Index][off*t.Size():(off+1)*t.Size()])
			}
			c.got[b.Index] = dense
		}
		c.gen.reference(c, c.judgeLane)
	}
}

// untouchedGaps fails every output element outside the output's view
// whose bytes the kernel changed: a store through a wrong stride.
func (c *check) untouchedGaps(before, after [][]byte, layouts map[int]stridedLayout) {
	for _, b := range c.k.BindingsOf(ir.Output) {
		lay, nb := layouts[b.Index], len(b.Batch)
		t := elemType(b, c.v)
		inside := make([]bool, lay.elems)
		for z := range lay.batch {
			for e := range c.count(b) {
				inside[lay.elemOffset(z, e, nb)] = true
			}
		}
		for i, in := range inside {
			s := t.Size()
			if in || slices.Equal(before[b.Index][i*s:(i+1)*s], after[b.Index][i*s:(i+1)*s]) {
				continue
			}
			c.res.Failed++
			if len(c.res.Failures) < maxFailures {
				c.res.Failures = append(c.res.Failures, Lane{Output: b.Name, Index: i, Got: decode(after[b.Index], t, i), Want: math.NaN(), Excess: math.Inf(1),
					Note: fmt.Sprintf("element %d of %s's buffer lies outside its view (a gap between rows or matrices) but was written", i, b.Name)})
			}
		}
	}
}

// putAligned sets a batched rowwise kernel's ir.AlignedField in given as
// its launcher would from the layouts' views (kgenrt.RowsAligned, each
// buffer bound at its start).
func putAligned(k *ir.Kernel, v ir.Variant, layouts map[int]stridedLayout, given map[string]int) {
	for _, f := range k.ArgsBinding().Fields {
		if len(f.Aligned) == 0 {
			continue
		}
		given[f.Name] = 1
		for _, b := range k.Bindings {
			lay := layouts[b.Index]
			if slices.Contains(f.Aligned, b.Name) && !kgenrt.RowsAligned(elemType(b, v).Size(), 0, lay.shape, lay.strides) {
				given[f.Name] = 0
			}
		}
	}
}
