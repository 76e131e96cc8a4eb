package cudacpu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/emit/cfam"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// The rowwise CUDA kernels are fatbin entry points, extern "C"
// __global__ functions with the tensors and the args struct by value, not
// a library's host functions: each runs here through a wrapper of the
// harness's entry ABI that launches it on the shim over the launch's
// blocks (KGEN_CPU_BLOCKS) and threads (KGEN_CPU_THREADS). The device
// built-ins the host lacks are plain loads and adds (rowPrelude); the
// L2-keeping load's inline PTX (kgen_ld_keep) becomes a plain load.

// rowPrelude defines, before the kernel, what a rowwise .cu calls that
// the host compiler does not have: the read-only and streaming loads, the
// non-contracting add (-ffp-contract=off keeps every add unfused here),
// CUDA's integer min (pair_half's width), and the pointer the wrappers
// pass for any tensor type.
const rowPrelude = `template <typename T> inline T __ldg(const T* p) { return *p; }
inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
template <typename T> inline T __ldcs(const T* p) { return *p; }
inline float __fadd_rn(float a, float b) { return a + b; }
struct kgen_cpu_ptr {
    void* p;
    template <typename T> operator T*() const { return static_cast<T*>(p); }
};
inline unsigned kgen_cpu_env(const char* n) { const char* v = std::getenv(n); return v ? unsigned(std::strtoul(v, nullptr, 10)) : 0u; }
`

// ldKeepRE is the body of kgen_ld_keep, inline PTX.
var ldKeepRE = regexp.MustCompile(`(?s)(__device__ __forceinline__ uint4 kgen_ld_keep\(const void\* p\) )\{.*?\n\}\n`)

// buildRows compiles rowwise kernel k's generated CUDA source for the CPU
// under the address and undefined-behaviour sanitizers, with a wrapper
// per entry point: the kernel's own variants and its phases' (a column
// reduction's two launches).
func buildRows(t *testing.T, tc toolchain, k *ir.Kernel, src []byte) *cpuBuild {
	t.Helper()
	cu := ldKeepRE.ReplaceAllString(string(src), "${1}{ return *reinterpret_cast<const uint4*>(p); }\n")
	if strings.Contains(cu, "asm volatile") {
		t.Fatalf("%s: inline PTX left in the source after replacing kgen_ld_keep", k.Name)
	}
	type entry struct {
		host string
		n    int // tensors
	}
	var entries []entry
	tensors := func(bs []ir.Binding) int { return len(bs) - 1 }
	for _, v := range k.Variants {
		entries = append(entries, entry{v.HostName, tensors(k.EntryBindings())})
	}
	for _, p := range k.Phases() {
		if p.IsPhaseOwn() {
			continue
		}
		for _, v := range p.Variants {
			entries = append(entries, entry{v.HostName, tensors(p.Bindings)})
		}
	}
	var wrappers, table strings.Builder
	for _, e := range entries {
		var args []string
		for i := range e.n {
			args = append(args, fmt.Sprintf("kgen_cpu_ptr{p[%d]}", i))
		}
		args = append(args, fmt.Sprintf("*static_cast<const %s_args*>(a)", k.Name))
		fmt.Fprintf(&wrappers, "int kgen_cpu_entry_%s(void*, void* const* p, const void* a, char*, int) {\n"+
			"    kgen_cpu_launch(dim3(kgen_cpu_env(\"KGEN_CPU_BLOCKS\")), dim3(kgen_cpu_env(\"KGEN_CPU_THREADS\")))(%s, %s);\n    return 0;\n}\n",
			e.host, e.host, strings.Join(args, ", "))
		fmt.Fprintf(&table, "    if (n == %q) return kgen_cpu_entry_%s;\n", e.host, e.host)
	}
	dir := t.TempDir()
	main := "#include \"shim.h\"\n" + rowPrelude + "#include \"kernel.cu\"\n#include \"harness.h\"\n\n" + wrappers.String() +
		"kgen_cpu_fn kgen_cpu_find(const std::string& n) {\n" + table.String() + "    return nullptr;\n}\n"
	for name, data := range map[string]string{"kernel.cu": cu, "main.cpp": main} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	flags := []string{"-std=c++20", "-O2", "-pthread", "-ffp-contract=off", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer",
		"-DKGEN_CPU_A_COL=0", "-DKGEN_CPU_B_COL=0"}
	b := &cpuBuild{bin: compileCached(t, tc, fmt.Sprintf("%s (%d entry points)", k.Name, len(entries)), dir, flags, cu, main)}
	return b
}

// rowRunner runs one parity launch of a fatbin entry point: its blocks and
// threads from the launch; an empty grid launches nothing (as the port).
func (b *cpuBuild) rowRunner() func(context.Context, mslcpu.Launch) ([][]byte, error) {
	run := b.runner(func(l mslcpu.Launch) string { return l.HostName })
	return func(ctx context.Context, l mslcpu.Launch) ([][]byte, error) {
		if l.Grid[0] == 0 {
			return l.Buffers, nil
		}
		t := l.Threadgroup[0]
		os.Setenv("KGEN_CPU_BLOCKS", fmt.Sprint((l.Grid[0]+t-1)/t))
		os.Setenv("KGEN_CPU_THREADS", fmt.Sprint(t))
		return run(ctx, l)
	}
}

// rowParity runs parity on k through the CUDA build b (opts' Backend and
// Run set here) and reports every variant out of bounds.
func (b *cpuBuild) rowParity(t *testing.T, k *ir.Kernel, opts parity.Options) {
	t.Helper()
	opts.Backend, opts.Run = ir.CUDA, b.rowRunner()
	results, err := parity.Check(context.Background(), k, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range parity.Summarize(results) {
		if !r.OK() {
			t.Errorf("%s; first: %s", r, r.First)
			continue
		}
		t.Logf("%s", r)
	}
}

// TestColsCUDAOnCPU runs the CUDA port of the built-in column reductions,
// every launch (softcap_backward's cap_grad, a total_sum, takes three), on the CPU with the CUDA launch geometry (teams from one
// lane, 16-byte vector paths where cols is a multiple of the vector, the
// register cache and the re-reading loop), judged by parity against the
// float64 reference: widths 1 and 7 (scalar), 64 and 1024 (vectors,
// cached), 4099 (scalar, wide), 8192 (vectors past the cache, bf16); rows
// 0, 11 (NaN propagation) and 77 (ten chunks).
func TestColsCUDAOnCPU(t *testing.T) {
	tc := findToolchain(t)
	ks, files := loadKernels(t)
	for _, name := range []string{"rms_norm_backward", "bias_grad", "softcap_backward"} {
		k := ks[name]
		if k == nil || files[name] == nil {
			t.Fatalf("no built-in %s with a CUDA source", name)
		}
		t.Run(name, func(t *testing.T) {
			b := buildRows(t, tc, k, files[name])
			b.rowParity(t, k, parity.Options{Seed: 11, Cols: []int{1, 7, 64, 1024, 4099, 8192}, Rows: []int{0, 11, 77}})
			sameBitsAsMSL(t, k, b, name == "bias_grad")
		})
	}
}

// sameBitsAsMSL runs k at 77 rows of 7, 64 and 1024 columns on the MSL
// harness and through the CUDA build, on the same inputs, and compares the
// outputs' bits: the column order is the same on both backends, so a
// kernel of exact terms (exact: bias_grad's dy) must give the same [cols]
// bits; other outputs' differences (1/rms comes from a row reduction whose
// tree differs by backend) are counted and logged.
func sameBitsAsMSL(t *testing.T, k *ir.Kernel, b *cpuBuild, exact bool) {
	t.Helper()
	collect := func(backend ir.Backend, run func(context.Context, mslcpu.Launch) ([][]byte, error)) map[string]*parity.Sample {
		got := map[string]*parity.Sample{}
		opts := parity.Options{Seed: 13, Cols: []int{7, 64, 1024}, Rows: []int{77}, Backend: backend, Run: run,
			Sample: func(s *parity.Sample) { got[fmt.Sprintf("%s/%d", s.Variant.HostName, s.Sizes["cols"])] = s }}
		if _, err := parity.Check(context.Background(), k, mslSource(t, k), opts); err != nil {
			t.Fatal(err)
		}
		return got
	}
	msl, cuda := collect(ir.Metal, nil), collect(ir.CUDA, b.rowRunner())
	if len(msl) == 0 || len(msl) != len(cuda) {
		t.Fatalf("%d MSL launches sampled, %d CUDA", len(msl), len(cuda))
	}
	for key, m := range msl {
		c := cuda[key]
		for _, o := range k.BindingsOf(ir.Output) {
			size := 4
			if o.DType == 0 && m.Variant.DType.Size() == 2 {
				size = 2
			}
			x, y := m.Got[o.Index], c.Got[o.Index]
			differ := 0
			for i := 0; i+size <= len(x); i += size {
				if string(x[i:i+size]) != string(y[i:i+size]) {
					differ++
				}
			}
			switch {
			case o.IsColOutput() && exact && differ > 0:
				t.Errorf("%s %s: %d of %d values differ in their bits between the MSL and the CUDA kernels", key, o.Name, differ, len(x)/size)
			case differ > 0:
				t.Logf("%s %s: %d of %d values differ in their bits between the MSL and the CUDA kernels", key, o.Name, differ, len(x)/size)
			default:
				t.Logf("%s %s: the MSL and the CUDA kernels give the same bits (%d values)", key, o.Name, len(x)/size)
			}
		}
	}
}

// mslSource emits k's MSL, which parity runs on the CPU harness.
func mslSource(t *testing.T, k *ir.Kernel) []byte {
	t.Helper()
	src, err := cfam.Emit(k, cfam.Metal, cfam.Options{Header: "// Code generated by kgen. DO NOT EDIT."})
	if err != nil {
		t.Fatal(err)
	}
	return src
}
