package kgenrt

// CUDA device tensors: the CUDA row's constructors of gpu_tensor.go's
// device tensors.

// NewCUDA returns a zeroed tensor of storage dtype dt in device memory of
// the CUDA device (cuMemAlloc: 256-byte aligned). Release it with Free;
// an owned tensor that becomes unreachable is freed by its finalizer, so
// keep the Tensor reachable while you use its DevicePtr. It fails with the
// driver's reason where CUDA cannot run (errors.Is(err, ErrNoPort)).
func NewCUDA(dt DType, shape ...int) (*Tensor, error) {
	return newGPU(cudaDriver, "NewCUDA", dt, shape)
}

// WrapCUDA returns a tensor over device memory the caller owns: ptr holds
// the elements of dt laid out as shape, in the primary context of device 0
// (the one the CUDA port uses; PyTorch and the runtime API use it too). The
// tensor does not own the memory: Free refuses it, and nothing frees it.
// ptr must be 16-byte aligned (the kernels' vector loads) and non-zero
// unless the shape holds no element; kgenrt cannot check that the range is
// allocated.
func WrapCUDA(ptr DevicePtr, dt DType, shape ...int) (*Tensor, error) {
	return wrapGPU(cudaDriver, "WrapCUDA", ptr, dt, shape)
}

// OnCUDA reports whether t lives in CUDA device memory (NewCUDA, WrapCUDA).
func (t *Tensor) OnCUDA() bool { return t.onGPU(CUDA) }
