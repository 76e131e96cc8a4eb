package cudacpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// simtShapes have tails of the SIMT GEMM's 128×128×8 tile in every
// dimension (k = 1, 13, 17, 255; n = 1, 3, 9, 129, 257; m = 1, 7, 129,
// 130), whole tiles (33×40×64 in k), k = 0 (the epilogue of acc = 0) and
// empty outputs.
var simtShapes = shapesOf([][3]int{
	{7, 9, 13}, {33, 40, 64}, {129, 257, 255}, {1, 1, 1}, {5, 3, 0}, {130, 129, 17}, {0, 8, 8}, {7, 0, 8},
})

// splitShapes: rows of one warp's width and less (n = 1, 3, 9, 32),
// rows past it with tails (40, 129, 257), 4096-wide rows (128 columns per
// lane), row counts off the 8 rows of a block (1, 7, 33, 129, 130) and
// empty outputs. The workspace GEMM is the host's, so n and k need not be
// multiples of 8 as CUTLASS's do.
var splitShapes = shapesOf([][3]int{
	{7, 9, 13}, {33, 40, 64}, {129, 257, 255}, {1, 1, 1}, {5, 3, 0}, {130, 129, 17}, {8, 32, 8}, {9, 4096, 16}, {0, 8, 8}, {7, 0, 8},
})

func shapesOf(mnk [][3]int) []parity.MatmulShape {
	var out []parity.MatmulShape
	for _, s := range mnk {
		out = append(out, parity.MatmulShape{M: s[0], N: s[1], K: s[2]})
	}
	return out
}

// mnkOf reads m, n, k from a matmul launch's args struct (its last buffer).
func mnkOf(l mslcpu.Launch) (m, n, k uint32) {
	a := l.Buffers[len(l.Buffers)-1]
	return binary.LittleEndian.Uint32(a), binary.LittleEndian.Uint32(a[4:]), binary.LittleEndian.Uint32(a[8:])
}

// simtOf calls the SIMT GEMM: through the entry point for f32 storage and
// for a 16-bit shape TMA cannot load (so the entry's routing runs too),
// directly otherwise (the entry would take CUTLASS's GEMM).
func simtOf(l mslcpu.Launch) string {
	if strings.HasSuffix(l.HostName, "_f32") {
		return l.HostName
	}
	_, n, k := mnkOf(l)
	if k%8 != 0 || n%8 != 0 || k == 0 {
		return l.HostName
	}
	return "kgen_" + l.HostName + "_simt"
}

func entryOf(l mslcpu.Launch) string { return l.HostName }

// variantsOf are k's variants of the given storage types.
func variantsOf(k *ir.Kernel, dts ...dtype.DType) []ir.Variant {
	var out []ir.Variant
	for _, v := range k.Variants {
		for _, d := range dts {
			if v.DType == d {
				out = append(out, v)
			}
		}
	}
	return out
}

// check runs k's variants of dts at shapes through build b (fn picks the
// function per launch), judged by parity against the float64 reference
// with the γ_K bound, outputs NaN-poisoned, adversarial rows included
// unless plain; it returns the results.
func check(t *testing.T, k *ir.Kernel, b *cpuBuild, fn func(mslcpu.Launch) string, shapes []parity.MatmulShape, plain bool, dts ...dtype.DType) ([]parity.Result, error) {
	only := *k
	only.Variants = variantsOf(k, dts...)
	if len(only.Variants) == 0 {
		t.Fatalf("%s has no variant of %v", k.Name, dts)
	}
	return parity.Check(context.Background(), &only, nil, parity.Options{Seed: 11, Plain: plain, Matmul: shapes,
		Backend: ir.CUDA, Run: b.runner(fn)})
}

// TestCUDAOnCPU runs the plain CUDA of every built-in matmul library on
// the CPU: the SIMT GEMM of each single-GEMM kernel (every storage type
// that has one: f32, and the 16-bit fallback) and the split's second
// launch of the row-reducing and gated kernels (the rows kernel or the
// gated epilogue, 16-bit, over a workspace the host computes); every
// output element judged as on the GPU.
func TestCUDAOnCPU(t *testing.T) {
	tc := findToolchain(t)
	ks, files := loadKernels(t)
	var names []string
	for name, k := range ks {
		if mm := k.Matmul(); mm != nil && mm.CUDA != nil && mm.Chain == nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) < 10 {
		t.Fatalf("%d matmuls with a CUDA plan (%v); the built-ins have 10", len(names), names)
	}
	// Each kernel is a parallel subtest: a build and its runs take one
	// core (the compiler, then the single-threaded CPU run), so the
	// kernels share the machine's cores.
	rows := make([]string, len(names))
	t.Run("kernels", func(t *testing.T) {
		for i, name := range names {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				rows[i] = checkKernel(t, tc, ks, files, name)
			})
		}
	})
	t.Logf("CUDA on the CPU:\n| variant | code | shapes | elements checked | failed | max |got-ref| | max rel | run time |\n|---|---|---|---|---|---|---|---|\n%s", strings.Join(rows, ""))
}

// checkKernel is TestCUDAOnCPU for built-in name: its build and every
// variant's check; it returns the report's rows.
func checkKernel(t *testing.T, tc toolchain, ks map[string]*ir.Kernel, files map[string][]byte, name string) string {
	var report strings.Builder
	k, src := kernelOf(t, ks, files, name)
	mm := k.Matmul()
	code, fn, shapes, dts := "SIMT GEMM", simtOf, simtShapes, mm.CUDA.SIMTParts()
	if mm.Split != nil && mm.Split.CUDA != nil {
		code, fn, shapes, dts = "gated epilogue", entryOf, splitShapes, mm.CUDA.Entries()
		if strings.Contains(string(src), "__global__ void __launch_bounds__(256) "+name+"_rows(") {
			code = "rows kernel"
		}
	}
	b := build(t, tc, k, src, nil)
	if want := mm.CUDA.SIMTParts(); len(b.simt) != len(want) {
		t.Errorf("%s: the source has SIMT parts of %v, the plan %v", name, b.simt, want)
	}
	for _, dt := range mm.CUDA.SIMTParts() {
		if !b.simt[dt] {
			t.Errorf("%s: the plan's SIMT GEMM of %v is not in the source", name, dt)
		}
	}
	for _, dt := range dts {
		var took time.Duration
		b.timing = &took
		results, err := check(t, k, b, fn, shapes, false, dt)
		if err != nil {
			t.Fatalf("%s %v: %v", name, dt, err)
		}
		for _, r := range results {
			if r.Failed > 0 {
				t.Errorf("%s %dx%d: %d of %d elements outside tolerance; first: %s", r.HostName, r.Rows, r.Cols, r.Failed, r.Checked, r.First)
			}
		}
		for _, r := range parity.Summarize(results) {
			if !r.OK() {
				t.Errorf("%s", r)
			}
			if r.Lanes == 0 {
				t.Errorf("%s: no element checked", r.HostName)
			}
			fmt.Fprintf(&report, "| %s | %s | %d | %d | %d | %.3g | %.3g | %v |\n", r.HostName, code, len(shapes), r.Lanes, r.Differ, r.MaxAbs, r.MaxRel, took.Round(time.Millisecond))
		}
	}
	return report.String()
}

// kernelOf returns built-in name's IR and generated .cu; it must be a
// matmul with a CUDA plan.
func kernelOf(t *testing.T, ks map[string]*ir.Kernel, files map[string][]byte, name string) (*ir.Kernel, []byte) {
	t.Helper()
	k := ks[name]
	if k == nil || k.Matmul() == nil || k.Matmul().CUDA == nil {
		t.Fatalf("%s is not a matmul with a CUDA plan", name)
	}
	src := files[name]
	if src == nil {
		t.Fatalf("kgen wrote no cuda/%s.cu", name)
	}
	return k, src
}
