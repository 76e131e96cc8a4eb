package kgenrt

import (
	"fmt"
	"math"
)

// Views. A tensor made by New, NewMetal, NewCUDA or WrapCUDA is dense and
// row-major; View, Slice and Transpose make tensors over the same memory
// with a buffer offset and per-dimension strides (both in elements), so a
// caller can bind cache[:, :len, :], one head of a [b, s, h, d] activation
// or a transposed layout without a copy.
//
// A view keeps its parent's memory alive (host bytes, Metal buffer or CUDA
// buffer; Free on any view of an owned CUDA tensor frees the whole buffer).
// Its element i is the logical row-major element: Float32At, SetFloat32,
// Int32At, SetInt32, Float32s, Float64s and Bits16 map i through the
// strides. Bytes (and a host view's data) cover the view's reachable span,
// from its first reachable element to its last: for a contiguous view
// exactly its elements in order, for a strided one the gaps too.

// View returns a tensor over t's memory whose element (i0, i1, …) is the
// element offset + Σ i_d·strides[d] counted from t's first element (t may
// itself be a view: offsets compose, strides count elements of the
// underlying buffer). len(strides) must be len(shape), every stride >= 0 (0
// broadcasts over that dim) and every element the view can reach must lie
// inside t's reachable span; otherwise the error wraps ErrShape and names
// the dim and the numbers.
func (t *Tensor) View(offset int, shape []int, strides []int) (*Tensor, error) {
	if _, err := count(t.dtype, shape); err != nil {
		return nil, err
	}
	if len(strides) != len(shape) {
		return nil, fmt.Errorf("%w: View: %d strides %v for the %d dims of shape %v", ErrShape, len(strides), strides, len(shape), shape)
	}
	reach := t.reach()
	if offset < 0 || offset > reach {
		return nil, fmt.Errorf("%w: View: offset %d is outside the %d elements the tensor reaches", ErrShape, offset, reach)
	}
	empty := false
	for _, n := range shape {
		empty = empty || n == 0
	}
	last := offset // the last reachable element, from t's first
	for d, s := range strides {
		if s < 0 {
			return nil, fmt.Errorf("%w: View: dim %d has stride %d; strides are >= 0 (0 broadcasts)", ErrShape, d, s)
		}
		if empty || shape[d] <= 1 || s == 0 {
			continue
		}
		if shape[d]-1 > (math.MaxInt-last)/s || last+(shape[d]-1)*s >= reach {
			return nil, fmt.Errorf("%w: View: dim %d (size %d, stride %d) reaches element %d + %d·%d, past the %d elements the tensor reaches (offset %d, shape %v, strides %v)",
				ErrShape, d, shape[d], s, last, shape[d]-1, s, reach, offset, shape, strides)
		}
		last += (shape[d] - 1) * s
	}
	if !empty && offset >= reach {
		return nil, fmt.Errorf("%w: View: offset %d is past the %d elements the tensor reaches", ErrShape, offset, reach)
	}
	v := &Tensor{dtype: t.dtype, shape: append([]int{}, shape...), dev: t.dev, gpu: t.gpu, offset: t.offset + offset}
	if len(v.shape) == 0 {
		v.shape = []int{}
	}
	if !denseStrides(shape, strides) {
		v.strides = append([]int(nil), strides...)
	}
	if t.data != nil {
		es := t.dtype.Size()
		v.data = t.data[offset*es : (offset+v.reach())*es : (offset+v.reach())*es]
	}
	return v, nil
}

// denseStrides reports whether strides lay shape out dense and row-major:
// every dim of size > 1 has its row-major stride (the stride of a dim of
// size 1 never moves), or the shape holds no element.
func denseStrides(shape, strides []int) bool {
	want := 1
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] == 0 {
			return true
		}
		if shape[d] > 1 && strides[d] != want {
			return false
		}
		want *= shape[d]
	}
	return true
}

// Strides returns the stride of each dim in elements: the row-major ones
// for a dense tensor or a contiguous view.
func (t *Tensor) Strides() []int {
	out := make([]int, len(t.shape))
	for d := range out {
		out[d] = t.strideOf(d)
	}
	return out
}

// strideOf is Strides()[d] without allocating.
func (t *Tensor) strideOf(d int) int {
	if t.strides != nil {
		return t.strides[d]
	}
	s := 1
	for _, n := range t.shape[d+1:] {
		s *= n
	}
	return s
}

// Contiguous reports whether t's elements are dense and row-major with no
// gaps (its strides are the dense ones; a dim of size 1 may have any
// stride): a tensor from New, NewMetal, NewCUDA or WrapCUDA, or a view such
// as a range of rows. A contiguous view may still have an Offset.
func (t *Tensor) Contiguous() bool { return t.strides == nil }

// Offset is the number of elements between the start of t's underlying
// buffer (the tensor that was allocated or wrapped) and t's first element:
// 0 unless t is a view.
func (t *Tensor) Offset() int { return t.offset }

// Slice returns the view of t narrowed to [start, end) in dim (the other
// dims whole): cache.Slice(1, 0, n) is cache[:, :n, :].
func (t *Tensor) Slice(dim, start, end int) (*Tensor, error) {
	if dim < 0 || dim >= len(t.shape) {
		return nil, fmt.Errorf("%w: Slice: dim %d of a rank-%d tensor %v", ErrShape, dim, len(t.shape), t.shape)
	}
	if start < 0 || end < start || end > t.shape[dim] {
		return nil, fmt.Errorf("%w: Slice: [%d, %d) of dim %d, which has size %d (shape %v)", ErrShape, start, end, dim, t.shape[dim], t.shape)
	}
	shape, strides := t.Shape(), t.Strides()
	shape[dim] = end - start
	off := 0
	if end > start {
		off = start * strides[dim]
	}
	return t.View(off, shape, strides)
}

// Transpose returns the view of t with dims d0 and d1 swapped.
func (t *Tensor) Transpose(d0, d1 int) (*Tensor, error) {
	if d0 < 0 || d1 < 0 || d0 >= len(t.shape) || d1 >= len(t.shape) {
		return nil, fmt.Errorf("%w: Transpose: dims %d, %d of a rank-%d tensor %v", ErrShape, d0, d1, len(t.shape), t.shape)
	}
	shape, strides := t.Shape(), t.Strides()
	shape[d0], shape[d1] = shape[d1], shape[d0]
	strides[d0], strides[d1] = strides[d1], strides[d0]
	return t.View(0, shape, strides)
}

// at maps logical row-major element i to its element index in t.data
// (from t's first element): i itself for a dense tensor.
func (t *Tensor) at(i int) int {
	if t.strides == nil {
		return i
	}
	return t.stridedAt(i)
}

func (t *Tensor) stridedAt(i int) int {
	o := 0
	for d := len(t.shape) - 1; d >= 0; d-- {
		n := t.shape[d]
		o += (i % n) * t.strides[d]
		i /= n
	}
	return o
}

// reach is the number of elements in t's reachable span: from its first
// element to its last reachable one (its length when dense; 0 when it has
// no element).
func (t *Tensor) reach() int {
	if t.strides == nil {
		return t.Len()
	}
	r := 1
	for d, n := range t.shape {
		if n == 0 {
			return 0
		}
		r += (n - 1) * t.strides[d]
	}
	return r
}

// copyElems copies t's elements, and only those, from src into dst: two
// byte images of t's reachable span (a host staging buffer and t.data), so
// the gaps of a strided view keep dst's bytes.
func (t *Tensor) copyElems(dst, src []byte) {
	if t.strides == nil {
		copy(dst, src)
		return
	}
	es := t.dtype.Size()
	for i, n := 0, t.Len(); i < n; i++ {
		o := t.stridedAt(i) * es
		copy(dst[o:o+es], src[o:o+es])
	}
}

// copyHost copies src's elements into dst's in logical order (host or
// Metal tensors, same dtype and length).
func copyHost(dst, src *Tensor) {
	if dst.strides == nil && src.strides == nil {
		copy(dst.data, src.data)
		return
	}
	es := dst.dtype.Size()
	for i, n := 0, dst.Len(); i < n; i++ {
		d, s := dst.at(i)*es, src.at(i)*es
		copy(dst.data[d:d+es], src.data[s:s+es])
	}
}

// spanView returns the dense vector view of t's reachable span (the bytes a
// strided view's elements lie among), for copies by bytes.
func (t *Tensor) spanView() *Tensor {
	r := t.reach()
	v := &Tensor{dtype: t.dtype, shape: []int{r}, dev: t.dev, gpu: t.gpu, offset: t.offset}
	if t.data != nil {
		v.data = t.data[:r*t.dtype.Size()]
	}
	return v
}

// injective reports whether no two elements of t share a place: sorted by
// stride, each dim's stride passes the span of all the smaller ones (a
// sufficient condition; a 0 stride over a dim of size > 1 fails it).
func (t *Tensor) injective() bool {
	if t.strides == nil || t.Len() == 0 {
		return true
	}
	type dim struct{ n, s int }
	var dims []dim
	for d, n := range t.shape {
		if n > 1 {
			dims = append(dims, dim{n, t.strides[d]})
		}
	}
	// insertion sort, smallest stride first
	for i := 1; i < len(dims); i++ {
		for j := i; j > 0 && dims[j].s < dims[j-1].s; j-- {
			dims[j], dims[j-1] = dims[j-1], dims[j]
		}
	}
	span := 0 // the largest offset the smaller dims reach
	for _, d := range dims {
		if d.s <= span {
			return false
		}
		span += (d.n - 1) * d.s
	}
	return true
}
