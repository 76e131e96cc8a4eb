// Package cudagpu runs kgen's CUDA ports on a GPU: every built-in kernel ×
// dtype against the float64 evaluation of its formulas, with the CPU
// harness's inputs and tolerance rule (verify/parity with a GPU runner).
// Without a CUDA driver, a device or the compiled fatbins (matmuls: the
// CUTLASS libraries), the GPU tests skip and say why; the refusal tests run
// everywhere.
//
// On a GPU machine (no Go needed there):
//
//	CGO_ENABLED=0 go test -c -o cudagpu.test ./e2e/cudagpu    # here
//	kgen cuda --cutlass CUTLASS --out fatbins && KGEN_CUDA_FATBIN_DIR=$PWD/fatbins ./cudagpu.test -test.v
package cudagpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgenrt"
	"github.com/kgen-dev/kgen/spec"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// sizes: the CPU harness's tails and whole vectors, plus sizes spanning
// many blocks with a tail in the last one.
var sizes = append(append([]int(nil), parity.DefaultSizes...), 65536+5, 1<<22+3)

func load(t *testing.T) (*config.Config, []*ir.Kernel) {
	t.Helper()
	cfg, err := config.Load(filepath.Join("..", "..", config.FileName))
	if err != nil {
		t.Fatal(err)
	}
	res, err := generate.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, res.Kernels
}

func descriptor(t *testing.T, name string) *kgenrt.Kernel {
	for _, d := range kernels.Kernels() {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("kernel %s is not in the generated package", name)
	return nil
}

// readyPort returns kernel name's descriptor and CUDA port, skipping the
// test where the port cannot run.
func readyPort(t *testing.T, name string) (*kgenrt.Kernel, kgenrt.Port) {
	t.Helper()
	d := descriptor(t, name)
	port, err := kgenrt.CUDAPortOf(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := port.Ready(); err != nil {
		t.Skipf("CUDA port of %s cannot run here: %v", name, err)
	}
	return d, port
}

// saveReport writes a parity table into $KGEN_PARITY_OUT, when set (the
// device runs collect them).
func saveReport(file, report string) {
	if dir := os.Getenv("KGEN_PARITY_OUT"); dir != "" {
		os.WriteFile(filepath.Join(dir, file), []byte(report), 0o644)
	}
}

// TestRefusal runs everywhere: every built-in has a CUDA port (except the
// matmuls whose spec says cuda: null, with the reason), and where it cannot
// run Select refuses it with a reason that says what is missing.
func TestRefusal(t *testing.T) {
	_, ks := load(t)
	for _, d := range kernels.Kernels() {
		if d.Kind == "matmul" && !cudaPorted(ks, d.Name) {
			continue
		}
		p, err := kgenrt.CUDAPortOf(d)
		if err != nil {
			t.Fatalf("%s: no CUDA port: %v", d.Name, err)
		}
		if err := p.Ready(); err != nil {
			var pe *kgenrt.PortError
			// gelu_tanh's generated Select, when its own port cannot run (with
			// only some fatbins built, others' can).
			if d.Name == "gelu_tanh" {
				if _, serr := kernels.GeluTanh.Select(kgenrt.CUDA); !errors.As(serr, &pe) || !errors.Is(serr, kgenrt.ErrNoPort) {
					t.Fatalf("Select(CUDA) = %v, want a *PortError", serr)
				}
			}
			msg := err.Error()
			if !strings.Contains(msg, "libcuda") && !strings.Contains(msg, "kgen cuda") && !strings.Contains(msg, "device") && !strings.Contains(msg, "linux") {
				t.Errorf("%s: the refusal does not say what is missing: %s", d.Name, msg)
			}
			t.Logf("%s: CUDA unavailable here: %v", d.Name, err)
		}
	}
}

// gpuRunner runs one parity launch through the kernel's CUDA port: host
// tensors (outputs poisoned with NaN by parity) are copied to the device, so
// an element the kernel does not write comes back NaN and fails. A launch
// of one of the kernel's phases (a column reduction's two launches, which
// parity runs one by one) is a call of that phase's descriptor.
func gpuRunner(kd *kgenrt.Kernel, port kgenrt.Port) func(context.Context, mslcpu.Launch) ([][]byte, error) {
	return func(_ context.Context, l mslcpu.Launch) ([][]byte, error) {
		var v *kgenrt.Variant
		d, all := kd, append([]*kgenrt.Kernel{kd}, kd.Phases...)
		if kd.PortPhases {
			all = kd.Phases // parity launches them one by one, the first under the kernel's host names
		}
		for _, o := range all {
			for i := range o.Variants {
				if o.Variants[i].HostName == l.HostName && v == nil {
					d, v = o, &o.Variants[i]
				}
			}
		}
		if v == nil {
			return nil, fmt.Errorf("no variant %s", l.HostName)
		}
		var tensors []*kgenrt.Tensor
		for _, b := range d.Tensors() {
			dt := b.DType
			if dt == kgenrt.T {
				dt = v.DType
			}
			buf := l.Buffers[b.Index]
			t, err := kgenrt.New(dt, len(buf)/dt.Size())
			if err != nil {
				return nil, err
			}
			copy(t.Bytes(), buf)
			tensors = append(tensors, t)
		}
		call := &kgenrt.Call{Kernel: d, Variant: v, Tensors: tensors, Args: l.Buffers[d.ArgsBinding().Index],
			Grid: [3]int{int(l.Grid[0]), 1, 1}, Threadgroup: [3]int{int(l.Threadgroup[0]), 1, 1}}
		if err := port.Run(call); err != nil {
			return nil, err
		}
		out := make([][]byte, len(l.Buffers))
		copy(out, l.Buffers)
		for i, b := range d.Tensors() {
			out[b.Index] = tensors[i].Bytes()
		}
		return out, nil
	}
}

// TestParity: every kernel with a CUDA port × every dtype × every size.
func TestParity(t *testing.T) {
	_, ks := load(t)
	var report strings.Builder
	fmt.Fprintf(&report, "| variant | sizes | elements checked | failed | max |got-ref| |\n|---|---|---|---|---|\n")
	for _, k := range ks {
		if !k.Ports[spec.CUDA] || k.Kind != ir.Elementwise { // rowwise: TestRowParity
			continue
		}
		d, port := readyPort(t, k.Name)
		results, err := parity.Check(context.Background(), k, nil, parity.Options{Seed: 1, Sizes: sizes, Backend: ir.CUDA, Run: gpuRunner(d, port)})
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		for _, r := range results {
			if r.Failed > 0 {
				t.Errorf("%s n=%d: %d of %d elements outside tolerance; first: %s", r.HostName, r.N, r.Failed, r.Checked, r.First)
			}
		}
		for _, r := range parity.Summarize(results) {
			fmt.Fprintf(&report, "| %s | %d | %d | %d | %.3g |\n", r.HostName, len(sizes), r.Lanes, r.Differ, r.MaxAbs)
		}
	}
	t.Logf("CUDA parity (sizes %v):\n%s", sizes, report.String())
	saveReport("parity.md", report.String())
}

// TestTypedLauncher goes through the generated API (Run → Select → port),
// in place too, against the CPU reference.
func TestTypedLauncher(t *testing.T) {
	if _, err := kernels.GeluTanh.Select(kgenrt.CUDA); err != nil {
		t.Skipf("no CUDA here: %v", err)
	}
	n := 10007
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = float32(i%97)/8 - 6
	}
	for _, dt := range []kgenrt.DType{kgenrt.F32, kgenrt.F16, kgenrt.BF16} {
		x, _ := kgenrt.FromFloat32(dt, vals)
		y, _ := kgenrt.New(dt, n)
		ref, _ := kgenrt.New(dt, n)
		if err := kernels.GeluTanh.Run(kgenrt.CUDA, x, y); err != nil {
			t.Fatal(err)
		}
		if err := kernels.GeluTanh.Reference(x, ref); err != nil {
			t.Fatal(err)
		}
		tol := map[kgenrt.DType]float64{kgenrt.F32: 1e-5, kgenrt.F16: 2e-3, kgenrt.BF16: 2e-2}[dt]
		for i := 0; i < n; i++ {
			g, w := y.Float32At(i), ref.Float32At(i)
			if d := float64(g - w); d > tol*(1+abs(float64(w))) || -d > tol*(1+abs(float64(w))) {
				t.Fatalf("%v: y[%d] = %g, reference %g", dt, i, g, w)
			}
		}
		// In place: y = x.
		if err := kernels.GeluTanh.Run(kgenrt.CUDA, x, x); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			if x.Float32At(i) != y.Float32At(i) {
				t.Fatalf("%v in place: x[%d] = %g, want %g", dt, i, x.Float32At(i), y.Float32At(i))
			}
		}
	}
	// A dtype outside the table, and a shape mismatch, fail before any launch.
	x, _ := kgenrt.New(kgenrt.F32, 8)
	y, _ := kgenrt.New(kgenrt.F16, 8)
	if err := kernels.GeluTanh.Run(kgenrt.CUDA, x, y); !errors.Is(err, kgenrt.ErrDType) {
		t.Fatalf("mixed dtypes: %v", err)
	}
}

func cudaPorted(ks []*ir.Kernel, name string) bool {
	for _, k := range ks {
		if k.Name == name {
			return k.Ports[spec.CUDA]
		}
	}
	return false
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
