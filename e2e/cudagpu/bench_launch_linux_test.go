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
