package kgenrt

// ROCm device tensors: the ROCm row's constructors of gpu_tensor.go's
// device tensors, bound in place by the ROCm port's Run and Enqueue.

// NewROCm returns a zeroed tensor of storage dtype dt in device memory of
// HIP's device 0 (hipMalloc: 256-byte aligned). Release it with Free; an
// owned tensor that becomes unreachable is freed by its finalizer, so keep
// the Tensor reachable while you use its DevicePtr. It fails with the
// runtime's reason where ROCm cannot run (errors.Is(err, ErrNoPort)).
func NewROCm(dt DType, shape ...int) (*Tensor, error) {
	return newGPU(rocmDriver, "NewROCm", dt, shape)
}

// WrapROCm returns a tensor over HIP device memory the caller owns (device
// 0, the one the ROCm port uses): ptr holds the elements of dt laid out as
// shape. The tensor does not own the memory: Free refuses it, and nothing
// frees it. ptr must be 16-byte aligned and non-zero unless the shape
// holds no element.
func WrapROCm(ptr DevicePtr, dt DType, shape ...int) (*Tensor, error) {
	return wrapGPU(rocmDriver, "WrapROCm", ptr, dt, shape)
}

// OnROCm reports whether t lives in ROCm device memory (NewROCm, WrapROCm).
func (t *Tensor) OnROCm() bool { return t.onGPU(ROCm) }
