package kgenrt_test

import (
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// The typed launchers' host path on the CUDA port, up to the driver call
// (kgenrt.FakeCUDA): CheckSizes, the call laid out on the launcher's
// stack, Select, the port's checks and the parameter buffer. Measured
// here, without a GPU; e2e/cudagpu's Launch benchmarks time it with the
// driver on the device.

// wrapped returns CUDA tensors over made-up, aligned, disjoint addresses:
// the fake launch never touches them.
func wrapped(t testing.TB, shapes ...[]int) []*kgenrt.Tensor {
	t.Helper()
	var ts []*kgenrt.Tensor
	for i, s := range shapes {
		x, err := kgenrt.WrapCUDA(kgenrt.DevicePtr((i+1)<<24), kgenrt.BF16, s...)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, x)
	}
	return ts
}

// enqueueArms are the typed Enqueues the host-path test and benchmarks run:
// an elementwise kernel and a rowwise one with a param and a derived field.
func enqueueArms(t testing.TB) []struct {
	name    string
	kernel  *kgenrt.Kernel
	enqueue func() error
} {
	g := wrapped(t, []int{4096}, []int{4096})
	r := wrapped(t, []int{16, 1024}, []int{1024}, []int{16, 1024})
	return []struct {
		name    string
		kernel  *kgenrt.Kernel
		enqueue func() error
	}{
		{"GeluTanh", kernels.GeluTanh.Describe(), func() error { return kernels.GeluTanh.Enqueue(0, g[0], g[1]) }},
		{"RmsNorm", kernels.RmsNorm.Describe(), func() error { return kernels.RmsNorm.Enqueue(0, r[0], r[1], r[2], 1e-6) }},
	}
}

// TestEnqueueHostAllocatesNothing holds a typed Enqueue's host path at 0
// allocations: the call, its tensor list and args bytes stay on the
// launcher's stack, the port is called without the Port interface, and the
// parameter buffer is pooled. (The driver calls themselves allocate
// nothing either: TestDriverCallAllocatesNothing.)
func TestEnqueueHostAllocatesNothing(t *testing.T) {
	for _, a := range enqueueArms(t) {
		launches, restore := kgenrt.FakeCUDA(a.kernel)
		if err := a.enqueue(); err != nil {
			restore()
			t.Fatalf("%s: %v", a.name, err)
		}
		allocs := testing.AllocsPerRun(200, func() { _ = a.enqueue() })
		restore()
		if *launches == 0 {
			t.Fatalf("%s: Enqueue never reached the launch", a.name)
		}
		if allocs != 0 {
			t.Errorf("%s.Enqueue allocates %v times per launch on its host path, want 0", a.name, allocs)
		}
	}
}

// BenchmarkEnqueueHost times a typed Enqueue's host path without a GPU.
func BenchmarkEnqueueHost(b *testing.B) {
	for _, a := range enqueueArms(b) {
		b.Run(a.name, func(b *testing.B) {
			_, restore := kgenrt.FakeCUDA(a.kernel)
			defer restore()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := a.enqueue(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
