//go:build linux && (amd64 || arm64)

package cudagpu

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// drv is the test's own handle on the CUDA driver, opened with purego as
// kgenrt opens it: what a caller with its own CUDA code has (streams, graph
// capture, its own allocations, and the raw cuLaunchKernel the benchmarks
// compare kgen's launcher with). It shares the process's primary context
// with kgenrt.
var drv struct {
	once sync.Once
	err  error
	ctx  uintptr

	// Addresses, called with purego.SyscallN.
	launchKernel, streamCreate, streamSync, streamDestroy, beginCapture, endCapture,
	graphInstantiate, graphLaunch, graphExecDestroy, graphDestroy, memAlloc, memFree,
	moduleLoadData, moduleGetFunction, ctxSetCurrent uintptr
	// launchRegistered is cuLaunchKernel through purego.RegisterFunc, the
	// binding kgenrt's launch used before it called SyscallN.
	launchRegistered func(f uintptr, gx, gy, gz, bx, by, bz, shmem uint32, stream uintptr, params, extra unsafe.Pointer) uintptr
}

func openDriver() error {
	drv.once.Do(func() {
		lib, err := purego.Dlopen("libcuda.so.1", purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			drv.err = err
			return
		}
		syms := map[string]*uintptr{
			"cuLaunchKernel": &drv.launchKernel, "cuStreamCreate": &drv.streamCreate,
			"cuStreamSynchronize": &drv.streamSync, "cuStreamDestroy_v2": &drv.streamDestroy,
			"cuMemAlloc_v2": &drv.memAlloc, "cuMemFree_v2": &drv.memFree,
			"cuModuleLoadData": &drv.moduleLoadData, "cuModuleGetFunction": &drv.moduleGetFunction,
			"cuCtxSetCurrent": &drv.ctxSetCurrent,
		}
		for name, p := range syms {
			if *p, err = purego.Dlsym(lib, name); err != nil {
				drv.err = err
				return
			}
		}
		for name, p := range map[string]*uintptr{ // optional: graph tests skip without them
			"cuStreamBeginCapture_v2": &drv.beginCapture, "cuStreamEndCapture": &drv.endCapture,
			"cuGraphInstantiateWithFlags": &drv.graphInstantiate, "cuGraphLaunch": &drv.graphLaunch,
			"cuGraphExecDestroy": &drv.graphExecDestroy, "cuGraphDestroy": &drv.graphDestroy,
		} {
			*p, _ = purego.Dlsym(lib, name)
		}
		purego.RegisterFunc(&drv.launchRegistered, drv.launchKernel)
		var initFn, retain uintptr
		if initFn, err = purego.Dlsym(lib, "cuInit"); err == nil {
			retain, err = purego.Dlsym(lib, "cuDevicePrimaryCtxRetain")
		}
		if err != nil {
			drv.err = err
			return
		}
		if r := call(initFn, 0); r != 0 {
			drv.err = fmt.Errorf("cuInit: %d", r)
			return
		}
		if r := call(retain, uintptr(unsafe.Pointer(&drv.ctx)), 0); r != 0 {
			drv.err = fmt.Errorf("cuDevicePrimaryCtxRetain: %d", r)
		}
	})
	return drv.err
}

// needCUDA skips without a CUDA port (Select's error) or the driver.
func needCUDA(t testing.TB, _ any, err error) {
	if err != nil {
		t.Skipf("no CUDA here: %v", err)
	}
	if err := openDriver(); err != nil {
		t.Skipf("no CUDA driver: %v", err)
	}
}

// needGraphs skips without the driver's graph entry points.
func needGraphs(t testing.TB) {
	for _, p := range []uintptr{drv.beginCapture, drv.endCapture, drv.graphInstantiate, drv.graphLaunch, drv.graphExecDestroy, drv.graphDestroy} {
		if p == 0 {
			t.Skip("the driver lacks a CUDA graph entry point")
		}
	}
}

// call runs a driver entry point and returns its CUresult.
func call(fn uintptr, args ...uintptr) uint32 {
	r, _, _ := purego.SyscallN(fn, args...)
	return uint32(r)
}

// ctxCall runs a driver entry point on a locked thread with the primary
// context current.
func ctxCall(fn uintptr, args ...uintptr) uint32 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if r := call(drv.ctxSetCurrent, drv.ctx); r != 0 {
		return r
	}
	return call(fn, args...)
}

// onContext locks the goroutine to its thread and makes the primary
// context current there; the caller unlocks.
func onContext(tb testing.TB) {
	runtime.LockOSThread()
	if r := call(drv.ctxSetCurrent, drv.ctx); r != 0 {
		tb.Fatalf("cuCtxSetCurrent: %d", r)
	}
}

func must(tb testing.TB, what string, r uint32) {
	tb.Helper()
	if r != 0 {
		tb.Fatalf("%s: CUresult %d", what, r)
	}
}

// newStream makes a non-blocking stream (CU_STREAM_NON_BLOCKING), destroyed
// at the end of the test.
func newStream(tb testing.TB) uintptr {
	var s uintptr
	must(tb, "cuStreamCreate", ctxCall(drv.streamCreate, uintptr(unsafe.Pointer(&s)), 1))
	tb.Cleanup(func() { ctxCall(drv.streamDestroy, s) })
	return s
}

func syncStream(tb testing.TB, s uintptr) {
	tb.Helper()
	must(tb, "cuStreamSynchronize", ctxCall(drv.streamSync, s))
}

// memAlloc allocates device memory the test owns (a caller's memory, for
// WrapCUDA), freed at the end of the test.
func memAlloc(tb testing.TB, n int) uintptr {
	var d uintptr
	must(tb, "cuMemAlloc", ctxCall(drv.memAlloc, uintptr(unsafe.Pointer(&d)), uintptr(n)))
	tb.Cleanup(func() { ctxCall(drv.memFree, d) })
	return d
}

// rawFunction loads kernel's fatbin from $KGEN_CUDA_FATBIN_DIR into a
// module of the test's own and returns the entry point hostName.
func rawFunction(tb testing.TB, kernel, hostName string) uintptr {
	matches, _ := filepath.Glob(filepath.Join(os.Getenv("KGEN_CUDA_FATBIN_DIR"), kernel+"-*.fatbin"))
	if len(matches) != 1 {
		tb.Skipf("no single %s fatbin in $KGEN_CUDA_FATBIN_DIR: %v", kernel, matches)
	}
	image, err := os.ReadFile(matches[0])
	if err != nil {
		tb.Fatal(err)
	}
	var mod, fn uintptr
	must(tb, "cuModuleLoadData", ctxCall(drv.moduleLoadData, uintptr(unsafe.Pointer(&mod)), uintptr(unsafe.Pointer(&image[0]))))
	name := append([]byte(hostName), 0)
	must(tb, "cuModuleGetFunction", ctxCall(drv.moduleGetFunction, uintptr(unsafe.Pointer(&fn)), mod, uintptr(unsafe.Pointer(&name[0]))))
	return fn
}
