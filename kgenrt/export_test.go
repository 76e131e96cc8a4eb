package kgenrt

import (
	"fmt"
	"unsafe"
)

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
		fake.kernel = k
		fake.fns = make([]gpuFunction, len(k.Variants))
		fake.fnErrs = make([]error, len(k.Variants))
	})
	n := new(int)
	old, oldLaunch := p.module, cudaDriver.launch
	p.use(fake)
	cudaDriver.launch = func(gpuFunction, uint32, uint32, CUDAStream, *launchBuf) error { *n++; return nil }
	return n, func() { p.use(old); cudaDriver.launch = oldLaunch }
}

// FakeLaunch is one launch a FakeCUDAForms port made: the entry point (1 +
// the variant's index for the kernel's own, 101 + f·100 + the index for
// CUDAForms[f]'s phase) and the grid.
type FakeLaunch struct {
	Fn              uintptr
	Blocks, Threads uint32
}

// FakeCUDAForms is FakeCUDA recording each launch's entry point and grid,
// so a test sees which form the port picked.
func FakeCUDAForms(k *Kernel) (launches *[]FakeLaunch, restore func()) {
	v, _ := cudaPorts.Load(k)
	p := v.(*cudaPort)
	fake := &CUDAModule{Kernel: k, Hash: "fake"}
	fake.once.Do(func() {
		fake.kernel = k
		for i := range k.Variants {
			fake.fns, fake.fnErrs = append(fake.fns, gpuFunction(1+i)), append(fake.fnErrs, nil)
		}
		for f := range k.CUDAForms {
			var fns []gpuFunction
			for i := range k.Variants {
				fns = append(fns, gpuFunction(101+100*f+i))
			}
			fake.formFns, fake.formErrs = append(fake.formFns, fns), append(fake.formErrs, make([]error, len(fns)))
		}
	})
	got := new([]FakeLaunch)
	old, oldLaunch := p.module, cudaDriver.launch
	p.use(fake)
	cudaDriver.launch = func(fn gpuFunction, blocks, threads uint32, _ CUDAStream, _ *launchBuf) error {
		*got = append(*got, FakeLaunch{Fn: uintptr(fn), Blocks: blocks, Threads: threads})
		return nil
	}
	return got, func() { p.use(old); cudaDriver.launch = oldLaunch }
}

// FakeROCm makes k's ROCm port ready without HIP's runtime, with a driver
// row whose launches, stream-ordered allocations and frees stop where the
// runtime call would be and are logged ("launch@<stream> <entry point>
// <blocks>x<threads>"), so the external tests can follow a generated
// launcher's Enqueue of ROCm tensors (WrapROCm) to the ROCm port. restore
// puts the port and the row back; tests that use it must not run in
// parallel.
func FakeROCm(k *Kernel) (log *[]string, restore func()) {
	v, _ := rocmPorts.Load(k)
	p := v.(*rocmPort)
	fake := &ROCmModule{Kernel: k, Hash: "fake"}
	names := map[gpuFunction]string{}
	fake.once.Do(func() {
		fake.lookup(k, func(name string) (gpuFunction, error) {
			fn := gpuFunction(len(names) + 1)
			names[fn] = name
			return fn, nil
		}, "", false)
	})
	got := new([]string)
	old, saved := p.module, *rocmDriver
	p.module, p.code, p.load = fake, &fake.gpuEntries, fake.load
	next := DevicePtr(1 << 30)
	rocmDriver.launch = func(fn gpuFunction, blocks, threads uint32, s CUDAStream, _ *launchBuf) error {
		*got = append(*got, fmt.Sprintf("launch@%d %s %dx%d", s, names[fn], blocks, threads))
		return nil
	}
	rocmDriver.allocAsync = func(n int, s CUDAStream) (DevicePtr, error) {
		*got = append(*got, fmt.Sprintf("allocAsync@%d %d", s, n))
		next += 1 << 20
		return next, nil
	}
	rocmDriver.freeAsync = func(_ DevicePtr, s CUDAStream) error {
		*got = append(*got, fmt.Sprintf("freeAsync@%d", s))
		return nil
	}
	return got, func() {
		p.module, p.code, p.load = old, &old.gpuEntries, old.load
		*rocmDriver = saved
	}
}
