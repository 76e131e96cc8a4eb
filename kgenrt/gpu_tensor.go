package kgenrt

import (
	"fmt"
	"runtime"
)

// GPU device tensors, CUDA's (cuda_tensor.go) and ROCm's (rocm_tensor.go).
// A Tensor made by NewCUDA or NewROCm owns device memory of the device the
// port uses (ordinal 0); one made by WrapCUDA or WrapROCm views memory the
// caller owns. Either kind is bound by its backend's port without copies:
// Run launches on the default stream and waits, Enqueue (the generated
// launchers' Enqueue) launches on the caller's stream and returns at once.
// The launchers check them as they check host tensors (dtype table,
// shapes, 32-bit limit, overlap by device address). They have no host
// bytes: Bytes is nil, and Copy moves elements between them and host
// tensors. Everything here goes through the buffer's driver row (gpu.go).

// gpuBuffer is a tensor's device memory on drv's device.
type gpuBuffer struct {
	drv   *gpuDriver
	ptr   DevicePtr
	size  int  // bytes
	owned bool // allocated by NewCUDA or NewROCm: Free (or the finalizer) releases it
	freed bool
}

// newGPU returns a zeroed tensor of storage dtype dt in device memory of
// drv's device; what names the constructor in errors ("NewCUDA").
func newGPU(drv *gpuDriver, what string, dt DType, shape []int) (*Tensor, error) {
	n, err := count(dt, shape)
	if err != nil {
		return nil, err
	}
	if err := drv.ready(); err != nil {
		return nil, noGPUError{drv.backend, err}
	}
	buf := &gpuBuffer{drv: drv, size: n * dt.Size(), owned: true}
	if buf.size > 0 {
		if buf.ptr, err = gpuAlloc(drv, buf.size); err != nil {
			return nil, fmt.Errorf("kgenrt: %s(%v, %v): %w", what, dt, shape, err)
		}
		runtime.SetFinalizer(buf, func(b *gpuBuffer) {
			if !b.freed {
				b.release()
			}
		})
	}
	return &Tensor{dtype: dt, shape: cloneShape(shape, n), gpu: buf}, nil
}

// gpuAlloc allocates n zeroed bytes of device memory.
func gpuAlloc(drv *gpuDriver, n int) (DevicePtr, error) {
	var d DevicePtr
	err := drv.session(func() error {
		var err error
		if d, err = drv.alloc(n); err != nil {
			return err
		}
		if err = drv.zero(d, n); err != nil {
			drv.free(d)
		}
		return err
	})
	return d, err
}

// release frees the buffer's memory.
func (b *gpuBuffer) release() error {
	return b.drv.session(func() error { return b.drv.free(b.ptr) })
}

// wrapGPU returns a tensor over drv's device memory that the caller owns;
// what names the constructor in errors ("WrapCUDA").
func wrapGPU(drv *gpuDriver, what string, ptr DevicePtr, dt DType, shape []int) (*Tensor, error) {
	n, err := count(dt, shape)
	if err != nil {
		return nil, err
	}
	size := n * dt.Size()
	if size > 0 && (ptr == 0 || ptr%16 != 0) {
		return nil, fmt.Errorf("kgenrt: %s: device pointer %#x is null or not 16-byte aligned", what, uintptr(ptr))
	}
	if uintptr(ptr)+uintptr(size) < uintptr(ptr) {
		return nil, fmt.Errorf("kgenrt: %s: %d bytes at %#x wrap the address space", what, size, uintptr(ptr))
	}
	return &Tensor{dtype: dt, shape: cloneShape(shape, n), gpu: &gpuBuffer{drv: drv, ptr: ptr, size: size}}, nil
}

// onGPU reports whether t lives in backend b's device memory.
func (t *Tensor) onGPU(b Backend) bool { return t.gpu != nil && t.gpu.drv.backend == b }

// DevicePtr returns the device address of a CUDA or ROCm tensor's first
// element (a CUdeviceptr, a HIP device pointer; for a view: the buffer's
// pointer plus its byte offset), or 0 for a host tensor, for your own
// calls. For a tensor made by NewCUDA or NewROCm keep the Tensor reachable
// (runtime.KeepAlive) while you use the pointer.
func (t *Tensor) DevicePtr() DevicePtr {
	if t.gpu == nil {
		return 0
	}
	return t.gpuPtr()
}

// gpuPtr is a device tensor's first element: the buffer plus the offset.
func (t *Tensor) gpuPtr() DevicePtr {
	return t.gpu.ptr + DevicePtr(t.offset*t.dtype.Size())
}

// Free releases the device memory of a tensor made by NewCUDA or NewROCm.
// A launch already enqueued that uses it must have finished. Launchers
// refuse a freed tensor; Free refuses host tensors, tensors made by
// WrapCUDA or WrapROCm, and a second Free.
func (t *Tensor) Free() error {
	switch {
	case t.gpu == nil:
		return fmt.Errorf("kgenrt: Free: not a CUDA tensor (host memory is the garbage collector's)")
	case !t.gpu.owned:
		return fmt.Errorf("kgenrt: Free: the tensor wraps device memory at %#x that its caller owns (Wrap%s)", uintptr(t.gpu.ptr), t.gpu.drv.backend.title())
	case t.gpu.freed:
		return fmt.Errorf("kgenrt: Free: the tensor was already freed")
	}
	t.gpu.freed = true
	runtime.SetFinalizer(t.gpu, nil)
	if t.gpu.size == 0 {
		return nil
	}
	return t.gpu.release()
}

// Copy copies src's elements into dst: host (or Metal) to CUDA, CUDA to
// host, CUDA to CUDA, or host to host; ROCm tensors as CUDA's, but a copy
// between a CUDA and a ROCm tensor is refused (go through a host tensor). Both must have the same dtype and
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
	case dst.gpu != nil && dst.gpu.freed, src.gpu != nil && src.gpu.freed:
		return fmt.Errorf("kgenrt: Copy: a %s tensor that was freed", freedOf(dst, src))
	case dst.gpu != nil && src.gpu != nil && dst.gpu.drv != src.gpu.drv:
		return fmt.Errorf("kgenrt: Copy: a %s tensor into a %s tensor (copy through a host tensor)", src.gpu.drv.backend.title(), dst.gpu.drv.backend.title())
	case dst.Len() == 0:
		return nil
	case !dst.injective():
		return fmt.Errorf("kgenrt: Copy: the destination view (shape %v, strides %v) writes some places more than once", dst.shape, dst.strides)
	case (dst.strides != nil || src.strides != nil) && mayAlias(dst, src):
		return fmt.Errorf("kgenrt: Copy: strided views that may share elements (copy through a dense tensor)")
	case dst.gpu == nil && src.gpu == nil:
		copyHost(dst, src)
		return nil
	case dst.strides == nil && src.strides == nil:
		return gpuCopy(dst, src)
	}
	return copyStaged(dst, src)
}

// copyStaged copies where a strided view meets a device tensor: a device
// source comes to the host as an image of its reachable span, a strided
// host source is made dense, and a strided device destination's span is
// read, written element by element and put back (its gaps as they were),
// so gpuCopy only ever sees contiguous tensors.
func copyStaged(dst, src *Tensor) error {
	if src.gpu != nil {
		img, err := New(src.dtype, src.reach())
		if err != nil {
			return err
		}
		if err := gpuCopy(img, src.spanView()); err != nil {
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
		return gpuCopy(dst, tmp)
	}
	img, err := New(dst.dtype, dst.reach())
	if err != nil {
		return err
	}
	span := dst.spanView()
	if err := gpuCopy(img, span); err != nil {
		return err
	}
	copyHost(&Tensor{dtype: dst.dtype, shape: dst.shape, strides: dst.strides, data: img.data}, src)
	return gpuCopy(span, img)
}

// freedOf names the backend of the freed one of dst and src.
func freedOf(dst, src *Tensor) string {
	if dst.gpu != nil && dst.gpu.freed {
		return dst.gpu.drv.backend.title()
	}
	return src.gpu.drv.backend.title()
}

// gpuCopy copies src's bytes into dst (same size, contiguous; at least one
// a device tensor, both of one backend) and waits for the copy.
func gpuCopy(dst, src *Tensor) error {
	drv := src.gpu
	if dst.gpu != nil {
		drv = dst.gpu
	}
	d := drv.drv
	if err := d.ready(); err != nil {
		return noGPUError{d.backend, err}
	}
	return d.session(func() error {
		var err error
		switch {
		case dst.gpu != nil && src.gpu != nil:
			err = d.copyDtoD(dst.gpuPtr(), src.gpuPtr(), dst.nbytes())
		case dst.gpu != nil:
			err = d.toDevice(dst.gpuPtr(), src.data)
		default:
			err = d.toHost(dst.data, src.gpuPtr())
		}
		if err != nil {
			return err
		}
		return d.sync("after a copy")
	})
}
