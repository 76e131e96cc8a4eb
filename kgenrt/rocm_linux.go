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

type rocmModuleHandle uintptr

type rocmFunction uintptr

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
	synchronize    func() int32
	errorName      func(e int32) uintptr
	errorString    func(e int32) uintptr
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
		{&hipRT.synchronize, "hipDeviceSynchronize"},
		{&hipRT.errorName, "hipGetErrorName"}, {&hipRT.errorString, "hipGetErrorString"},
	} {
		sym, err := purego.Dlsym(lib, s.name)
		if err != nil {
			return fmt.Errorf("HIP's runtime lacks %s: %v", s.name, err)
		}
		purego.RegisterFunc(s.fn, sym)
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

func rocmLoadModule(image []byte) (rocmModuleHandle, error) {
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&image[0])
	var mod uintptr
	err := hipCheck("hipModuleLoadData", hipRT.moduleLoadData(&mod, unsafe.Pointer(&image[0])))
	return rocmModuleHandle(mod), err
}

func rocmGetFunction(m rocmModuleHandle, name string) (rocmFunction, error) {
	var fn uintptr
	err := hipCheck("hipModuleGetFunction", hipRT.moduleGetFunc(&fn, uintptr(m), name))
	return rocmFunction(fn), err
}

// rocmRunHost stages c's host tensors through device buffers (tensors that
// are the same bytes share one), launches fn on the null stream with the
// launch g prepares, waits, and copies the outputs back.
func rocmRunHost(g *cudaGeom, fn rocmFunction, c *Call) error {
	plan := stages(c)
	ptrs := make([]DevicePtr, len(plan))
	var allocated []uintptr
	defer func() {
		for _, d := range allocated {
			hipRT.free(d)
		}
	}()
	for i, st := range plan {
		if st.SameAs >= 0 {
			ptrs[i] = ptrs[st.SameAs]
			continue
		}
		data := st.Tensor.data
		if len(data) == 0 {
			continue // an empty segment: the kernel reads and writes none of it
		}
		var d uintptr
		if err := hipCheck("hipMalloc", hipRT.malloc(&d, uintptr(len(data)))); err != nil {
			return err
		}
		allocated = append(allocated, d)
		ptrs[i] = DevicePtr(d)
		if err := rocmCopy(true, d, data); err != nil {
			return err
		}
	}
	buf := getLaunchBuf()
	defer launchBufs.Put(buf)
	blocks, err := g.prepare(c, ptrs, buf)
	if err != nil {
		return err
	}
	res, _, _ := purego.SyscallN(hipRT.symLaunch, uintptr(fn), uintptr(blocks), 1, uintptr(max(buf.gridZ, 1)),
		uintptr(g.threads), 1, 1, 0, 0, uintptr(unsafe.Pointer(&buf.params[0])), 0)
	runtime.KeepAlive(buf)
	if err := hipCheck("hipModuleLaunchKernel ("+c.Variant.HostName+")", int32(res)); err != nil {
		return err
	}
	if err := hipCheck("hipDeviceSynchronize (after "+c.Variant.HostName+")", hipRT.synchronize()); err != nil {
		return err
	}
	for i, st := range plan {
		if !st.CopyOut || len(st.Tensor.data) == 0 {
			continue
		}
		if st.Tensor.strides == nil {
			if err := rocmCopy(false, uintptr(ptrs[i]), st.Tensor.data); err != nil {
				return err
			}
			continue
		}
		img := make([]byte, len(st.Tensor.data)) // a strided output: only its elements come back
		if err := rocmCopy(false, uintptr(ptrs[i]), img); err != nil {
			return err
		}
		st.Tensor.copyElems(st.Tensor.data, img)
	}
	return nil
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
