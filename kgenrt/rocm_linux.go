//go:build linux && (amd64 || arm64)

package kgenrt

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// HIP's module API through purego: libamdhip64.so is opened at first use,
// every entry point is looked up by name, and every hipError_t is checked
// and turned into a *ROCmError with the runtime's name and text for it.
// Device 0, the runtime's default for every host thread, runs everything;
// all calls take integers and pointers (scalars travel inside
// kernelParams), so no C float ABI is involved.

// rocmDriver is the ROCm row of the driver table (gpu.go).
var rocmDriver = &gpuDriver{
	backend:     ROCm,
	ready:       rocmReady,
	session:     func(f func() error) error { return f() },
	loadModule:  rocmLoadModule,
	getFunction: rocmGetFunction,
	alloc:       rocmAlloc,
	free:        func(d DevicePtr) error { return hipCheck("hipFree", hipRT.free(uintptr(d))) },
	toDevice:    func(d DevicePtr, data []byte) error { return rocmCopy(true, uintptr(d), data) },
	toHost:      func(data []byte, d DevicePtr) error { return rocmCopy(false, uintptr(d), data) },
	copyDtoD: func(dst, src DevicePtr, n int) error {
		return hipCheck("hipMemcpyDtoD", hipRT.memcpyDtoD(uintptr(dst), uintptr(src), uintptr(n)))
	},
	zero: func(d DevicePtr, n int) error {
		if err := hipCheck("hipMemset", hipRT.memset(uintptr(d), 0, uintptr(n))); err != nil {
			return err
		}
		return hipCheck("hipDeviceSynchronize (after hipMemset)", hipRT.synchronize())
	},
	allocAsync: rocmAllocAsync,
	freeAsync:  rocmFreeAsync,
	launch:     rocmLaunch,
	sync:       func(after string) error { return hipCheck("hipDeviceSynchronize ("+after+")", hipRT.synchronize()) },
}

var hipRT struct {
	once sync.Once
	err  error

	symLaunch uintptr // hipModuleLaunchKernel: 11 arguments, called with SyscallN

	init           func(flags uint32) int32
	getDeviceCount func(count *int32) int32
	moduleLoadData func(mod *uintptr, image unsafe.Pointer) int32
	moduleGetFunc  func(fn *uintptr, mod uintptr, name string) int32
	malloc         func(ptr *uintptr, size uintptr) int32
	free           func(ptr uintptr) int32
	memcpyHtoD     func(dst uintptr, src unsafe.Pointer, n uintptr) int32
	memcpyDtoH     func(dst unsafe.Pointer, src uintptr, n uintptr) int32
	memcpyDtoD     func(dst, src uintptr, n uintptr) int32
	memset         func(dst uintptr, v int32, n uintptr) int32
	synchronize    func() int32
	// The stream-ordered allocator (ROCm 5.3): nil when the runtime is
	// older; only kernels with PortPhases need it.
	mallocAsync func(ptr *uintptr, size uintptr, stream uintptr) int32
	freeAsync   func(ptr uintptr, stream uintptr) int32
	errorName   func(e int32) uintptr
	errorString func(e int32) uintptr
}

// rocmLibraries are the names HIP's runtime goes by, newest first.
var rocmLibraries = []string{"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"}

// rocmReady opens the runtime and finds a device, once per process.
func rocmReady() error {
	hipRT.once.Do(func() { hipRT.err = rocmOpen() })
	return hipRT.err
}

func rocmOpen() error {
	var lib uintptr
	var err error
	for _, name := range rocmLibraries {
		if lib, err = purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("HIP's runtime (libamdhip64.so) cannot be opened: %v", err)
	}
	for _, s := range []struct {
		fn   any
		name string
	}{
		{&hipRT.init, "hipInit"}, {&hipRT.getDeviceCount, "hipGetDeviceCount"},
		{&hipRT.moduleLoadData, "hipModuleLoadData"}, {&hipRT.moduleGetFunc, "hipModuleGetFunction"},
		{&hipRT.malloc, "hipMalloc"}, {&hipRT.free, "hipFree"},
		{&hipRT.memcpyHtoD, "hipMemcpyHtoD"}, {&hipRT.memcpyDtoH, "hipMemcpyDtoH"},
		{&hipRT.memcpyDtoD, "hipMemcpyDtoD"}, {&hipRT.memset, "hipMemset"},
		{&hipRT.synchronize, "hipDeviceSynchronize"},
		{&hipRT.errorName, "hipGetErrorName"}, {&hipRT.errorString, "hipGetErrorString"},
	} {
		sym, err := purego.Dlsym(lib, s.name)
		if err != nil {
			return fmt.Errorf("HIP's runtime lacks %s: %v", s.name, err)
		}
		purego.RegisterFunc(s.fn, sym)
	}
	if a, err := purego.Dlsym(lib, "hipMallocAsync"); err == nil {
		if f, err := purego.Dlsym(lib, "hipFreeAsync"); err == nil {
			purego.RegisterFunc(&hipRT.mallocAsync, a)
			purego.RegisterFunc(&hipRT.freeAsync, f)
		}
	}
	if hipRT.symLaunch, err = purego.Dlsym(lib, "hipModuleLaunchKernel"); err != nil {
		return fmt.Errorf("HIP's runtime lacks hipModuleLaunchKernel: %v", err)
	}
	if err := hipCheck("hipInit", hipRT.init(0)); err != nil {
		return err
	}
	var count int32
	if err := hipCheck("hipGetDeviceCount", hipRT.getDeviceCount(&count)); err != nil {
		return err
	}
	if count == 0 {
		return fmt.Errorf("HIP's runtime reports no device")
	}
	return nil
}

// hipCheck turns a hipError_t into nil or a *ROCmError.
func hipCheck(call string, res int32) error {
	if res == 0 {
		return nil
	}
	e := &ROCmError{Call: call, Result: int(res), Name: "hipErrorUnknown", Text: "unknown error"}
	if p := hipRT.errorName(res); p != 0 {
		e.Name = cString(p)
	}
	if p := hipRT.errorString(res); p != 0 {
		e.Text = cString(p)
	}
	return e
}

func rocmLoadModule(image []byte) (gpuModule, error) {
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&image[0])
	var mod uintptr
	err := hipCheck("hipModuleLoadData", hipRT.moduleLoadData(&mod, unsafe.Pointer(&image[0])))
	return gpuModule(mod), err
}

func rocmGetFunction(m gpuModule, name string) (gpuFunction, error) {
	var fn uintptr
	err := hipCheck("hipModuleGetFunction", hipRT.moduleGetFunc(&fn, uintptr(m), name))
	return gpuFunction(fn), err
}

// rocmAlloc allocates n bytes of device memory, uninitialised.
func rocmAlloc(n int) (DevicePtr, error) {
	var d uintptr
	err := hipCheck("hipMalloc", hipRT.malloc(&d, uintptr(n)))
	return DevicePtr(d), err
}

// rocmAllocAsync allocates n bytes of device memory in stream order
// (gpu_phases.go's workspaces).
func rocmAllocAsync(n int, stream CUDAStream) (DevicePtr, error) {
	if hipRT.mallocAsync == nil {
		return 0, fmt.Errorf("kgenrt: HIP's runtime lacks hipMallocAsync (ROCm 5.3+), which a kernel with column reductions needs for its workspaces")
	}
	var d uintptr
	err := hipCheck("hipMallocAsync", hipRT.mallocAsync(&d, uintptr(n), uintptr(stream)))
	return DevicePtr(d), err
}

// rocmFreeAsync frees memory from rocmAllocAsync once the work enqueued on
// stream before it is done.
func rocmFreeAsync(d DevicePtr, stream CUDAStream) error {
	return hipCheck("hipFreeAsync", hipRT.freeAsync(uintptr(d), uintptr(stream)))
}

// rocmLaunch enqueues fn on stream (a hipStream_t; 0 is the null stream)
// with buf's parameters.
func rocmLaunch(fn gpuFunction, blocks, threads uint32, stream CUDAStream, buf *launchBuf) error {
	res, _, _ := purego.SyscallN(hipRT.symLaunch, uintptr(fn), uintptr(blocks), 1, uintptr(max(buf.gridZ, 1)),
		uintptr(threads), 1, 1, 0, uintptr(stream), uintptr(unsafe.Pointer(&buf.params[0])), 0)
	runtime.KeepAlive(buf)
	return hipCheck("hipModuleLaunchKernel", int32(res))
}

// rocmCopy copies host bytes to device memory d (toDevice) or back.
func rocmCopy(toDevice bool, d uintptr, data []byte) error {
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&data[0])
	if toDevice {
		return hipCheck("hipMemcpyHtoD", hipRT.memcpyHtoD(d, unsafe.Pointer(&data[0]), uintptr(len(data))))
	}
	return hipCheck("hipMemcpyDtoH", hipRT.memcpyDtoH(unsafe.Pointer(&data[0]), d, uintptr(len(data))))
}
