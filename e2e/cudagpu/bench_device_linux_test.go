//go:build linux && (amd64 || arm64)

package cudagpu

import (
	"testing"
	"unsafe"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// Benchmarks of the typed launchers on CUDA tensors; see
// bench_launch_linux_test.go for the method.

func deviceTensors(b *testing.B, dt kgenrt.DType, shapes ...[]int) []*kgenrt.Tensor {
	var out []*kgenrt.Tensor
	for _, s := range shapes {
		t, err := kgenrt.NewCUDA(dt, s...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { t.Free() })
		out = append(out, t)
	}
	return out
}

// BenchmarkLaunchTyped is GeluTanh.Enqueue on CUDA tensors: the generated
// checks, the call, Select, and the launch.
func BenchmarkLaunchTyped(b *testing.B) {
	benchReady(b)
	ts := deviceTensors(b, kgenrt.BF16, []int{benchN}, []int{benchN})
	batched(b, 0, func() error { return kernels.GeluTanh.Enqueue(0, ts[0], ts[1]) })
}

// BenchmarkLaunchTypedRows is RmsNorm.Enqueue on [16, 1024] bf16 CUDA
// tensors: a derived field (rows_per_group) evaluated per launch.
func BenchmarkLaunchTypedRows(b *testing.B) {
	p, err := kernels.RmsNorm.Select(kgenrt.CUDA)
	needCUDA(b, p, err)
	ts := deviceTensors(b, kgenrt.BF16, []int{16, 1024}, []int{1024}, []int{16, 1024})
	batched(b, 0, func() error { return kernels.RmsNorm.Enqueue(0, ts[0], ts[1], ts[2], 1e-6) })
}

// BenchmarkRunDevice is GeluTanh.Run on CUDA tensors: launch and wait.
func BenchmarkRunDevice(b *testing.B) {
	benchReady(b)
	ts := deviceTensors(b, kgenrt.BF16, []int{benchN}, []int{benchN})
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := kernels.GeluTanh.Run(kgenrt.CUDA, ts[0], ts[1]); err != nil {
			b.Fatal(err)
		}
	}
}

// A sequence of seqLen small launches on the caller's stream, waited for:
// direct Enqueues against one CUDA graph captured from the same Enqueues
// and replayed (cuGraphLaunch). ns/op is one whole sequence.
const seqLen = 8

func seqTensors(b *testing.B) (uintptr, []*kgenrt.Tensor) {
	benchReady(b)
	return newStream(b), deviceTensors(b, kgenrt.BF16, []int{benchN}, []int{benchN})
}

func enqueueSeq(s uintptr, ts []*kgenrt.Tensor) error {
	for i := 0; i < seqLen; i++ {
		if err := kernels.GeluTanh.Enqueue(kgenrt.CUDAStream(s), ts[i%2], ts[1-i%2]); err != nil {
			return err
		}
	}
	return nil
}

func BenchmarkSequenceDirect(b *testing.B) {
	s, ts := seqTensors(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := enqueueSeq(s, ts); err != nil {
			b.Fatal(err)
		}
		syncStream(b, s)
	}
}

func BenchmarkSequenceGraph(b *testing.B) {
	s, ts := seqTensors(b)
	needGraphs(b)
	// CU_STREAM_CAPTURE_MODE_RELAXED: kgen's launch reads the current
	// context, which the stricter modes need not refuse but relaxed surely
	// allows.
	must(b, "cuStreamBeginCapture", ctxCall(drv.beginCapture, s, 2))
	if err := enqueueSeq(s, ts); err != nil {
		b.Fatal(err)
	}
	var graph, exec uintptr
	must(b, "cuStreamEndCapture", ctxCall(drv.endCapture, s, uintptr(unsafe.Pointer(&graph))))
	defer ctxCall(drv.graphDestroy, graph)
	must(b, "cuGraphInstantiate", ctxCall(drv.graphInstantiate, uintptr(unsafe.Pointer(&exec)), graph, 0))
	defer ctxCall(drv.graphExecDestroy, exec)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		must(b, "cuGraphLaunch", ctxCall(drv.graphLaunch, exec, s))
		syncStream(b, s)
	}
}
