package parity_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/internal/long"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func needCompiler(t *testing.T) {
	t.Helper()
	if _, err := mslcpu.Compiler(); err != nil {
		t.Skipf("no C++ compiler for the MSL harness: %v", err)
	}
}

// projectKernels generates a project in memory and returns its kernels and
// their MSL sources.
func projectKernels(t *testing.T, cfgPath string) ([]*ir.Kernel, map[string][]byte) {
	t.Helper()
	return generated(t, "project "+cfgPath, func() ([]*ir.Kernel, map[string][]byte, error) {
		cfg, err := config.Load(cfgPath)
		if err != nil {
			return nil, nil, err
		}
		res, err := generate.Run(cfg)
		if err != nil {
			return nil, nil, err
		}
		src := map[string][]byte{}
		for _, f := range res.Files {
			for _, k := range res.Kernels {
				if f.Path == generate.MSLPath(cfg, k) {
					src[k.Name] = f.Data
				}
			}
		}
		return res.Kernels, src, nil
	})
}

// TestBuiltinKernels runs every built-in kernel × dtype at every size of
// SizesFor with adversarial inputs and compares each element with the
// float64 evaluation of its formulas; it logs the lane-level report. A
// long run only: these are exactly the launches of `kgen verify`'s parity
// (Seed 1, parity's defaults), which `make test` runs on every built-in.
func TestBuiltinKernels(t *testing.T) {
	needCompiler(t)
	long.Skip(t, "every built-in elementwise kernel at parity's defaults, as `kgen verify` (in make test) runs them")
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	for _, k := range elementwise(kernels) {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			results, err := parity.Check(context.Background(), k, src[k.Name], parity.Options{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range parity.Summarize(results) {
				if !r.OK() {
					t.Errorf("%s", r)
					for _, f := range r.Failures {
						t.Errorf("  %s", f)
					}
					continue
				}
				t.Logf("%s", r)
			}
		})
	}
}

// TestBuiltinKernelsASan runs every built-in elementwise kernel × dtype
// under AddressSanitizer at sizes that end inside a thread's slice: a load
// or store one element past the end, which the guard page misses when it
// stays inside the 16-byte alignment slack, is reported here.
func TestBuiltinKernelsASan(t *testing.T) {
	needCompiler(t)
	if err := mslcpu.SanitizerAvailable(context.Background(), mslcpu.AddressSanitizer); err != nil {
		t.Skipf("no AddressSanitizer runtime: %v", err)
	}
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	for _, k := range elementwise(kernels) {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			ept := k.Schedule.(*ir.Elems).PerThread
			sizes := []int{1, ept - 1, ept + 1, 2*ept + 3, k.Threadgroup*ept + 1}
			results, err := parity.Check(context.Background(), k, src[k.Name], parity.Options{Seed: 3, Sizes: sizes, Sanitize: mslcpu.AddressSanitizer})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range parity.Summarize(results) {
				if !r.OK() {
					t.Errorf("under ASan: %s", r)
				}
			}
		})
	}
}

// TestASanCatchesTailOverrun: a tail store that writes one element past
// the end leaves every output right, so parity alone passes it (the write
// lands in the alignment slack); under AddressSanitizer the same check
// fails with the buffer named.
func TestASanCatchesTailOverrun(t *testing.T) {
	needCompiler(t)
	if err := mslcpu.SanitizerAvailable(context.Background(), mslcpu.AddressSanitizer); err != nil {
		t.Skipf("no AddressSanitizer runtime: %v", err)
	}
	t.Parallel()
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	var k *ir.Kernel
	for _, kk := range kernels {
		if kk.Name == "gelu_tanh" {
			k = kk
		}
	}
	if k == nil {
		t.Fatal("no gelu_tanh kernel in the built-in specs")
	}
	wrong := replaceOnce(t, src[k.Name], "for (uint i = 0; i < count; ++i) {\n            p[i] = v[i];", "for (uint i = 0; i <= count; ++i) {\n            p[i] = v[i];")
	opts := parity.Options{Seed: 1, Sizes: []int{k.Schedule.(*ir.Elems).PerThread + 1}}
	results, err := parity.Check(context.Background(), k, wrong, opts)
	if err != nil {
		t.Logf("caught without ASan: %v", err)
	} else {
		for _, r := range parity.Summarize(results) {
			t.Logf("without ASan: %s", r)
		}
	}
	opts.Sanitize = mslcpu.AddressSanitizer
	_, err = parity.Check(context.Background(), k, wrong, opts)
	var re *mslcpu.RunError
	if !errors.As(err, &re) || !strings.Contains(re.Message, "heap-buffer-overflow") || !strings.Contains(re.Message, "outside buffer(1)") {
		t.Fatalf("under ASan: got %v, want a heap-buffer-overflow on buffer(1)", err)
	}
	t.Logf("ASan: %s", re.Message)
}

// TestContractionWithinTolerance measures what the harness does not model
// by default: Metal may contract a*b+c into one fma. Built with
// -ffp-contract=fast -mfma (on an x86 CPU with FMA), every built-in kernel
// × dtype must still pass: the tolerances and the rounding bound cover
// contraction. The lane reports go to docs/fidelity.md.
func TestContractionWithinTolerance(t *testing.T) {
	needCompiler(t)
	if runtime.GOARCH != "amd64" || !cpuHasFMA() {
		t.Skip("needs an x86-64 CPU with FMA")
	}
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	for _, k := range elementwise(kernels) {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			opts := parity.Options{Seed: 1, Flags: []string{"-ffp-contract=fast", "-mfma"}}
			results, err := parity.Check(context.Background(), k, src[k.Name], opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range parity.Summarize(results) {
				if !r.OK() {
					t.Errorf("with FMA contraction: %s; first: %s", r, r.First)
					continue
				}
				t.Logf("with FMA contraction: %s", r)
			}
		})
	}
}

func cpuHasFMA() bool {
	info, err := os.ReadFile("/proc/cpuinfo")
	return err == nil && strings.Contains(string(info), " fma ")
}

// elementwise keeps the elementwise kernels: the tests of
// parity_rows_test.go check the rowwise ones at row shapes.
func elementwise(ks []*ir.Kernel) []*ir.Kernel {
	var out []*ir.Kernel
	for _, k := range ks {
		if k.Kind == ir.Elementwise {
			out = append(out, k)
		}
	}
	return out
}

// TestMutationsFailEveryVariant: a kernel that stores its first input, or
// 0, instead of its formula must fail parity for every built-in kernel ×
// dtype — asserted per variant, since some lanes legitimately agree
// (leaky_relu's x >= 0 half equals x; gelu(x) ≈ x for large x). Rowwise
// kernels run at two small widths, elementwise ones at SizesFor but the
// large launch, matmuls and chains at two shapes (mutationRows,
// mutationSizes, mutationMatmulShapes, mutationChainShapes; parity's
// defaults in a long run), each in one lane order: the order cannot
// rescue a replaced output.
func TestMutationsFailEveryVariant(t *testing.T) {
	needCompiler(t)
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	for _, m := range []parity.Mutation{parity.FirstInput, parity.Zero} {
		for _, k := range kernels {
			t.Run(m.String()+"/"+k.Name, func(t *testing.T) {
				t.Parallel()
				if r := k.Rows(); r != nil && (k.TopKSelection() != nil || len(r.Gathers) > 0 || len(r.Scatters) > 0) {
					// A selection's slots and a gather's or positioned write's
					// places are no element-for-element store of an input:
					// their own planted bugs cover them (parity_topk_test.go,
					// parity_gather_test.go).
					t.Skip("top-k, gather and positioned-write kernels have mutation tests of their own")
				}
				if _, err := parity.Mutate([]byte("// a template without the store\n"), k, m); err == nil {
					t.Errorf("Mutate found a store in a source without one")
				}
				results, err := parity.Check(context.Background(), k, src[k.Name], parity.Options{Seed: 1, Mutate: m, Cols: []int{7, 64}, Rows: mutationRows,
					Sizes: mutationSizes(k), Matmul: mutationMatmulShapes, Chain: mutationChainShapes, Orders: []mslcpu.LaneOrder{mslcpu.Forward}})
				if err != nil {
					t.Fatal(err)
				}
				reports := parity.Summarize(results)
				if len(reports) != len(k.Variants) {
					t.Fatalf("%d reports for %d variants", len(reports), len(k.Variants))
				}
				for _, r := range reports {
					if r.OK() {
						t.Errorf("%s passed parity with its output replaced (%s): %s", r.HostName, m, r)
						continue
					}
					t.Logf("%s fails as it must: %d/%d lanes; e.g. %s", r.HostName, r.Differ, r.Lanes, r.First)
				}
			})
		}
	}
}

// TestWrongKernelFails proves the check is not vacuous: each mutation of
// the gelu_tanh source must fail parity for the variants named.
func TestWrongKernelFails(t *testing.T) {
	needCompiler(t)
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	var k *ir.Kernel
	for _, kk := range kernels {
		if kk.Name == "gelu_tanh" {
			k = kk
		}
	}
	if k == nil {
		t.Fatal("no gelu_tanh kernel in the built-in specs")
	}
	mutations := []struct {
		name, old, new string
		mustFail       []string // host names that must fail
	}{
		{"sin for tanh", "kgen_math::tanh(inner)", "kgen_math::sin(inner)", []string{"gelu_tanh_f32", "gelu_tanh_f16", "gelu_tanh_bf16"}},
		{"coefficient off in the 4th digit", "0.044715f", "0.0447f", []string{"gelu_tanh_f32"}},
		{"tail store skips the last element", "for (uint i = 0; i < count; ++i) {\n            p[i] = v[i];", "for (uint i = 0; i + 1 < count; ++i) {\n            p[i] = v[i];", []string{"gelu_tanh_f32", "gelu_tanh_f16", "gelu_tanh_bf16"}},
		{"vector store drops a lane", "float4(v[0], v[1], v[2], v[3])", "float4(v[0], v[1], v[2], v[2])", []string{"gelu_tanh_f32"}},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			wrong := replaceOnce(t, src[k.Name], m.old, m.new)
			results, err := parity.Check(context.Background(), k, wrong, parity.Options{Seed: 1, Sizes: []int{9, 100}})
			if err != nil {
				t.Fatal(err)
			}
			failed := map[string]bool{}
			for _, r := range results {
				if r.Failed > 0 {
					failed[r.HostName] = true
				}
			}
			for _, h := range m.mustFail {
				if !failed[h] {
					t.Errorf("%s passed parity with the mutation %q", h, m.name)
				}
			}
		})
	}
}

func replaceOnce(t *testing.T, src []byte, old, new string) []byte {
	t.Helper()
	s := string(src)
	i := indexOf(s, old)
	if i < 0 {
		t.Fatalf("%q not in the source", old)
	}
	return []byte(s[:i] + new + s[i+len(old):])
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// TestGoldenKernels runs the kernels of every golden case, which together
// use every function and operator of the formula language, every compute
// type, params of each type, pinned dtypes and several outputs: once with
// plain inputs in [-8, 8] (where functions like log and pow are mostly
// finite) and once with adversarial ones.
func TestGoldenKernels(t *testing.T) {
	needCompiler(t)
	configs, _ := filepath.Glob(filepath.Join(repoRoot(), "testdata", "golden", "*", "kgen.yaml"))
	if len(configs) == 0 {
		t.Fatal("no golden cases found")
	}
	for _, cfg := range configs {
		kernels, src := projectKernels(t, cfg)
		for _, k := range elementwise(kernels) {
			t.Run(filepath.Base(filepath.Dir(cfg))+"/"+k.Name, func(t *testing.T) {
				t.Parallel()
				for _, plain := range []bool{true, false} {
					results, err := parity.Check(context.Background(), k, src[k.Name], parity.Options{Seed: 2, Sizes: []int{5, 8, 1030}, Plain: plain})
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range parity.Summarize(results) {
						if !r.OK() {
							t.Errorf("plain=%v %s; first: %s", plain, r, r.Failures[0])
							continue
						}
						t.Logf("plain=%v %s", plain, r)
					}
				}
			})
		}
	}
}

// TestStrictSyntax compiles every generated kernel (built-in and golden) in
// the harness's strict mode, where device, constant and thread pointers are
// distinct address spaces and libc names MSL lacks are poisoned.
func TestStrictSyntax(t *testing.T) {
	needCompiler(t)
	configs, _ := filepath.Glob(filepath.Join(repoRoot(), "testdata", "golden", "*", "kgen.yaml"))
	configs = append(configs, filepath.Join(repoRoot(), "kgen.yaml"))
	for _, cfg := range configs {
		kernels, src := projectKernels(t, cfg)
		for _, k := range kernels {
			name := filepath.Base(filepath.Dir(cfg)) + "/" + k.Name
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				if err := mslcpu.CheckSyntax(context.Background(), src[k.Name]); err != nil {
					t.Errorf("%s.metal is not valid under the strict check:\n%v", k.Name, err)
				}
			})
		}
	}
}
