package kgenrt

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Strided kernels: batch dims (Kernel.Batch, Binding.Batch), grouped dims
// (GQA/MQA), strides in the args struct, and the CPU reference's batch
// views.

// groupDim is a grouped batch dim of one tensor ("h/group" or "h/4"),
// resolved after every plain size is bound.
type groupDim struct {
	size  string // h
	group string // the group's size field; "" for a baked divisor
	div   int    // the baked divisor (4 in "h/4"); 0 for a named group
	dim   int    // the tensor's dim there
	at    int    // which dim of the tensor
	from  int    // the tensor (index into the call's tensors)
}

// splitBatch parses a Binding.Batch entry: "h", "h/group" or "h/4" (div
// 4). A divisor that is a number but not a positive one is div -1.
func splitBatch(e string) (size, group string, div int) {
	size, group, ok := strings.Cut(e, "/")
	if !ok {
		return size, "", 0
	}
	if n, err := strconv.Atoi(group); err == nil {
		if n <= 0 {
			n = -1
		}
		return size, "", n
	}
	return size, group, 0
}

// checkBatchDesc checks the kernel description's batch dims: only a
// Strided kernel's bindings have them, each binding's are a subsequence of
// Kernel.Batch, baked divisors are positive, and every batch size appears
// plainly in some binding (a size that only appears grouped, h/group, has
// nothing to derive it from).
func (k *Kernel) checkBatchDesc() error {
	for _, b := range k.Bindings {
		if len(b.Batch) > 0 && !k.Strided() {
			return fmt.Errorf("kgenrt: kernel %s: binding %s has batch dims %v but the kernel has none (Kernel.Batch)", k.Name, b.Name, b.Batch)
		}
		next := 0
		for _, e := range b.Batch {
			size, _, div := splitBatch(e)
			j := next
			for j < len(k.Batch) && k.Batch[j] != size {
				j++
			}
			if j == len(k.Batch) || div < 0 {
				return fmt.Errorf("kgenrt: kernel %s: binding %s: batch dims %v are not a subsequence of the kernel's batch dims %v (each a size, size/group or size/N with N > 0)", k.Name, b.Name, b.Batch, k.Batch)
			}
			next = j + 1
		}
	}
	for _, size := range k.Batch {
		if !k.plainBatch(size) {
			return fmt.Errorf("kgenrt: kernel %s: batch size %s appears in no binding plainly (only grouped, as %s/…, or not at all): the kernel description gives nothing to bind it from", k.Name, size, size)
		}
	}
	return nil
}

// plainBatch reports whether some binding names size as a plain dim.
func (k *Kernel) plainBatch(size string) bool {
	for _, b := range k.Bindings {
		for _, e := range b.Batch {
			if e == size {
				return true
			}
		}
		for _, s := range b.Shape {
			if s == size {
				return true
			}
		}
	}
	return false
}

// checkDense is what a kernel that is not Strided asks of a view: it reads
// dense tensors from their first element with 16-byte vector loads, so a
// view must be contiguous and start 16-byte aligned in its buffer.
func (k *Kernel) checkDense(b *Binding, t *Tensor) error {
	if !t.Contiguous() {
		return k.tensorErr(*b, fmt.Sprintf("is a strided view (shape %v, strides %v); kernel %s reads dense tensors: copy it with kgenrt.Copy into a dense tensor, or use a kernel with batch dims, which reads strides", t.shape, t.strides, k.Name))
	}
	if off := t.offset * t.dtype.Size(); off%16 != 0 {
		return k.tensorErr(*b, fmt.Sprintf("is a view at byte offset %d of its buffer, not a multiple of 16; kernel %s loads 16-byte vectors from 16-byte-aligned tensors: copy it with kgenrt.Copy", off, k.Name))
	}
	return nil
}

// bindStrided binds tensor i of a Strided kernel: its rank is exactly
// len(Batch) + len(Shape), each plain batch dim and each Shape dim binds
// one size, and grouped batch dims are queued for resolveGroups.
func (k *Kernel) bindStrided(i int, bs []int, tensors []*Tensor, entries []sizeEntry, groups []groupDim) ([]sizeEntry, []groupDim, error) {
	b, t := &k.Bindings[bs[i]], tensors[i]
	nb := len(b.Batch)
	if len(t.shape) != nb+len(b.Shape) {
		return nil, nil, k.tensorErr(*b, fmt.Sprintf("has shape %v (rank %d), want %v ++ %v (rank %d: the batch dims, then the shape)", t.shape, len(t.shape), b.Batch, b.Shape, nb+len(b.Shape)))
	}
	var err error
	for j, e := range b.Batch {
		size, group, div := splitBatch(e)
		if group == "" && div == 0 {
			if entries, err = k.bindSize(i, bs, tensors, size, t.shape[j], entries); err != nil {
				return nil, nil, err
			}
			continue
		}
		groups = append(groups, groupDim{size: size, group: group, div: div, dim: t.shape[j], at: j, from: i})
	}
	for j, name := range b.Shape {
		if entries, err = k.bindSize(i, bs, tensors, name, t.shape[nb+j], entries); err != nil {
			return nil, nil, err
		}
	}
	return entries, groups, nil
}

// resolveGroups checks the grouped batch dims against the sizes bound
// plainly and derives each named group (group = h / dim) as a size entry.
func (k *Kernel) resolveGroups(bs []int, tensors []*Tensor, entries []sizeEntry, groups []groupDim) ([]sizeEntry, error) {
	for _, g := range groups {
		b, t := k.Bindings[bs[g.from]], tensors[g.from]
		e := lookup(entries, g.size)
		if e < 0 { // checkBatchDesc makes this unreachable; kept for safety
			return nil, fmt.Errorf("kgenrt: kernel %s: batch size %s appears only grouped; the kernel description gives nothing to bind it from", k.Name, g.size)
		}
		h := entries[e].val
		if g.div > 0 {
			switch {
			case h%g.div != 0:
				return nil, k.tensorErr(b, fmt.Sprintf("is grouped %s/%d, but %s = %d is not a multiple of %d", g.size, g.div, g.size, h, g.div))
			case g.dim != h/g.div:
				return nil, k.tensorErr(b, fmt.Sprintf("has %d in dim %d (shape %v), want %s/%d = %d/%d = %d", g.dim, g.at, t.shape, g.size, g.div, h, g.div, h/g.div))
			}
			continue
		}
		var group int
		switch {
		case g.dim == 0 && h > 0, g.dim > 0 && h%g.dim != 0:
			return nil, k.tensorErr(b, fmt.Sprintf("has %d in dim %d (shape %v), but %s = %d: the query heads %s must be a multiple of the tensor's dim (GQA/MQA group %s = %s / %d)", g.dim, g.at, t.shape, g.size, h, g.size, g.group, g.size, g.dim))
		case g.dim == 0:
			group = 1 // no heads at all: any group; 1 unless bound otherwise
			if lookup(entries, g.group) >= 0 {
				continue
			}
		default:
			group = h / g.dim
		}
		if f := lookup(entries, g.group); f >= 0 && entries[f].val != group {
			return nil, k.tensorErr(b, fmt.Sprintf("has %d in dim %d (shape %v): %s = %s / %d = %d, want %d (from %s)", g.dim, g.at, t.shape, g.group, g.size, g.dim, group, entries[f].val, k.Bindings[bs[entries[f].from]].Name))
		} else if f < 0 {
			entries = append(entries, sizeEntry{name: g.group, val: group, from: g.from})
		}
	}
	return entries, nil
}

// PutStrides writes every args field with StrideOf set, as a little-endian
// u32 at its Offset: the stride in elements of dim StrideDim of the tensor
// bound as StrideOf (tensors in binding order, inputs then outputs, as
// Check takes them). It refuses a stride past MaxUint32, and a tensor whose
// largest reachable element offset (from its first element, which the port
// binds) is 2^32 or more: the kernels index in 32 bits from the bound
// pointer.
func (k *Kernel) PutStrides(args []byte, tensors []*Tensor) error {
	var ibuf [16]int
	bs := k.tensorIndex(ibuf[:0])
	if len(tensors) != len(bs) {
		return fmt.Errorf("kgenrt: kernel %s: PutStrides takes %d tensors, got %d", k.Name, len(bs), len(tensors))
	}
	for _, f := range k.ArgsBinding().Fields {
		if len(f.Aligned) > 0 {
			if err := k.putAligned(args, f, bs, tensors); err != nil {
				return err
			}
			continue
		}
		if f.StrideOf == "" {
			continue
		}
		i := -1
		for j, bi := range bs {
			if k.Bindings[bi].Name == f.StrideOf {
				i = j
			}
		}
		if i < 0 || tensors[i] == nil {
			return fmt.Errorf("kgenrt: kernel %s: args field %s holds a stride of %s, which is not one of its tensors", k.Name, f.Name, f.StrideOf)
		}
		t, b := tensors[i], k.Bindings[bs[i]]
		if f.StrideDim < 0 || f.StrideDim >= len(t.shape) {
			return k.tensorErr(b, fmt.Sprintf("has shape %v; args field %s wants the stride of its dim %d", t.shape, f.Name, f.StrideDim))
		}
		if f.Offset < 0 || f.Offset+4 > len(args) {
			return fmt.Errorf("kgenrt: kernel %s: args field %s at offset %d is outside the %d args bytes", k.Name, f.Name, f.Offset, len(args))
		}
		s := t.strideOf(f.StrideDim)
		if int64(s) > math.MaxUint32 {
			return k.tensorErr(b, fmt.Sprintf("has stride %d in dim %d, past the kernels' 32-bit strides", s, f.StrideDim))
		}
		if r := int64(t.reach()); r > 1<<32 {
			return k.tensorErr(b, fmt.Sprintf("reaches element %d from its first (shape %v, strides %v); kernel %s indexes in 32 bits from the bound pointer", r-1, t.shape, t.Strides(), k.Name))
		}
		binary.LittleEndian.PutUint32(args[f.Offset:], uint32(s))
	}
	return nil
}

// putAligned writes flag field f: 1 when every tensor it names is
// RowsAligned.
func (k *Kernel) putAligned(args []byte, f Field, bs []int, tensors []*Tensor) error {
	if f.Offset < 0 || f.Offset+4 > len(args) {
		return fmt.Errorf("kgenrt: kernel %s: args field %s at offset %d is outside the %d args bytes", k.Name, f.Name, f.Offset, len(args))
	}
	flag := uint32(1)
	for _, name := range f.Aligned {
		i := -1
		for j, bi := range bs {
			if k.Bindings[bi].Name == name {
				i = j
			}
		}
		if i < 0 || tensors[i] == nil {
			return fmt.Errorf("kgenrt: kernel %s: args field %s names %s, which is not one of its tensors", k.Name, f.Name, name)
		}
		t := tensors[i]
		if !rowsAligned(t.dtype.Size(), t.offset, t.shape, t.strideOf) {
			flag = 0
		}
	}
	binary.LittleEndian.PutUint32(args[f.Offset:], flag)
	return nil
}

// RowsAligned reports whether a view (element size, offset from its
// buffer's start and strides in elements) can be read in 16-byte vectors
// along its last dim: unit stride there (or at most one element), and its
// offset and every other stride of a dim of more than one element whole
// multiples of 16 bytes, so every row starts where its buffer's 16-byte
// alignment does. A kernel's vector path asks this of every tensor it
// walks (Field.Aligned), besides its own check that the row length is a
// whole number of vectors.
func RowsAligned(elemBytes, offset int, shape, strides []int) bool {
	return rowsAligned(elemBytes, offset, shape, func(d int) int { return strides[d] })
}

// rowsAligned is RowsAligned with the strides read through stride (a
// tensor's own, without allocating).
func rowsAligned(elemBytes, offset int, shape []int, stride func(d int) int) bool {
	if offset*elemBytes%16 != 0 {
		return false
	}
	last := len(shape) - 1
	if last >= 0 && shape[last] > 1 && stride(last) != 1 {
		return false
	}
	for j := range max(last, 0) {
		if shape[j] > 1 && stride(j)*elemBytes%16 != 0 {
			return false
		}
	}
	return true
}

// EachBatch calls fn once per batch index z of a Strided kernel, z over
// the product of the Kernel.Batch sizes (from sizes, as Check returns them)
// row-major, the last batch dim fastest: the order a grid z index flattens
// them. views holds, per tensor (binding order, inputs then outputs), the
// view of its non-batch part (its Shape dims) at that batch index: a batch
// dim the binding lacks is broadcast (the same view for every value), a
// grouped dim "h/group" takes index h_idx / group, "h/4" h_idx / 4. With
// no batch dims fn is called once, with the tensors themselves. The CPU
// reference of a batched kernel runs its dense body per view.
func (k *Kernel) EachBatch(sizes Sizes, tensors []*Tensor, fn func(z int, views []*Tensor) error) error {
	if !k.Strided() {
		return fn(0, tensors)
	}
	bs := k.tensorIndex(nil)
	if len(tensors) != len(bs) {
		return fmt.Errorf("kgenrt: kernel %s: EachBatch takes %d tensors, got %d", k.Name, len(bs), len(tensors))
	}
	dims := make([]int, len(k.Batch))
	total := 1
	for j, name := range k.Batch {
		v, ok := sizes[name]
		if !ok || v < 0 {
			return fmt.Errorf("kgenrt: kernel %s: EachBatch: sizes has no batch size %s", k.Name, name)
		}
		dims[j] = v
		total *= v
	}
	type part struct {
		batch   []int // index into k.Batch of each batch dim
		div     []int // its divisor (1 plain, the group, or the baked N)
		strides []int
		shape   []int
		strd    []int
	}
	parts := make([]part, len(tensors))
	for i, bi := range bs {
		b, t := k.Bindings[bi], tensors[i]
		nb := len(b.Batch)
		if t == nil || len(t.shape) != nb+len(b.Shape) {
			return k.tensorErr(b, fmt.Sprintf("is nil or not of rank %d (batch dims %v, then %v)", nb+len(b.Shape), b.Batch, b.Shape))
		}
		p := part{strides: t.Strides()}
		p.shape, p.strd = t.shape[nb:], p.strides[nb:]
		for _, e := range b.Batch {
			size, group, div := splitBatch(e)
			j := 0
			for j < len(k.Batch) && k.Batch[j] != size {
				j++
			}
			if j == len(k.Batch) || div < 0 {
				return k.checkBatchDesc()
			}
			switch {
			case group != "":
				g, ok := sizes[group]
				if !ok || g <= 0 {
					return fmt.Errorf("kgenrt: kernel %s: EachBatch: sizes has no group %s > 0 (for %s of %s)", k.Name, group, e, b.Name)
				}
				div = g
			case div == 0:
				div = 1
			}
			p.batch, p.div = append(p.batch, j), append(p.div, div)
		}
		parts[i] = p
	}
	idx := make([]int, len(dims))
	views := make([]*Tensor, len(tensors))
	for z := 0; z < total; z++ {
		for j, r := len(dims)-1, z; j >= 0; j-- {
			idx[j] = r % dims[j]
			r /= dims[j]
		}
		for i, p := range parts {
			off := 0
			for d, j := range p.batch {
				off += idx[j] / p.div[d] * p.strides[d]
			}
			v, err := tensors[i].View(off, p.shape, p.strd)
			if err != nil {
				return k.tensorErr(k.Bindings[bs[i]], fmt.Sprintf("at batch index %v: %v", idx, err))
			}
			views[i] = v
		}
		if err := fn(z, views); err != nil {
			return err
		}
	}
	return nil
}
