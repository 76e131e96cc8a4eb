package kgenrt

import (
	"fmt"
	"runtime"
)

// CUDA device tensors. A Tensor made by NewCUDA owns device memory of the
// CUDA device the port uses (ordinal 0, its primary context); one made by
// WrapCUDA views memory the caller owns. Either kind is bound by the CUDA
// port without copies: Run launches on the default stream and waits,
// Enqueue (the generated launchers' Enqueue, CUDALauncher.Enqueue) launches
// on the caller's stream and returns at once. The launchers check them as
// they check host tensors (dtype table, shapes, 32-bit limit, overlap by
// device address). They have no host bytes: Bytes is nil, and Copy moves
// elements between them and host tensors.

// cudaBuffer is a tensor's device memory.
type cudaBuffer struct {
	ptr   DevicePtr
	size  int  // bytes
	owned bool // allocated by NewCUDA: Free (or the finalizer) releases it
	freed bool
}

// NewCUDA returns a zeroed tensor of storage dtype dt in device memory of
// the CUDA device (cuMemAlloc: 256-byte aligned). Release it with Free;
// an owned tensor that becomes unreachable is freed by its finalizer, so
// keep the Tensor reachable while you use its DevicePtr. It fails with the
// driver's reason where CUDA cannot run (errors.Is(err, ErrNoPort)).
func NewCUDA(dt DType, shape ...int) (*Tensor, error) {
	n, err := count(dt, shape)
	if err != nil {
		return nil, err
	}
	if err := cudaReady(); err != nil {
		return nil, noCUDAError{err}
	}
	buf := &cudaBuffer{size: n * dt.Size(), owned: true}
	if buf.size > 0 {
		if buf.ptr, err = cudaAlloc(buf.size); err != nil {
			return nil, fmt.Errorf("kgenrt: NewCUDA(%v, %v): %w", dt, shape, err)
		}
		runtime.SetFinalizer(buf, func(b *cudaBuffer) {
			if !b.freed {
				cudaFree(b.ptr)
			}
		})
	}
	return &Tensor{dtype: dt, shape: cloneShape(shape, n), cuda: buf}, nil
}

// WrapCUDA returns a tensor over device memory the caller owns: ptr holds
// the elements of dt laid out as shape, in the primary context of device 0
// (the one the CUDA port uses; PyTorch and the runtime API use it too). The
// tensor does not own the memory: Free refuses it, and nothing frees it.
// ptr must be 16-byte aligned (the kernels' vector loads) and non-zero
// unless the shape holds no element; kgenrt cannot check that the range is
// allocated.
func WrapCUDA(ptr DevicePtr, dt DType, shape ...int) (*Tensor, error) {
	n, err := count(dt, shape)
	if err != nil {
		return nil, err
	}
	size := n * dt.Size()
	if size > 0 && (ptr == 0 || ptr%16 != 0) {
		return nil, fmt.Errorf("kgenrt: WrapCUDA: device pointer %#x is null or not 16-byte aligned", uintptr(ptr))
	}
	if uintptr(ptr)+uintptr(size) < uintptr(ptr) {
		return nil, fmt.Errorf("kgenrt: WrapCUDA: %d bytes at %#x wrap the address space", size, uintptr(ptr))
	}
	return &Tensor{dtype: dt, shape: cloneShape(shape, n), cuda: &cudaBuffer{ptr: ptr, size: size}}, nil
}

// OnCUDA reports whether t lives in CUDA device memory (NewCUDA, WrapCUDA).
func (t *Tensor) OnCUDA() bool { return t.cuda != nil }

// DevicePtr returns the CUdeviceptr of a CUDA tensor's first element (for
// a view: the buffer's pointer plus its byte offset), or 0 for a host
// tensor, for your own CUDA calls. For a tensor made by NewCUDA keep the
// Tensor reachable (runtime.KeepAlive) while you use the pointer.
func (t *Tensor) DevicePtr() DevicePtr {
	if t.cuda == nil {
		return 0
	}
	return t.cudaPtr()
}

// cudaPtr is a CUDA tensor's first element: the buffer plus the offset.
func (t *Tensor) cudaPtr() DevicePtr {
	return t.cuda.ptr + DevicePtr(t.offset*t.dtype.Size())
}

// Free releases the device memory of a tensor made by NewCUDA. A launch
// already enqueued that uses it must have finished. Launchers refuse a
// freed tensor; Free refuses host tensors, tensors made by WrapCUDA, and
// a second Free.
func (t *Tensor) Free() error {
	switch {
	case t.cuda == nil:
		return fmt.Errorf("kgenrt: Free: not a CUDA tensor (host memory is the garbage collector's)")
	case !t.cuda.owned:
		return fmt.Errorf("kgenrt: Free: the tensor wraps device memory at %#x that its caller owns (WrapCUDA)", uintptr(t.cuda.ptr))
	case t.cuda.freed:
		return fmt.Errorf("kgenrt: Free: the tensor was already freed")
	}
	t.cuda.freed = true
	runtime.SetFinalizer(t.cuda, nil)
	if t.cuda.size == 0 {
		return nil
	}
	return cudaFree(t.cuda.ptr)
}

// Copy copies src's elements into dst: host (or Metal) to CUDA, CUDA to
// host, CUDA to CUDA, or host to host. Both must have the same dtype and
// number of elements; either may be a view, and elements go in logical
// (row-major) order, so Copy makes a dense copy of a strided view (a
// strided CUDA view is staged through host memory: its reachable span is
// read, and for a destination written back with its gaps unchanged). A
// strided destination must not write one place twice (a 0 stride), and a
// strided copy between views that may share elements is refused. Device copies run on the legacy default stream and
// Copy returns when the bytes are in place (it synchronizes the context),
// so work you enqueued on your own stream that touches either tensor must
// be finished first.
func Copy(dst, src *Tensor) error {
	switch {
	case dst == nil || src == nil:
		return fmt.Errorf("kgenrt: Copy: nil tensor")
	case dst.dtype != src.dtype || dst.Len() != src.Len():
		return fmt.Errorf("kgenrt: Copy: %v tensor of %d elements into %v tensor of %d elements; want the same dtype and length", src.dtype, src.Len(), dst.dtype, dst.Len())
	case dst.cuda != nil && dst.cuda.freed, src.cuda != nil && src.cuda.freed:
		return fmt.Errorf("kgenrt: Copy: a CUDA tensor that was freed")
	case dst.Len() == 0:
		return nil
	case !dst.injective():
		return fmt.Errorf("kgenrt: Copy: the destination view (shape %v, strides %v) writes some places more than once", dst.shape, dst.strides)
	case (dst.strides != nil || src.strides != nil) && mayAlias(dst, src):
		return fmt.Errorf("kgenrt: Copy: strided views that may share elements (copy through a dense tensor)")
	case dst.cuda == nil && src.cuda == nil:
		copyHost(dst, src)
		return nil
	case dst.strides == nil && src.strides == nil:
		return cudaCopy(dst, src)
	}
	return copyStaged(dst, src)
}

// copyStaged copies where a strided view meets a CUDA tensor: a CUDA
// source comes to the host as an image of its reachable span, a strided
// host source is made dense, and a strided CUDA destination's span is read,
// written element by element and put back (its gaps as they were), so
// cudaCopy only ever sees contiguous tensors.
func copyStaged(dst, src *Tensor) error {
	if src.cuda != nil {
		img, err := New(src.dtype, src.reach())
		if err != nil {
			return err
		}
		if err := cudaCopy(img, src.spanView()); err != nil {
			return err
		}
		return Copy(dst, &Tensor{dtype: src.dtype, shape: src.shape, strides: src.strides, data: img.data})
	}
	if dst.strides == nil {
		tmp, err := New(src.dtype, src.shape...)
		if err != nil {
			return err
		}
		copyHost(tmp, src)
		return cudaCopy(dst, tmp)
	}
	img, err := New(dst.dtype, dst.reach())
	if err != nil {
		return err
	}
	span := dst.spanView()
	if err := cudaCopy(img, span); err != nil {
		return err
	}
	copyHost(&Tensor{dtype: dst.dtype, shape: dst.shape, strides: dst.strides, data: img.data}, src)
	return cudaCopy(span, img)
}
