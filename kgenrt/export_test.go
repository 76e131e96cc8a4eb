package kgenrt

import "unsafe"

// PrepareCUDA exposes the CUDA port's launch preparation to the external
// tests (which may import generated packages): the blocks, and the args
// struct as the kernel receives it.
func PrepareCUDA(c *Call, ptrs []DevicePtr) (uint32, []byte, error) {
	var buf launchBuf
	blocks, err := newCUDAGeom(c.Kernel).prepare(c, ptrs, &buf)
	if err != nil {
		return 0, nil, err
	}
	args := unsafe.Slice((*byte)(buf.params[len(ptrs)]), len(c.Args))
	return blocks, append([]byte(nil), args...), nil
}

// FakeCUDA makes k's CUDA port ready without a driver, with launches that
// stop where the driver call would be and count themselves, so the
// external tests can time a typed Enqueue's host path and count its
// allocations where no GPU is. restore puts the port and the launch back;
// tests that use it must not run in parallel.
func FakeCUDA(k *Kernel) (launches *int, restore func()) {
	v, _ := cudaPorts.Load(k)
	p := v.(*cudaPort)
	fake := &CUDAModule{Kernel: k, Hash: "fake"}
	fake.once.Do(func() {
		fake.fns = make([]cudaFunction, len(k.Variants))
		fake.fnErrs = make([]error, len(k.Variants))
	})
	n := new(int)
	old, oldLaunch := p.module, launchKernel
	p.module = fake
	launchKernel = func(cudaFunction, uint32, uint32, CUDAStream, *launchBuf) error { *n++; return nil }
	return n, func() { p.module, launchKernel = old, oldLaunch }
}
