package mslcpu

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed shim/metal_stdlib shim/metal_simdgroup_matrix shim/metal_type_traits shim/metal_builtins shim/metal_extras shim/runtime.cc shim/runtime_tg.inc shim/runtime_cost.inc shim/metal_cost
var shimFS embed.FS

// shimFiles are the embedded shim files, unpacked side by side so that
// metal_stdlib's includes and the kernels' #include <metal_*> find them.
var shimFiles = []string{"metal_stdlib", "metal_simdgroup_matrix", "metal_type_traits", "metal_builtins", "metal_extras", "runtime.cc", "runtime_tg.inc", "runtime_cost.inc", "metal_cost"}

// cacheVersion changes whenever the way binaries are built changes in a way
// the hashed inputs do not capture.
const cacheVersion = "mslcpu-cache-1"

// baseFlags are the flags from the project notes: C++20, no FMA contraction
// (Metal's precise mode rounds every operation), and half/bfloat arithmetic
// rounded per operation instead of kept in float.
var baseFlags = []string{
	"-std=c++20", "-O2", "-ffp-contract=off", "-Wno-unknown-attributes",
	"-Xclang", "-ffloat16-excess-precision=none",
	"-Xclang", "-fbfloat16-excess-precision=none",
}

// strictFlags add the address-space keywords and reject the implicit
// double promotions and float narrowings that MSL code must not rely on.
var strictFlags = []string{
	"-fsyntax-only", "-DKGEN_STRICT",
	"-Werror=double-promotion", "-Werror=implicit-float-conversion",
}

// clangCandidates are tried in order; the shim needs clang >= 17
// (ext_vector_type swizzles, __bf16 arithmetic).
var clangCandidates = []string{"clang++-19", "clang++-20", "clang++-21", "clang++-18", "clang++-17", "clang++"}

var versionRe = regexp.MustCompile(`clang version (\d+)`)

// CompileError carries compiler diagnostics for a source that did not build.
type CompileError struct {
	Diagnostics string
}

func (e *CompileError) Error() string { return "mslcpu: compile failed:\n" + e.Diagnostics }

// Compiler returns the C++ compiler the harness will use, or an error saying
// none was found. $KGEN_MSLCPU_CXX overrides the search.
func Compiler() (string, error) {
	if cxx := os.Getenv("KGEN_MSLCPU_CXX"); cxx != "" {
		path, err := exec.LookPath(cxx)
		if err != nil {
			return "", fmt.Errorf("mslcpu: $KGEN_MSLCPU_CXX=%s: %v", cxx, err)
		}
		return path, nil
	}
	for _, name := range clangCandidates {
		path, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		if v, err := compilerVersion(path); err == nil && clangMajor(v) >= 17 {
			return path, nil
		}
	}
	if _, err := exec.LookPath("g++"); err == nil {
		return "", errors.New("mslcpu: only g++ found; the MSL shim needs clang >= 17 (ext_vector_type swizzles, __bf16 arithmetic): install clang-19")
	}
	return "", errors.New("mslcpu: no C++ compiler found: install clang-19 (or set $KGEN_MSLCPU_CXX)")
}

func clangMajor(version string) int {
	m := versionRe.FindStringSubmatch(version)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

var versions sync.Map // compiler path -> version text

// compilerVersion returns `cxx --version`, memoised: it is part of every
// cache key, so that a compiler upgrade never reuses old binaries.
func compilerVersion(cxx string) (string, error) {
	if v, ok := versions.Load(cxx); ok {
		return v.(string), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := child{what: cxx + " --version", path: cxx, args: []string{"--version"}, memory: CompilerMemory,
		stdoutN: maxDiagnostics, outErr: cxx + " --version wrote over " + Bytes(maxDiagnostics)}
	res, err := c.run(ctx)
	if err == nil {
		err = res.err
	}
	if err != nil {
		return "", fmt.Errorf("mslcpu: %s --version: %v", cxx, err)
	}
	versions.Store(cxx, string(res.stdout))
	return string(res.stdout), nil
}

// toolchain is a compiler with its cache directory and unpacked shim.
type toolchain struct {
	cxx, version, cache, shim string
}

func newToolchain() (*toolchain, error) {
	cxx, err := Compiler()
	if err != nil {
		return nil, err
	}
	version, err := compilerVersion(cxx)
	if err != nil {
		return nil, err
	}
	cache, err := CacheDir()
	if err != nil {
		return nil, err
	}
	shim, err := unpackShim(cache)
	if err != nil {
		return nil, err
	}
	return &toolchain{cxx: cxx, version: version, cache: cache, shim: shim}, nil
}

// CacheDir returns (and creates) the directory where built kernels are
// cached: $KGEN_MSLCPU_CACHE, else <user cache dir>/kgen/mslcpu, else (no
// usable home, as in sandboxed tests) <temp dir>/kgen-mslcpu-<uid>.
func CacheDir() (string, error) {
	if dir := os.Getenv("KGEN_MSLCPU_CACHE"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("mslcpu: cache directory: %v", err)
		}
		return dir, nil
	}
	if base, err := os.UserCacheDir(); err == nil {
		dir := filepath.Join(base, "kgen", "mslcpu")
		if err := os.MkdirAll(dir, 0o755); err == nil {
			return dir, nil
		}
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("kgen-mslcpu-%d", os.Getuid()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("mslcpu: cache directory: %v", err)
	}
	return dir, nil
}

// shimHash covers every embedded shim file.
var shimHash = sync.OnceValue(func() string {
	h := sha256.New()
	for _, name := range shimFiles {
		data, _ := shimFS.ReadFile("shim/" + name)
		fmt.Fprintf(h, "%s %d\n", name, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))
})

// unpackShim writes the shim into a content-addressed directory once.
func unpackShim(cache string) (string, error) {
	dir := filepath.Join(cache, "shim-"+shimHash()[:16])
	for _, name := range shimFiles {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err == nil {
			continue
		}
		data, _ := shimFS.ReadFile("shim/" + name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		if err := writeAtomic(path, data, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// key hashes everything that shapes a build product.
func (tc *toolchain) key(kind string, flags []string, parts ...string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%q\x00", cacheVersion, kind, tc.cxx, tc.version, flags)
	h.Write([]byte(shimHash()))
	for _, p := range parts {
		fmt.Fprintf(h, "\x00%d\x00", len(p))
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// buildFlags are the compile (and link) flags of a build with sanitizer s:
// -O1 and debug lines under a sanitizer, so that reports name kernel.metal
// lines; float results do not depend on the optimisation level because
// nothing is contracted or reassociated.
func buildFlags(s Sanitizer, extra ...string) []string {
	flags := append([]string{}, baseFlags...)
	switch s {
	case AddressSanitizer:
		flags = append(flags, "-O1", "-g", "-fdebug-compilation-dir=.", "-fsanitize=address", "-fno-omit-frame-pointer")
	case ThreadSanitizer:
		flags = append(flags, "-O1", "-g", "-fdebug-compilation-dir=.", "-fsanitize=thread")
	}
	return append(flags, extra...)
}

// runtimeObject compiles shim/runtime.cc once per compiler, shim and flags.
func (tc *toolchain) runtimeObject(ctx context.Context, s Sanitizer, extra []string) (string, error) {
	flags := buildFlags(s, extra...)
	out := filepath.Join(tc.cache, "rt-"+tc.key("runtime", flags)+".o")
	return cached(out, func(tmp string) error {
		args := append(append([]string{}, flags...), "-I", tc.shim, "-c", filepath.Join(tc.shim, "runtime.cc"), "-o", tmp)
		return tc.compile(ctx, args, nil)
	})
}

// binary builds (or finds) the executable for one program.
func (tc *toolchain) binary(ctx context.Context, p *program, s Sanitizer, extra []string) (string, error) {
	rt, err := tc.runtimeObject(ctx, s, extra)
	if err != nil {
		return "", err
	}
	flags := buildFlags(s, extra...)
	tu := translationUnit(p)
	base := filepath.Join(tc.cache, "k-"+tc.key("kernel", flags, tu))
	return cached(base, func(tmp string) error {
		// Keep the translation unit next to the binary: it is the best
		// starting point when a driver or shim problem needs debugging.
		if err := writeAtomic(base+".cc", []byte(tu), 0o644); err != nil {
			return err
		}
		args := append(append([]string{}, flags...), "-I", tc.shim, "-x", "c++", base+".cc", "-x", "none", rt, "-o", tmp, "-lm", "-lpthread")
		return tc.compile(ctx, args, nil)
	})
}

func (tc *toolchain) compile(ctx context.Context, args []string, stdin []byte) error {
	c := child{what: "compiling", path: tc.cxx, args: args, stdin: stdin, memory: CompilerMemory,
		stdoutN: maxDiagnostics, merge: true, outErr: "the compiler's diagnostics are over " + Bytes(maxDiagnostics)}
	res, err := c.run(ctx)
	if err != nil {
		return err
	}
	if res.err != nil {
		return &CompileError{Diagnostics: compilerDiagnostics(res.stdout, res.err, CompilerMemory)}
	}
	return nil
}

// compilerDiagnostics are a failed compiler's output, with how it ended
// when that was a signal (its memory or CPU limit, most likely).
func compilerDiagnostics(out []byte, err error, memory int64) string {
	if detail := exitDetail(err); detail != "" {
		return strings.TrimRight(string(out), "\n") + fmt.Sprintf("\nthe compiler was stopped: %s (it may run in %s of address space and CPU time up to the deadline)\n",
			detail, Bytes(memory))
	}
	return string(out)
}

var flights sync.Map // output path -> *flight

type flight struct {
	once sync.Once
	err  error
}

// cached returns out, building it with build(tmp) first unless it exists.
// Builds of one path within this process run once; across processes the
// atomic rename makes concurrent builds harmless.
func cached(out string, build func(tmp string) error) (string, error) {
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	v, _ := flights.LoadOrStore(out, &flight{})
	f := v.(*flight)
	f.once.Do(func() {
		tmp := fmt.Sprintf("%s.tmp%d", out, os.Getpid())
		defer os.Remove(tmp)
		if f.err = build(tmp); f.err == nil {
			f.err = os.Rename(tmp, out)
		}
	})
	if f.err != nil {
		flights.Delete(out) // let a later call retry (e.g. after a cancelled context)
		return "", f.err
	}
	return out, nil
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
