package cudacpu

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/e2e/internal/buildcache"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/internal/long"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// toolchain is what a CPU build needs: the CUDA headers (cuda_fp16.h and
// cuda_bf16.h have host implementations of the conversions) and a host
// C++20 compiler.
type toolchain struct {
	cxx, include string
	version      string // the compiler's --version, for the build cache
}

// findToolchain skips the test unless $KGEN_NVCC's ../include holds the
// CUDA headers and a host C++ compiler exists.
func findToolchain(t *testing.T) toolchain {
	t.Helper()
	nvcc := os.Getenv("KGEN_NVCC")
	if nvcc == "" {
		t.Skip("KGEN_NVCC is not set: the CPU run of the CUDA kernels needs the CUDA headers next to an nvcc (KGEN_NVCC=/path/to/bin/nvcc)")
	}
	inc := filepath.Join(filepath.Dir(filepath.Dir(nvcc)), "include")
	if _, err := os.Stat(filepath.Join(inc, "cuda_bf16.h")); err != nil {
		t.Skipf("KGEN_NVCC=%s: no CUDA headers at %s (%v)", nvcc, inc, err)
	}
	for _, c := range []string{os.Getenv("CXX"), "g++", "clang++"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return toolchain{cxx: p, include: inc, version: probe(t, p)}
		}
	}
	t.Skip("no host C++ compiler ($CXX, g++ or clang++) for the CPU run of the CUDA kernels")
	return toolchain{}
}

// probe returns cxx's --version and skips the test unless cxx builds
// C++20 under both sanitizers the builds use, with the sanitizers'
// interface headers (the shim announces its fiber switches to them); the
// verdict is kept for the package's other tests.
func probe(t *testing.T, cxx string) string {
	t.Helper()
	probeOnce.Do(func() {
		out, err := exec.Command(cxx, "--version").Output()
		if err != nil {
			probeSkip = fmt.Sprintf("%s --version: %v", cxx, err)
			return
		}
		probeVersion = string(out)
		dir, err := os.MkdirTemp("", "kgen-cudacpu-probe-")
		if err != nil {
			probeSkip = err.Error()
			return
		}
		defer os.RemoveAll(dir)
		src := filepath.Join(dir, "probe.cpp")
		if err := os.WriteFile(src, []byte("#include <sanitizer/common_interface_defs.h>\n#include <sanitizer/tsan_interface.h>\n#include <vector>\nint main() { std::vector<int> v(1); return v[0]; }\n"), 0o644); err != nil {
			probeSkip = err.Error()
			return
		}
		for _, san := range []string{"address,undefined", "thread"} {
			out, err := exec.Command(cxx, "-std=c++20", "-pthread", "-fsanitize="+san, src, "-o", filepath.Join(dir, "probe-"+san)).CombinedOutput()
			if err != nil {
				probeSkip = fmt.Sprintf("%s cannot build C++20 with -fsanitize=%s, which the CPU run of the CUDA kernels needs: %v\n%s", cxx, san, err, buildcache.FirstLines(string(out), 5))
				return
			}
		}
	})
	if probeSkip != "" {
		t.Skip(probeSkip)
	}
	return probeVersion
}

var (
	probeOnce    sync.Once
	probeSkip    string // why the compiler cannot build the runs; "" when it can
	probeVersion string // its --version

	kernelsOnce sync.Once
	kernelsIR   map[string]*ir.Kernel
	kernelsCU   map[string][]byte
	kernelsErr  error
)

// loadKernels builds the IR and the generated files of the built-in
// specs in memory, as `kgen gen` writes them (once for the package's
// tests, which only read them).
func loadKernels(t *testing.T) (map[string]*ir.Kernel, map[string][]byte) {
	t.Helper()
	kernelsOnce.Do(func() {
		cfg, err := config.Load(filepath.Join("..", "..", config.FileName))
		if err != nil {
			kernelsErr = err
			return
		}
		res, err := generate.Run(cfg)
		if err != nil {
			kernelsErr = err
			return
		}
		kernelsIR, kernelsCU = map[string]*ir.Kernel{}, map[string][]byte{}
		for _, k := range res.Kernels {
			kernelsIR[k.Name] = k
		}
		for _, f := range res.Files {
			if filepath.Base(filepath.Dir(f.Path)) == "cuda" && strings.HasSuffix(f.Path, ".cu") {
				kernelsCU[strings.TrimSuffix(filepath.Base(f.Path), ".cu")] = f.Data
			}
		}
	})
	if kernelsErr != nil {
		t.Fatal(kernelsErr)
	}
	return kernelsIR, kernelsCU
}

var (
	// launchRE is a kernel launch, K<<<config>>>(: rewritten to
	// kgen_cpu_launch(config)(K, … (testdata/shim.h).
	launchRE = regexp.MustCompile(`([A-Za-z_][\w:]*(?:<[^<>]*>)?)<<<(.*?)>>>\(`)
	// partRE opens the code of one part of the library.
	partRE = regexp.MustCompile(`(?m)^#if !defined\(KGEN_PARTS\) \|\| defined\(KGEN_PART_(\w+)\)$`)
)

// translate rewrites the launches of a generated .cu for the shim; the
// rest of the text is compiled as written.
func translate(src string) (string, error) {
	if !strings.Contains(src, "<<<") {
		return "", fmt.Errorf("no kernel launch (<<<) in the source")
	}
	out := launchRE.ReplaceAllString(src, "kgen_cpu_launch($2)($1, ")
	if strings.Contains(out, "<<<") {
		return "", fmt.Errorf("a launch the rewrite does not recognise is left: %q", out[strings.Index(out, "<<<")-40:][:120])
	}
	return out, nil
}

// cpuBuild is one kernel's library compiled for the CPU: the run binary
// and the names its table holds.
type cpuBuild struct {
	bin    string
	simt   map[dtype.DType]bool // storage types with a SIMT GEMM part
	timing *time.Duration
}

// build compiles kernel k's generated CUDA source (mutate, when non-nil,
// rewrites it first) with every part of plain CUDA — the entry points and
// the SIMT GEMMs — and, for each CUTLASS part, a stand-in: the split's
// workspace GEMM computed on the host, or a single GEMM's refusal.
func build(t *testing.T, tc toolchain, k *ir.Kernel, src []byte, mutate func(string) string) *cpuBuild {
	return buildWith(t, tc, k, src, mutate, "address,undefined")
}

// buildWith is build under sanitizers san ("address,undefined": accesses
// past a tensor, leaks, misaligned vector loads, overflow; "thread": data
// races, __shared__ memory's included); any report fails the run.
func buildWith(t *testing.T, tc toolchain, k *ir.Kernel, src []byte, mutate func(string) string, san string) *cpuBuild {
	t.Helper()
	text := string(src)
	if mutate != nil {
		text = mutate(text)
	}
	cu, err := translate(text)
	if err != nil {
		t.Fatalf("%s: %v", k.Name, err)
	}
	args := k.Name + "_args"
	if !strings.Contains(cu, "struct "+args+" {") {
		t.Fatalf("%s: no struct %s in the generated source", k.Name, args)
	}
	parts := partRE.FindAllStringSubmatch(cu, -1)
	if len(parts) == 0 {
		t.Fatalf("%s: no `#if !defined(KGEN_PARTS) || defined(KGEN_PART_…)` blocks in the generated source", k.Name)
	}
	b := &cpuBuild{simt: map[dtype.DType]bool{}}
	defs := []string{"-DKGEN_PARTS"}
	var stubs, table strings.Builder
	seen := map[string]bool{}
	for _, p := range parts {
		part := p[1]
		if seen[part] {
			continue
		}
		seen[part] = true
		fn := "kgen_" + k.Name + "_" + part
		switch {
		case part == "entry":
			defs = append(defs, "-DKGEN_PART_entry")
		case strings.HasSuffix(part, "_simt"):
			defs = append(defs, "-DKGEN_PART_"+part)
			dt := dtype.Parse(strings.TrimSuffix(part, "_simt"))
			if dt == dtype.Invalid {
				t.Fatalf("%s: part %s: no storage type %q", k.Name, part, strings.TrimSuffix(part, "_simt"))
			}
			b.simt[dt] = true
			if strings.Contains(cu, `extern "C" int `+fn+"(void* kgen_stream, const void* kgen_pa,") {
				break // a split's workspace GEMM: its entry point calls it
			}
			fmt.Fprintf(&table, "    if (n == %q) return [](void* s, void* const* p, const void* a, char* e, int l) { return %s(s, p, *static_cast<const %s*>(a), e, l); };\n", fn, fn, args)
		default:
			stubs.WriteString(stub(t, cu, fn, part) + "\n")
		}
	}
	for _, v := range k.Variants {
		if strings.Contains(cu, `extern "C" int `+v.HostName+"(") {
			fmt.Fprintf(&table, "    if (n == %q) return %s;\n", v.HostName, v.HostName)
		}
	}
	dir := t.TempDir()
	main := "#include \"shim.h\"\n#include \"kernel.cu\"\n#include \"harness.h\"\n\n" + stubs.String() +
		"kgen_cpu_fn kgen_cpu_find(const std::string& n) {\n" + table.String() + "    return nullptr;\n}\n"
	for name, data := range map[string]string{"kernel.cu": cu, "main.cpp": main} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	mm := k.Matmul()
	bcol := len(mm.B) > 0 && mm.B[0].ColMajor
	flags := append([]string{"-std=c++20", "-O2", "-pthread", "-fsanitize=" + san, "-fno-sanitize-recover=all", "-fno-omit-frame-pointer",
		fmt.Sprintf("-DKGEN_CPU_A_COL=%d", b2i(mm.A.ColMajor)), fmt.Sprintf("-DKGEN_CPU_B_COL=%d", b2i(bcol))},
		defs...)
	key := buildKey(t, tc, flags, cu, main)
	if bin := buildCache.Get(key); bin != "" {
		b.bin = bin
		t.Logf("%s: the CPU build of this source is cached (parts %s)", k.Name, strings.Join(defs[1:], " "))
		return b
	}
	b.bin = filepath.Join(dir, "run")
	cmd := append(append(flags, "-I"+testdata, "-I"+dir, "-I"+tc.include), "-x", "c++", filepath.Join(dir, "main.cpp"), "-o", b.bin)
	start := time.Now()
	if out, err := exec.Command(tc.cxx, cmd...).CombinedOutput(); err != nil {
		t.Fatalf("%s: the CPU build failed: %v\n%s", k.Name, err, buildcache.FirstLines(string(out), 40))
	}
	t.Logf("%s: built for the CPU in %v (parts %s)", k.Name, time.Since(start).Round(time.Millisecond), strings.Join(defs[1:], " "))
	buildCache.Put(key, b.bin)
	return b
}

// The CPU builds are cached, as verify/mslcpu caches its own: a build is
// the compiler's, with ASan or TSan, of one generated source (mutated or
// not) — tens of seconds of a loaded core each, and the same bytes until
// the generator, the shim or the compiler changes. A binary is kept
// under the hash of everything that decides it (buildKey) in
// $KGEN_CUDACPU_CACHE, else <user cache>/kgen/cudacpu; one unused for two
// weeks is removed when another is stored. Removing the folder forgets
// them all.

// buildKey hashes the compiler (path and --version), the flags, the CUDA
// headers' folder (path, modification time), testdata's headers (shim.h,
// harness.h, shim_mma.h, kernel_harness.h), and the two sources.
func buildKey(t *testing.T, tc toolchain, flags []string, cu, main string) string {
	t.Helper()
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n", tc.cxx, tc.version, strings.Join(flags, "\n"))
	if fi, err := os.Stat(tc.include); err == nil {
		fmt.Fprintf(h, "%s %d\n", tc.include, fi.ModTime().UnixNano())
	}
	for _, f := range []string{"shim.h", "harness.h", "shim_mma.h", "kernel_harness.h"} {
		data, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s %d\n", f, len(data))
		h.Write(data)
	}
	fmt.Fprintf(h, "kernel.cu %d\n%s\nmain.cpp %d\n%s", len(cu), cu, len(main), main)
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// stub defines CUTLASS part fn from its declaration in the source: the
// split's workspace GEMM (pointers kgen_pa, kgen_pb into kgen_d) on the
// host, or a single GEMM that refuses to run.
func stub(t *testing.T, cu, fn, part string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^extern "C" int ` + regexp.QuoteMeta(fn) + `\((.*)\);$`)
	m := re.FindStringSubmatch(cu)
	if m == nil {
		t.Fatalf("part %s: no declaration of %s in the generated source", part, fn)
	}
	head := strings.TrimSuffix(m[0], ";")
	if !strings.Contains(m[1], "kgen_pa") {
		return fmt.Sprintf("%s { return kgen_cpu::cutlass_gemm(%q, kgen_err, kgen_errlen); }", head, fn)
	}
	if !strings.Contains(m[1], "float* kgen_d") || !strings.Contains(m[1], "& kgen_a,") {
		t.Fatalf("part %s: the workspace GEMM %s has parameters the stand-in does not know: %s", part, fn, m[1])
	}
	var elem string
	switch {
	case strings.HasPrefix(part, "bf16_"):
		elem = "__nv_bfloat16"
	case strings.HasPrefix(part, "f16_"):
		elem = "__half"
	default:
		t.Fatalf("part %s: a workspace GEMM of storage the stand-in does not know", part)
	}
	return fmt.Sprintf("%s { return kgen_cpu::workspace_gemm<%s>(kgen_pa, kgen_pb, kgen_d, kgen_a.m, kgen_a.n, kgen_a.k); }", head, elem)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// launchLimit bounds one launch's run: the default's take a second, the
// long grid loop minutes on a loaded machine. (Threads that wait at
// barriers no other thread reaches abort the run at once: see shim.h.)
var launchLimit = long.Pick(2*time.Minute, 20*time.Minute)

// runner runs one parity launch through the build: fn names the function
// to call for the launch (an entry point, or a SIMT GEMM directly).
func (b *cpuBuild) runner(fn func(l mslcpu.Launch) string) func(context.Context, mslcpu.Launch) ([][]byte, error) {
	return func(ctx context.Context, l mslcpu.Launch) ([][]byte, error) {
		dir, err := os.MkdirTemp("", "kgen-cudacpu-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		for i, buf := range l.Buffers {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("b%d", i)), buf, 0o644); err != nil {
				return nil, err
			}
		}
		ctx, cancel := context.WithTimeout(ctx, launchLimit)
		defer cancel()
		name := fn(l)
		start := time.Now()
		out, err := exec.CommandContext(ctx, b.bin, name, dir).CombinedOutput()
		if b.timing != nil {
			*b.timing += time.Since(start)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: no end in %v (a kernel that loops forever?): %s", name, launchLimit, buildcache.FirstLines(string(out), 20))
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v: %s", name, err, buildcache.FirstLines(string(out), 30))
		}
		res := make([][]byte, len(l.Buffers))
		for i := range l.Buffers {
			if res[i], err = os.ReadFile(filepath.Join(dir, fmt.Sprintf("o%d", i))); err != nil {
				return nil, err
			}
		}
		return res, nil
	}
}

// buildCache keeps the CPU builds between runs ($KGEN_CUDACPU_CACHE to move it).
var buildCache = buildcache.Open("KGEN_CUDACPU_CACHE", "cudacpu")
