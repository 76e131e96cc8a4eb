package kgenrt

import "fmt"

// The GPU ports' one driver table. CUDA's driver API and HIP's module API
// are nearly one to one (cuMemAlloc/hipMalloc, cuModuleLoadData/
// hipModuleLoadData, cuLaunchKernel/hipModuleLaunchKernel, streams), so
// everything between a Call and the runtime — the launch geometry, the
// parameter buffer, phases with their workspaces, the staging of host
// tensors, strided outputs copied back — is written once over gpuDriver
// (gpu_port.go, gpu_phases.go), and a backend is one row: cudaDriver
// (cuda_linux.go, libcuda through purego) and rocmDriver (rocm_linux.go,
// libamdhip64). What stays per backend is how its code is found and
// loaded (a fatbin or a CUTLASS library for CUDA, one code object per
// target for ROCm) and the error type its calls return. Tests replace a
// row's functions with a fake that keeps device memory on the host
// (gpu_fake_test.go).

// gpuModule is a loaded module: a CUmodule, a hipModule_t, or a CUDA
// library's dlopen handle.
type gpuModule uintptr

// gpuFunction is an entry point: a CUfunction, a hipFunction_t, or a CUDA
// library's host function.
type gpuFunction uintptr

// gpuDriver is one GPU runtime's calls, as the shared launch code makes
// them. Every func returns the runtime's typed error (*CUDAError,
// *ROCmError) naming the call; the shared code adds the kernel.
type gpuDriver struct {
	backend Backend
	// ready opens the runtime and finds a device, once per process; nil
	// when the port can run here.
	ready func() error
	// session runs f where the runtime's calls may be made (CUDA: on a
	// locked OS thread with the primary context current).
	session func(f func() error) error

	loadModule  func(image []byte) (gpuModule, error)
	getFunction func(m gpuModule, name string) (gpuFunction, error)

	// alloc and free are device memory for staging; free's error is
	// dropped by its callers (a cleanup after the launch's own error).
	alloc    func(n int) (DevicePtr, error)
	free     func(d DevicePtr) error
	toDevice func(d DevicePtr, data []byte) error
	toHost   func(data []byte, d DevicePtr) error
	// copyDtoD copies n bytes between device addresses; zero sets n bytes
	// at d to 0 and waits (a new device tensor).
	copyDtoD func(dst, src DevicePtr, n int) error
	zero     func(d DevicePtr, n int) error
	// allocAsync and freeAsync are stream-ordered (the phases'
	// workspaces): usable by, and freed after, the work enqueued on the
	// stream before them.
	allocAsync func(n int, stream CUDAStream) (DevicePtr, error)
	freeAsync  func(d DevicePtr, stream CUDAStream) error
	// launch enqueues fn on stream with buf's parameters: blocks of
	// threads along x, buf.gridZ along z.
	launch func(fn gpuFunction, blocks, threads uint32, stream CUDAStream, buf *launchBuf) error
	// sync waits for the device; after names what it waits for.
	sync func(after string) error
}

// title is the backend's name in the ports' messages ("CUDA", "ROCm").
func (b Backend) title() string {
	switch b {
	case CUDA:
		return "CUDA"
	case ROCm:
		return "ROCm"
	}
	return b.String()
}

// gpuEntries are a loaded module's entry points, looked up once at load
// so that a launch indexes a slice: per entry of the kernel's Variants,
// the kernel's own (fns), each CUDAForms phase's (formFns) and, for a
// kernel with PortPhases, each phase's per entry of its own Variants
// (phaseFns). A missing one fails only the launches that need it.
type gpuEntries struct {
	kernel    *Kernel
	fns       []gpuFunction
	fnErrs    []error
	formFns   [][]gpuFunction
	formErrs  [][]error
	phaseFns  [][]gpuFunction
	phaseErrs [][]error
}

// lookup fills e for kernel k from get; in names the binary in messages
// (" in gelu-0123.fatbin", or "").
func (e *gpuEntries) lookup(k *Kernel, get func(string) (gpuFunction, error), in string, forms bool) {
	e.kernel = k
	e.fns, e.fnErrs = e.entries(k, get, in)
	if forms {
		for _, f := range k.CUDAForms {
			fns, errs := e.entries(k.Phases[f.Phase], get, in)
			e.formFns, e.formErrs = append(e.formFns, fns), append(e.formErrs, errs)
		}
	}
	if !k.PortPhases && k.PortSplit == nil {
		return
	}
	for _, ph := range k.Phases {
		fns, errs := make([]gpuFunction, len(ph.Variants)), make([]error, len(ph.Variants))
		for i, v := range ph.Variants {
			if fns[i], errs[i] = get(v.HostName); errs[i] != nil {
				errs[i] = fmt.Errorf("kgenrt: kernel %s: entry point %s%s: %w", k.Name, v.HostName, in, errs[i])
			}
		}
		e.phaseFns, e.phaseErrs = append(e.phaseFns, fns), append(e.phaseErrs, errs)
	}
}

// entries looks up the entry point of kernel pk (the module's kernel or
// one of its phases) for each storage dtype of the module kernel's
// variants, in their order.
func (e *gpuEntries) entries(pk *Kernel, get func(string) (gpuFunction, error), in string) ([]gpuFunction, []error) {
	vs := e.kernel.Variants
	fns, errs := make([]gpuFunction, len(vs)), make([]error, len(vs))
	for i, v := range vs {
		host := ""
		for _, pv := range pk.Variants {
			if pv.DType == v.DType {
				host = pv.HostName
			}
		}
		if host == "" {
			errs[i] = fmt.Errorf("kgenrt: kernel %s: %s has no %s variant", e.kernel.Name, pk.Name, v.DType)
			continue
		}
		if fns[i], errs[i] = get(host); errs[i] != nil {
			errs[i] = fmt.Errorf("kgenrt: kernel %s: entry point %s%s: %w", e.kernel.Name, host, in, errs[i])
		}
	}
	return fns, errs
}

// function returns the entry point of variant v (an entry of the kernel's
// dtype-key table, or one with the same host name): the kernel's own, or
// with form f >= 0 that of Kernel.CUDAForms[f]'s phase.
func (e *gpuEntries) function(v *Variant, f int) (gpuFunction, error) {
	vs := e.kernel.Variants
	for i := range vs {
		if &vs[i] == v || vs[i].HostName == v.HostName {
			if f >= 0 {
				return e.formFns[f][i], e.formErrs[f][i]
			}
			return e.fns[i], e.fnErrs[i]
		}
	}
	return 0, fmt.Errorf("kgenrt: kernel %s: no variant %s in its dtype-key table", e.kernel.Name, v.HostName)
}

// phaseFunction is phase i's entry point for the dtype of variant v.
func (e *gpuEntries) phaseFunction(i int, v *Variant) (gpuFunction, error) {
	for j, pv := range e.kernel.Phases[i].Variants {
		if pv.DType == v.DType {
			return e.phaseFns[i][j], e.phaseErrs[i][j]
		}
	}
	return 0, fmt.Errorf("kgenrt: kernel %s: phase %s has no %s variant", e.kernel.Name, e.kernel.Phases[i].Name, v.DType)
}
