package kgenrt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// Tensor is an array of one storage dtype, dense and row-major unless it is
// a view (View, Slice, Transpose: an offset and strides over another
// tensor's memory; see view.go). Its elements are little-endian bytes, in host memory (New, FromFloat32, …), in a Metal
// buffer shared with the CPU (NewMetal), or in CUDA device memory (NewCUDA,
// WrapCUDA). The CPU reference reads host and Metal tensors; a Metal launch
// binds Metal tensors directly and copies host tensors in and out; a CUDA
// launch binds CUDA tensors directly and copies host tensors in and out.
// Launchers take *Tensor and reject nil.
type Tensor struct {
	dtype DType
	shape []int
	data  []byte // nil for CUDA device memory; a view's reachable span
	// strides are a strided view's, in elements; nil when dense row-major
	// (a tensor that was allocated, or a contiguous view).
	strides []int
	offset  int           // elements from the start of the underlying buffer to the first one
	dev     *deviceBuffer // nil unless a Metal buffer; see metal_*.go
	gpu     *gpuBuffer    // nil unless CUDA or ROCm device memory; see gpu_tensor.go
}

// ErrShape is wrapped by constructor errors about shapes and lengths.
var ErrShape = errors.New("kgenrt: bad tensor shape")

// New returns a zeroed host tensor of storage dtype dt (f32, f16, bf16, or
// an integer type i8, u8, i32, u32 for pinned integer tensors).
// With no dims it is a vector of length 0.
func New(dt DType, shape ...int) (*Tensor, error) {
	n, err := count(dt, shape)
	if err != nil {
		return nil, err
	}
	return &Tensor{dtype: dt, shape: cloneShape(shape, n), data: make([]byte, n*dt.Size())}, nil
}

// NewWorkspace returns a zeroed f32 scratch tensor for the launches of a
// split kernel (Kernel.Phases): in a Metal buffer when a Metal device is
// present, so the phases bind it without copies and Encode takes it, else in
// host memory.
func NewWorkspace(shape ...int) (*Tensor, error) {
	if t, err := NewMetal(F32, shape...); err == nil {
		return t, nil
	}
	return New(F32, shape...)
}

// FromFloat32 returns a host tensor of storage dtype dt holding v, each
// value rounded to nearest even in dt. Without dims it is a vector of
// len(v); with dims their product must be len(v).
func FromFloat32(dt DType, v []float32, shape ...int) (*Tensor, error) {
	t, err := newFor(dt, len(v), shape)
	if err != nil {
		return nil, err
	}
	for i, x := range v {
		t.SetFloat32(i, x)
	}
	return t, nil
}

// FromF16Bits returns an f16 host tensor holding the binary16 bit patterns b.
func FromF16Bits(b []uint16, shape ...int) (*Tensor, error) { return fromBits(F16, b, shape) }

// FromBF16Bits returns a bf16 host tensor holding the bfloat16 bit patterns b.
func FromBF16Bits(b []uint16, shape ...int) (*Tensor, error) { return fromBits(BF16, b, shape) }

func fromBits(dt DType, b []uint16, shape []int) (*Tensor, error) {
	t, err := newFor(dt, len(b), shape)
	if err != nil {
		return nil, err
	}
	for i, x := range b {
		binary.LittleEndian.PutUint16(t.data[2*i:], x)
	}
	return t, nil
}

// newFor makes a zeroed host tensor for n values laid out as shape (a
// vector of n when shape is empty).
func newFor(dt DType, n int, shape []int) (*Tensor, error) {
	if len(shape) == 0 {
		shape = []int{n}
	}
	t, err := New(dt, shape...)
	if err != nil {
		return nil, err
	}
	if t.Len() != n {
		return nil, fmt.Errorf("%w: shape %v holds %d elements, got %d values", ErrShape, shape, t.Len(), n)
	}
	return t, nil
}

// count checks dt and shape and returns the number of elements.
func count(dt DType, shape []int) (int, error) {
	if !dt.IsFloat() && !dt.IsInt() {
		return 0, fmt.Errorf("kgenrt: %v is not a tensor storage dtype (f32, f16, bf16, i8, u8, i32, u32)", dt)
	}
	n := 1
	if len(shape) == 0 {
		n = 0
	}
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("%w: negative dimension in %v", ErrShape, shape)
		}
		if d != 0 && n > math.MaxInt/dt.Size()/d {
			return 0, fmt.Errorf("%w: %v overflows the address space", ErrShape, shape)
		}
		n *= d
	}
	return n, nil
}

func cloneShape(shape []int, n int) []int {
	if len(shape) == 0 {
		return []int{n}
	}
	return append([]int(nil), shape...)
}

// DType is the storage dtype.
func (t *Tensor) DType() DType { return t.dtype }

// Shape returns a copy of the dimensions.
func (t *Tensor) Shape() []int { return append([]int(nil), t.shape...) }

// Len is the number of elements: the product of the shape.
func (t *Tensor) Len() int {
	n := 1
	for _, d := range t.shape {
		n *= d
	}
	return n
}

// nbytes is the size in bytes of the reachable span (the elements of a
// dense tensor or contiguous view), wherever they live.
func (t *Tensor) nbytes() int { return t.reach() * t.dtype.Size() }

// Bytes returns the element bytes, little-endian, without copying: for a
// view its reachable span (exactly its elements when Contiguous). For a
// Metal tensor they are the buffer's contents: keep the Tensor reachable
// while you use them, and do not touch them while a launch that uses the
// tensor is in flight. A CUDA tensor has no host bytes: Bytes is nil (copy
// it to a host tensor with Copy).
func (t *Tensor) Bytes() []byte { return t.data }

// OnDevice reports whether t lives in a Metal buffer (made by NewMetal).
func (t *Tensor) OnDevice() bool { return t.dev != nil }

// Float32At returns element i as a float32: exactly for the float dtypes,
// i8 and u8; i32 and u32 elements round to nearest even past 2^24.
// For a view, i is the logical row-major index.
func (t *Tensor) Float32At(i int) float32 {
	switch t.dtype {
	case I8, U8, I32:
		return float32(t.Int32At(i))
	case U32:
		return float32(binary.LittleEndian.Uint32(t.data[4*t.at(i):]))
	case F16:
		return F16Value(binary.LittleEndian.Uint16(t.data[2*t.at(i):]))
	case BF16:
		return BF16Value(binary.LittleEndian.Uint16(t.data[2*t.at(i):]))
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(t.data[4*t.at(i):]))
}

// Int32At returns element i of an integer tensor as the int32 a formula
// sees: i8 sign-extended, u8 zero-extended, u32 reinterpreted (wrapping, as
// u32 params are). On a float tensor it is the float32 value truncated.
func (t *Tensor) Int32At(i int) int32 {
	switch t.dtype {
	case I8:
		return int32(int8(t.data[t.at(i)]))
	case U8:
		return int32(t.data[t.at(i)])
	case I32, U32:
		return int32(binary.LittleEndian.Uint32(t.data[4*t.at(i):]))
	}
	return ConvI32(t.Float32At(i))
}

// SetInt32 stores v into element i of an integer tensor, keeping its low
// bits (i8 and u8 wrap, as the kernels' stores do: saturate in the formula
// with i8(…) or u8(…)). On a float tensor it stores float32(v).
func (t *Tensor) SetInt32(i int, v int32) {
	switch t.dtype {
	case I8, U8:
		t.data[t.at(i)] = byte(v)
	case I32, U32:
		binary.LittleEndian.PutUint32(t.data[4*t.at(i):], uint32(v))
	default:
		t.SetFloat32(i, float32(v))
	}
}

// SetFloat32 stores v into element i, rounded to nearest even in the
// tensor's dtype: the store rule of every kgen kernel. On an integer tensor
// it stores the integer conversion of v (toward zero, saturating, NaN 0).
func (t *Tensor) SetFloat32(i int, v float32) {
	switch t.dtype {
	case I8, U8, I32, U32:
		t.SetInt32(i, ConvI32(v))
	case F16:
		binary.LittleEndian.PutUint16(t.data[2*t.at(i):], F16Bits(v))
	case BF16:
		binary.LittleEndian.PutUint16(t.data[2*t.at(i):], BF16Bits(v))
	default:
		binary.LittleEndian.PutUint32(t.data[4*t.at(i):], math.Float32bits(v))
	}
}

// Float32s returns every element as a float32 (exact).
func (t *Tensor) Float32s() []float32 {
	out := make([]float32, t.Len())
	for i := range out {
		out[i] = t.Float32At(i)
	}
	return out
}

// Float64s returns every element as a float64 (exact), the input of a
// kernel's float64 evaluation.
func (t *Tensor) Float64s() []float64 {
	out := make([]float64, t.Len())
	for i := range out {
		out[i] = float64(t.Float32At(i))
	}
	return out
}

// Bits16 returns the raw bit patterns of an f16 or bf16 tensor (nil for
// every other dtype).
func (t *Tensor) Bits16() []uint16 {
	if t.dtype != F16 && t.dtype != BF16 {
		return nil
	}
	out := make([]uint16, t.Len())
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(t.data[2*t.at(i):])
	}
	return out
}

// span is the address range of t's reachable bytes, for overlap checks,
// and whether it is a CUDA device range: host and device ranges never
// overlap.
func (t *Tensor) span() (lo, hi uintptr, device bool) {
	if t.gpu != nil {
		return uintptr(t.gpuPtr()), uintptr(t.gpuPtr()) + uintptr(t.nbytes()), true
	}
	if len(t.data) == 0 {
		return 0, 0, false
	}
	lo = uintptr(unsafe.Pointer(unsafe.SliceData(t.data)))
	return lo, lo + uintptr(len(t.data)), false
}

// overlaps reports whether a and b share bytes.
func overlaps(a, b *Tensor) bool {
	alo, ahi, adev := a.span()
	blo, bhi, bdev := b.span()
	return adev == bdev && alo < bhi && blo < ahi
}

// sameBytes reports whether a and b cover exactly the same bytes.
func sameBytes(a, b *Tensor) bool {
	alo, ahi, adev := a.span()
	blo, bhi, bdev := b.span()
	return adev == bdev && alo == blo && ahi == bhi
}

// FromBytes returns a host tensor of dtype dt holding a copy of b, its
// elements' little-endian bytes (len(b) must be a whole number of them).
// Without dims it is a vector.
func FromBytes(dt DType, b []byte, shape ...int) (*Tensor, error) {
	if dt.Size() == 0 || len(b)%dt.Size() != 0 {
		return nil, fmt.Errorf("%w: %d bytes are not whole %v elements", ErrShape, len(b), dt)
	}
	t, err := newFor(dt, len(b)/dt.Size(), shape)
	if err != nil {
		return nil, err
	}
	copy(t.data, b)
	return t, nil
}
