//go:build linux && (amd64 || arm64)

package kgenrt

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// The CUDA driver API through purego: libcuda.so.1 is opened at first use,
// every entry point is looked up by name, and every CUresult is checked and
// turned into a *CUDAError with the driver's name and text for it. All calls
// take integers and pointers; scalars travel inside kernelParams, so no C
// float ABI is involved. One device (ordinal 0) and its primary context per
// process; each sequence of calls runs on a locked OS thread with that
// context made current.
//
// The launch itself (cuLaunchKernel, and cuCtxGetCurrent before it) goes
// through driverCall (cuda_call_linux.go) on the symbol's address rather
// than a RegisterFunc'd Go func (reflection, 10 allocations per call) or
// purego.SyscallN (2 allocations per call): the launch allocates nothing.

var cu struct {
	once sync.Once
	err  error
	ctx  uintptr
	dev  int32

	symLaunchKernel  uintptr // cuLaunchKernel, called with SyscallN
	symCtxGetCurrent uintptr // cuCtxGetCurrent, called with SyscallN

	init              func(flags uint32) uintptr
	deviceGetCount    func(count *int32) uintptr
	deviceGet         func(dev *int32, ordinal int32) uintptr
	primaryCtxRetain  func(ctx *uintptr, dev int32) uintptr
	ctxSetCurrent     func(ctx uintptr) uintptr
	ctxSynchronize    func() uintptr
	moduleLoadData    func(mod *uintptr, image unsafe.Pointer) uintptr
	moduleGetFunction func(fn *uintptr, mod uintptr, name string) uintptr
	memAlloc          func(dptr *uintptr, size uintptr) uintptr
	memFree           func(dptr uintptr) uintptr
	memcpyHtoD        func(dst uintptr, src unsafe.Pointer, n uintptr) uintptr
	memcpyDtoH        func(dst unsafe.Pointer, src uintptr, n uintptr) uintptr
	memcpyDtoD        func(dst, src uintptr, n uintptr) uintptr
	memsetD8          func(dst uintptr, v uint8, n uintptr) uintptr
	// The stream-ordered allocator (CUDA 11.2): nil when the driver is
	// older; only kernels with PortPhases need it.
	memAllocAsync  func(dptr *uintptr, size uintptr, stream uintptr) uintptr
	memFreeAsync   func(dptr uintptr, stream uintptr) uintptr
	getErrorName   func(res uintptr, s *uintptr) uintptr
	getErrorString func(res uintptr, s *uintptr) uintptr
}

// cudaDriver is the CUDA row of the driver table (gpu.go).
var cudaDriver = &gpuDriver{
	backend:     CUDA,
	ready:       cudaReady,
	session:     withContext,
	loadModule:  cudaLoadModule,
	getFunction: cudaGetFunction,
	alloc:       cudaMemAlloc,
	free:        func(d DevicePtr) error { return cuCheck("cuMemFree", cu.memFree(uintptr(d))) },
	toDevice:    func(d DevicePtr, data []byte) error { return hostToDevice(uintptr(d), data) },
	toHost:      func(data []byte, d DevicePtr) error { return deviceToHost(data, uintptr(d)) },
	copyDtoD: func(dst, src DevicePtr, n int) error {
		return cuCheck("cuMemcpyDtoD", cu.memcpyDtoD(uintptr(dst), uintptr(src), uintptr(n)))
	},
	zero: func(d DevicePtr, n int) error {
		if err := cuCheck("cuMemsetD8", cu.memsetD8(uintptr(d), 0, uintptr(n))); err != nil {
			return err
		}
		return cuCheck("cuCtxSynchronize (after cuMemsetD8)", cu.ctxSynchronize())
	},
	allocAsync: cudaAllocAsync,
	freeAsync:  cudaFreeAsync,
	launch:     cudaLaunchKernel,
	sync:       func(after string) error { return cuCheck("cuCtxSynchronize ("+after+")", cu.ctxSynchronize()) },
}

// cudaReady opens the driver, finds a device and retains its primary
// context, once per process.
func cudaReady() error {
	cu.once.Do(func() { cu.err = cudaOpen() })
	return cu.err
}

func cudaOpen() error {
	lib, err := purego.Dlopen("libcuda.so.1", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return fmt.Errorf("the CUDA driver (libcuda.so.1) cannot be opened: %v", err)
	}
	for _, s := range []struct {
		fn   any
		name string
	}{
		{&cu.init, "cuInit"}, {&cu.deviceGetCount, "cuDeviceGetCount"}, {&cu.deviceGet, "cuDeviceGet"},
		{&cu.primaryCtxRetain, "cuDevicePrimaryCtxRetain"}, {&cu.ctxSetCurrent, "cuCtxSetCurrent"},
		{&cu.ctxSynchronize, "cuCtxSynchronize"}, {&cu.moduleLoadData, "cuModuleLoadData"},
		{&cu.moduleGetFunction, "cuModuleGetFunction"}, {&cu.memAlloc, "cuMemAlloc_v2"},
		{&cu.memFree, "cuMemFree_v2"}, {&cu.memcpyHtoD, "cuMemcpyHtoD_v2"}, {&cu.memcpyDtoH, "cuMemcpyDtoH_v2"},
		{&cu.memcpyDtoD, "cuMemcpyDtoD_v2"}, {&cu.memsetD8, "cuMemsetD8_v2"},
		{&cu.getErrorName, "cuGetErrorName"},
		{&cu.getErrorString, "cuGetErrorString"},
	} {
		sym, err := purego.Dlsym(lib, s.name)
		if err != nil {
			return fmt.Errorf("the CUDA driver (libcuda.so.1) lacks %s: %v", s.name, err)
		}
		purego.RegisterFunc(s.fn, sym)
	}
	if a, err := purego.Dlsym(lib, "cuMemAllocAsync"); err == nil {
		if f, err := purego.Dlsym(lib, "cuMemFreeAsync"); err == nil {
			purego.RegisterFunc(&cu.memAllocAsync, a)
			purego.RegisterFunc(&cu.memFreeAsync, f)
		}
	}
	for _, s := range []struct {
		sym  *uintptr
		name string
	}{{&cu.symLaunchKernel, "cuLaunchKernel"}, {&cu.symCtxGetCurrent, "cuCtxGetCurrent"}} {
		if *s.sym, err = purego.Dlsym(lib, s.name); err != nil {
			return fmt.Errorf("the CUDA driver (libcuda.so.1) lacks %s: %v", s.name, err)
		}
	}
	if err := cuCheck("cuInit", cu.init(0)); err != nil {
		return err
	}
	var count int32
	if err := cuCheck("cuDeviceGetCount", cu.deviceGetCount(&count)); err != nil {
		return err
	}
	if count == 0 {
		return errNoCUDADevice
	}
	if err := cuCheck("cuDeviceGet", cu.deviceGet(&cu.dev, 0)); err != nil {
		return err
	}
	return cuCheck("cuDevicePrimaryCtxRetain", cu.primaryCtxRetain(&cu.ctx, cu.dev))
}

// cuCheck turns a CUresult into nil or a *CUDAError.
func cuCheck(call string, res uintptr) error {
	res = uintptr(uint32(res))
	if res == 0 {
		return nil
	}
	e := &CUDAError{Call: call, Result: int(res), Name: "CUDA_ERROR_UNKNOWN", Text: "unknown error"}
	var s uintptr
	if cu.getErrorName != nil && uint32(cu.getErrorName(res, &s)) == 0 && s != 0 {
		e.Name = cString(s)
	}
	if cu.getErrorString != nil && uint32(cu.getErrorString(res, &s)) == 0 && s != 0 {
		e.Text = cString(s)
	}
	return e
}

// cString copies a NUL-terminated C string owned by the driver.
func cString(p uintptr) string {
	base := *(**byte)(unsafe.Pointer(&p))
	var b []byte
	for i := 0; i < 4096; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(base), i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

// withContext runs f on a locked OS thread with the primary context current.
func withContext(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cuCheck("cuCtxSetCurrent", cu.ctxSetCurrent(cu.ctx)); err != nil {
		return err
	}
	return f()
}

func cudaLoadModule(image []byte) (gpuModule, error) {
	var mod uintptr
	err := withContext(func() error {
		var pin runtime.Pinner
		defer pin.Unpin()
		pin.Pin(&image[0])
		return cuCheck("cuModuleLoadData", cu.moduleLoadData(&mod, unsafe.Pointer(&image[0])))
	})
	return gpuModule(mod), err
}

func cudaGetFunction(m gpuModule, name string) (gpuFunction, error) {
	var fn uintptr
	err := withContext(func() error {
		return cuCheck("cuModuleGetFunction", cu.moduleGetFunction(&fn, uintptr(m), name))
	})
	return gpuFunction(fn), err
}

// cudaMemAlloc allocates n bytes of device memory, uninitialised, in a
// session (withContext).
func cudaMemAlloc(n int) (DevicePtr, error) {
	var d uintptr
	err := cuCheck("cuMemAlloc", cu.memAlloc(&d, uintptr(n)))
	return DevicePtr(d), err
}

func hostToDevice(d uintptr, data []byte) error {
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&data[0])
	return cuCheck("cuMemcpyHtoD", cu.memcpyHtoD(d, unsafe.Pointer(&data[0]), uintptr(len(data))))
}

func deviceToHost(data []byte, d uintptr) error {
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&data[0])
	return cuCheck("cuMemcpyDtoH", cu.memcpyDtoH(unsafe.Pointer(&data[0]), d, uintptr(len(data))))
}

// cudaLaunchKernel enqueues fn with buf's parameters on stream, on a locked
// OS thread where the primary context is current: it is made current only
// when it is not (cuCtxGetCurrent is a read; a push/pop or set per launch is
// not needed). Both driver calls go through driverCall, on buf's call
// frame: nothing here allocates.
func cudaLaunchKernel(fn gpuFunction, blocks, threads uint32, stream CUDAStream, buf *launchBuf) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f := &buf.call
	*f = driverFrame{fn: cu.symCtxGetCurrent, a1: uintptr(unsafe.Pointer(&buf.cur))}
	if res := driverCall(f); uint32(res) != 0 {
		return cuCheck("cuCtxGetCurrent", res)
	}
	if buf.cur != cu.ctx {
		if err := cuCheck("cuCtxSetCurrent", cu.ctxSetCurrent(cu.ctx)); err != nil {
			return err
		}
	}
	*f = driverFrame{fn: cu.symLaunchKernel, a1: uintptr(fn), a2: uintptr(blocks), a3: 1, a4: uintptr(max(buf.gridZ, 1)),
		a5: uintptr(threads), a6: 1, a7: 1, a8: 0, a9: uintptr(stream), a10: uintptr(unsafe.Pointer(&buf.params[0])), a11: 0}
	res := driverCall(f)
	runtime.KeepAlive(buf)
	if uint32(res) != 0 {
		return cuCheck("cuLaunchKernel", res)
	}
	return nil
}

// cudaAllocAsync allocates n bytes of device memory in stream order: usable
// by the work enqueued on stream after it (gpu_phases.go).
func cudaAllocAsync(n int, stream CUDAStream) (DevicePtr, error) {
	if cu.memAllocAsync == nil {
		return 0, fmt.Errorf("kgenrt: the CUDA driver lacks cuMemAllocAsync (CUDA 11.2+), which a kernel with column reductions needs for its workspaces")
	}
	var d uintptr
	err := withContext(func() error {
		return cuCheck("cuMemAllocAsync", cu.memAllocAsync(&d, uintptr(n), uintptr(stream)))
	})
	return DevicePtr(d), err
}

// cudaFreeAsync frees memory from cudaAllocAsync once the work enqueued on
// stream before it is done.
func cudaFreeAsync(d DevicePtr, stream CUDAStream) error {
	return withContext(func() error { return cuCheck("cuMemFreeAsync", cu.memFreeAsync(uintptr(d), uintptr(stream))) })
}

// cudaOpenLibrary opens a library module (cuda_library.go).
func cudaOpenLibrary(path string) (gpuModule, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return 0, fmt.Errorf("opening the CUDA library %s: %v", path, err)
	}
	return gpuModule(h), nil
}

func cudaLibraryFunction(m gpuModule, name string) (gpuFunction, error) {
	fn, err := purego.Dlsym(uintptr(m), name)
	if err != nil {
		return 0, fmt.Errorf("no host function %s: %v", name, err)
	}
	return gpuFunction(fn), nil
}

// cudaCallLibrary calls a library module's host function on a thread where
// the primary context is current (the library's CUDA runtime uses it).
func cudaCallLibrary(fn gpuFunction, stream CUDAStream, c *Call, ptrs []DevicePtr) error {
	return withContext(func() error { return callLibrary(fn, stream, c, ptrs) })
}

// callLibrary passes the stream, the device pointers in binding order, the
// args bytes and a buffer for the reason of a failure, all pinned for the
// call.
func callLibrary(fn gpuFunction, stream CUDAStream, c *Call, ptrs []DevicePtr) error {
	vals := make([]uintptr, len(ptrs))
	for i, d := range ptrs {
		vals[i] = uintptr(d)
	}
	args := append([]byte(nil), c.Args...)
	msg := make([]byte, 512)
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&vals[0])
	pin.Pin(&args[0])
	pin.Pin(&msg[0])
	rc, _, _ := purego.SyscallN(uintptr(fn), uintptr(stream), uintptr(unsafe.Pointer(&vals[0])),
		uintptr(unsafe.Pointer(&args[0])), uintptr(unsafe.Pointer(&msg[0])), uintptr(len(msg)))
	if int32(rc) != 0 {
		if i := bytes.IndexByte(msg, 0); i >= 0 {
			msg = msg[:i]
		}
		return fmt.Errorf("kgenrt: kernel %s: %s: %s", c.Kernel.Name, c.Variant.HostName, msg)
	}
	return nil
}
