//go:build linux && (amd64 || arm64)

package cudagpu

import (
	"encoding/binary"
	"runtime"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// Launch benchmarks: the host time of one launch of gelu_tanh bf16 over
// benchN elements (2 blocks: the GPU time is small), enqueued on the legacy
// default stream without waiting. Launches go in batches of launchBatch
// with the stream synchronized between batches outside the timer, so the
// launch queue never fills and ns/op is the host's cost per launch.
// Run with -test.bench Launch -test.benchmem on a GPU machine; they skip
// elsewhere.

const (
	benchN      = 4096
	launchBatch = 128
)

// batched times launch b.N times, synchronizing the stream after each
// batch with the timer stopped.
func batched(b *testing.B, stream uintptr, launch func() error) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := launch(); err != nil {
			b.Fatal(err)
		}
		if i%launchBatch == launchBatch-1 {
			b.StopTimer()
			syncStream(b, stream)
			b.StartTimer()
		}
	}
	b.StopTimer()
	syncStream(b, stream)
}

func benchReady(b *testing.B) {
	p, err := kernels.GeluTanh.Select(kgenrt.CUDA)
	needCUDA(b, p, err)
}

// rawParams is cuLaunchKernel's kernelParams for gelu_tanh: x, y and the
// args struct {n}, built once.
type rawParams struct {
	vals   [3]uintptr
	params [3]unsafe.Pointer
}

func newRawParams(x, y uintptr) *rawParams {
	p := new(rawParams)
	p.vals = [3]uintptr{x, y, benchN}
	for i := range p.params {
		p.params[i] = unsafe.Pointer(&p.vals[i])
	}
	return p
}

const rawBlocks = (benchN/8 + 255) / 256

// BenchmarkLaunchRaw is the floor: cuLaunchKernel through purego.SyscallN,
// the binding kgenrt's launch uses, with prebuilt parameters, on a thread
// locked once with the context current.
func BenchmarkLaunchRaw(b *testing.B) {
	benchReady(b)
	fn := rawFunction(b, "gelu_tanh", "gelu_tanh_bf16")
	p := newRawParams(memAlloc(b, 2*benchN), memAlloc(b, 2*benchN))
	onContext(b)
	defer runtime.UnlockOSThread()
	batched(b, 0, func() error {
		r, _, _ := purego.SyscallN(drv.launchKernel, fn, rawBlocks, 1, 1, 256, 1, 1, 0, 0, uintptr(unsafe.Pointer(&p.params[0])), 0)
		if uint32(r) != 0 {
			b.Fatalf("cuLaunchKernel: %d", r)
		}
		return nil
	})
}

// BenchmarkLaunchRawFrame is the same call through purego's trampoline on
// a frame allocated once, as kgenrt's launch now calls the driver
// (kgenrt/cuda_call_linux.go): the floor without SyscallN's 2 allocations.
func BenchmarkLaunchRawFrame(b *testing.B) {
	benchReady(b)
	fn := rawFunction(b, "gelu_tanh", "gelu_tanh_bf16")
	p := newRawParams(memAlloc(b, 2*benchN), memAlloc(b, 2*benchN))
	onContext(b)
	defer runtime.UnlockOSThread()
	f := new(rawFrame)
	batched(b, 0, func() error {
		*f = rawFrame{fn: drv.launchKernel, a1: fn, a2: rawBlocks, a3: 1, a4: 1, a5: 256, a6: 1, a7: 1,
			a10: uintptr(unsafe.Pointer(&p.params[0]))}
		f.f1, f.f2, f.f3, f.f4, f.f5, f.f6, f.f7, f.f8 = f.a1, f.a2, f.a3, f.a4, f.a5, f.a6, f.a7, f.a8
		rawCgocall(rawSyscall15X, unsafe.Pointer(f))
		if uint32(f.a1) != 0 {
			b.Fatalf("cuLaunchKernel: %d", f.a1)
		}
		return nil
	})
	runtime.KeepAlive(p)
}

// rawFrame is purego's syscall15Args, as kgenrt's driverFrame.
type rawFrame struct {
	fn, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15 uintptr
	f1, f2, f3, f4, f5, f6, f7, f8                                       uintptr
	arm64R8                                                              uintptr
}

//go:linkname rawCgocall runtime.cgocall
func rawCgocall(fn uintptr, arg unsafe.Pointer) int32

//go:linkname rawSyscall15X github.com/ebitengine/purego.syscall15XABI0
var rawSyscall15X uintptr

// BenchmarkLaunchRawRegisterFunc is the same call through a
// purego.RegisterFunc'd Go func (reflection per call), the binding kgenrt's
// launch used before.
func BenchmarkLaunchRawRegisterFunc(b *testing.B) {
	benchReady(b)
	fn := rawFunction(b, "gelu_tanh", "gelu_tanh_bf16")
	p := newRawParams(memAlloc(b, 2*benchN), memAlloc(b, 2*benchN))
	onContext(b)
	defer runtime.UnlockOSThread()
	batched(b, 0, func() error {
		if r := drv.launchRegistered(fn, rawBlocks, 1, 1, 256, 1, 1, 0, 0, unsafe.Pointer(&p.params[0]), nil); uint32(r) != 0 {
			b.Fatalf("cuLaunchKernel: %d", r)
		}
		return nil
	})
}

// BenchmarkLaunchCUDA is kgen's launcher with the caller's device pointers:
// CUDALauncher.LaunchCUDA on a prebuilt call (its tensors give dtype and
// shape only).
func BenchmarkLaunchCUDA(b *testing.B) {
	benchReady(b)
	d := kernels.GeluTanh.Describe()
	port, err := kgenrt.CUDAPortOf(d)
	if err != nil {
		b.Fatal(err)
	}
	v, _ := d.Variant(kgenrt.BF16)
	hx, _ := kgenrt.New(kgenrt.BF16, benchN)
	hy, _ := kgenrt.New(kgenrt.BF16, benchN)
	args := make([]byte, 4)
	binary.LittleEndian.PutUint32(args, benchN)
	c := &kgenrt.Call{Kernel: d, Variant: v, Tensors: []*kgenrt.Tensor{hx, hy}, Args: args,
		Grid: [3]int{benchN / 8, 1, 1}, Threadgroup: [3]int{256, 1, 1}}
	ptrs := []kgenrt.DevicePtr{kgenrt.DevicePtr(memAlloc(b, 2*benchN)), kgenrt.DevicePtr(memAlloc(b, 2*benchN))}
	batched(b, 0, func() error { return port.LaunchCUDA(0, c, ptrs) })
}

// BenchmarkRunHost is the typed launcher on host tensors: it stages them
// through temporary device buffers and waits, per call.
func BenchmarkRunHost(b *testing.B) {
	benchReady(b)
	x, _ := kgenrt.New(kgenrt.BF16, benchN)
	y, _ := kgenrt.New(kgenrt.BF16, benchN)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := kernels.GeluTanh.Run(kgenrt.CUDA, x, y); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTypedPrepareNoGPU is the typed launcher's host work before the
// port's launch (CheckSizes, the call, Select), measured where no CUDA port
// can run: Select refuses and nothing launches. It skips where CUDA runs
// (the wrapped pointers are not real memory).
func BenchmarkTypedPrepareNoGPU(b *testing.B) {
	if kernels.GeluTanh.Available(kgenrt.CUDA) {
		b.Skip("CUDA runs here: see BenchmarkLaunchTyped")
	}
	x, _ := kgenrt.WrapCUDA(1<<20, kgenrt.BF16, benchN)
	y, _ := kgenrt.WrapCUDA(2<<20, kgenrt.BF16, benchN)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := kernels.GeluTanh.Enqueue(0, x, y); err == nil {
			b.Fatal("Enqueue launched without CUDA")
		}
	}
}
