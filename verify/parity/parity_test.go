package parity_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/generate"
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
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	res, err := generate.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	src := map[string][]byte{}
	for _, f := range res.Files {
		for _, k := range res.Kernels {
			if f.Path == generate.MSLPath(cfg, k) {
				src[k.Name] = f.Data
			}
		}
	}
	return res.Kernels, src
}

// TestBuiltinKernels runs every built-in kernel × dtype at every size and
// compares each element with the float64 evaluation of its formulas.
func TestBuiltinKernels(t *testing.T) {
	needCompiler(t)
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	for _, k := range kernels {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			results, err := parity.Check(context.Background(), k, src[k.Name], parity.Options{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range results {
				if r.Failed > 0 {
					t.Errorf("%s n=%d: %d of %d elements out of tolerance; first: %s", r.HostName, r.N, r.Failed, r.Checked, r.First)
				}
				if r.N == 4099 {
					t.Logf("%s: max |got-ref| %.3g over %d elements", r.HostName, r.MaxAbs, r.Checked)
				}
			}
		})
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
// type, params of each type, pinned dtypes and several outputs.
func TestGoldenKernels(t *testing.T) {
	needCompiler(t)
	configs, _ := filepath.Glob(filepath.Join(repoRoot(), "testdata", "golden", "*", "kgen.yaml"))
	if len(configs) == 0 {
		t.Fatal("no golden cases found")
	}
	for _, cfg := range configs {
		kernels, src := projectKernels(t, cfg)
		for _, k := range kernels {
			t.Run(filepath.Base(filepath.Dir(cfg))+"/"+k.Name, func(t *testing.T) {
				t.Parallel()
				results, err := parity.Check(context.Background(), k, src[k.Name], parity.Options{Seed: 2, Sizes: []int{5, 8, 1030}})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range results {
					if r.Failed > 0 {
						t.Errorf("%s n=%d: %d of %d out of tolerance; first: %s", r.HostName, r.N, r.Failed, r.Checked, r.First)
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
