// Package cuda finds and runs nvcc, the CUDA toolkit's compiler, on the .cu
// sources emit/cfam writes: `kgen cuda` builds fatbins with it and
// `kgen verify` syntax-checks the sources where nvcc exists.
package cuda

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// NVCCEnv names the nvcc to use; otherwise nvcc on PATH, then
// /usr/local/cuda/bin/nvcc.
const NVCCEnv = "KGEN_NVCC"

// FatbinArchs are the targets `kgen cuda` builds: sm_80 and sm_90 machine
// code plus compute_90 PTX, which newer GPUs JIT-compile at load.
var FatbinArchs = []string{
	"-gencode", "arch=compute_80,code=sm_80",
	"-gencode", "arch=compute_90,code=sm_90",
	"-gencode", "arch=compute_90,code=compute_90",
}

// NVCC finds nvcc, or says why there is none.
func NVCC() (string, error) {
	if p := os.Getenv(NVCCEnv); p != "" {
		return exec.LookPath(p)
	}
	if p, err := exec.LookPath("nvcc"); err == nil {
		return p, nil
	}
	if p, err := exec.LookPath("/usr/local/cuda/bin/nvcc"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("no nvcc (the CUDA toolkit) on PATH, in $%s or in /usr/local/cuda/bin", NVCCEnv)
}

// Compile runs nvcc on one .cu source: mode "fatbin" writes out (every
// FatbinArchs target); mode "check" compiles for sm_90 only and discards the
// result (see Check). nvcc's output comes back in the error.
func Compile(ctx context.Context, nvcc, name string, src []byte, mode, out string) error {
	if mode != "fatbin" {
		return Check(ctx, nvcc, name, src)
	}
	dir, in, err := writeSource(name, src)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	args := append([]string{"-std=c++17", "-O3", "-Xptxas", "-warn-spills", "-fatbin"}, FatbinArchs...)
	_, err = run(ctx, nvcc, append(args, "-o", out, in)...)
	return err
}

// Check compiles one .cu source for sm_90 and discards the result: the
// source compiles, or the error holds nvcc's output. A source that
// compiled with this nvcc before is not compiled again (checked).
func Check(ctx context.Context, nvcc, name string, src []byte) error {
	_, err := checked(ctx, nvcc, name, src, "", ".cubin", []string{"-std=c++17", "-O3", "-Xptxas", "-warn-spills", "-cubin", "-arch=sm_90"})
	return err
}

// Usage is what ptxas reports for one entry point compiled for sm_90.
type Usage struct {
	Entry                   string
	Registers, Stack        int
	SpillStores, SpillLoads int
}

// ptxasRE matches the lines of `ptxas -v` that Resources reads.
var ptxasRE = regexp.MustCompile(`Compiling entry function '([^']+)'|(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads|Used (\d+) registers`)

// Resources compiles one .cu source for sm_90 with `ptxas -v` and returns
// each entry point's registers, stack frame and spill bytes. flags go to
// nvcc before the source (-D: one part of a CUDA matmul). The report of a
// source compiled with this nvcc and these flags before is reused
// (checked).
func Resources(ctx context.Context, nvcc, name string, src []byte, flags ...string) ([]Usage, error) {
	args := append([]string{"-std=c++17", "-O3", "-cubin", "-arch=sm_90", "-Xptxas", "-v"}, flags...)
	report, err := checked(ctx, nvcc, name, src, "", ".cubin", args)
	if err != nil {
		return nil, err
	}
	var out []Usage
	for _, m := range ptxasRE.FindAllStringSubmatch(report, -1) {
		switch {
		case m[1] != "":
			out = append(out, Usage{Entry: m[1]})
		case len(out) == 0:
			return nil, fmt.Errorf("ptxas -v: figures before any entry point:\n%s", report)
		case m[2] != "":
			u := &out[len(out)-1]
			u.Stack, u.SpillStores, u.SpillLoads = atoi(m[2]), atoi(m[3]), atoi(m[4])
		default:
			out[len(out)-1].Registers = atoi(m[5])
		}
	}
	return out, nil
}

func atoi(s string) int {
	v, _ := strconv.Atoi(s) // the pattern matched digits
	return v
}

// CUTLASSEnv names the CUTLASS folder when `kgen cuda --cutlass` is not
// given: the CUDA matmuls are CUTLASS 3.x GEMMs, a header-only, build-time
// dependency of `kgen cuda` alone.
const CUTLASSEnv = "KGEN_CUTLASS"

// CUTLASSTested is the CUTLASS release kgen's CUDA matmuls were built and
// measured with (the nvidia-cutlass 4.2.0.0 wheel's headers).
const CUTLASSTested = "4.2.0"

// LibraryArch is the target of the CUTLASS libraries: SM90's WGMMA and TMA
// need the architecture-specific sm_90a.
var LibraryArch = []string{"-gencode", "arch=compute_90a,code=sm_90a"}

// CUTLASSInclude finds CUTLASS's include folder under dir (a CUTLASS
// checkout, an unpacked wheel's cutlass_library/source, or the include
// folder itself), or says exactly which header is missing.
func CUTLASSInclude(dir string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("the CUDA matmuls need CUTLASS %s headers: pass --cutlass DIR or set $%s to a folder holding include/cutlass/cutlass.h and include/cute/tensor.hpp (a CUTLASS release, or the nvidia-cutlass wheel's cutlass_library/source)", CUTLASSTested, CUTLASSEnv)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	for _, inc := range []string{filepath.Join(dir, "include"), filepath.Join(dir, "cutlass_library", "source", "include"), dir} {
		if _, err := os.Stat(filepath.Join(inc, "cutlass", "cutlass.h")); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(inc, "cute", "tensor.hpp")); err != nil {
			return "", fmt.Errorf("CUTLASS folder %s has cutlass/cutlass.h but no cute/tensor.hpp: CUTLASS 3.x or later is needed (tested: %s)", inc, CUTLASSTested)
		}
		return inc, nil
	}
	return "", fmt.Errorf("no CUTLASS headers in %s: neither include/cutlass/cutlass.h nor cutlass/cutlass.h is there (CUTLASS %s: a release, or the nvidia-cutlass wheel's cutlass_library/source)", dir, CUTLASSTested)
}

// CompilePart compiles one part of a CUTLASS matmul's source (see
// emit/cfam/cutlass.go: -DKGEN_PARTS -DKGEN_PART_<part>) into a
// position-independent object for sm_90a.
func CompilePart(ctx context.Context, nvcc, name string, src []byte, include, part, out string) error {
	dir, in, err := writeSource(name, src)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	_, err = run(ctx, nvcc, append(partArgs(include, part), "-o", out, in)...)
	return err
}

// CheckPart compiles one part as CompilePart does and discards the
// object: the part compiles, or the error holds nvcc's output. A part
// compiled before from the same source with this nvcc and CUTLASS
// release is not compiled again (checked).
func CheckPart(ctx context.Context, nvcc, name string, src []byte, include, part string) error {
	_, err := checked(ctx, nvcc, name, src, PartFlags(include), ".o", partArgs(include, part))
	return err
}

func partArgs(include, part string) []string {
	return append([]string{"-std=c++17", "-O3", "-DNDEBUG", "--expt-relaxed-constexpr", "-Xcompiler", "-fPIC",
		"-I" + include, "-DKGEN_PARTS", "-DKGEN_PART_" + part, "-c"}, LibraryArch...)
}

// LinkLibrary links a CUTLASS matmul's objects into one shared library
// with the CUDA runtime linked statically, so loading it needs only the
// driver.
func LinkLibrary(ctx context.Context, nvcc string, objs []string, out string) error {
	args := append(append([]string{"-shared", "-cudart", "static"}, LibraryArch...), "-o", out)
	if lib := runtimeLibDir(nvcc); lib != "" {
		args = append(args, "-L"+lib)
	}
	_, err := run(ctx, nvcc, append(args, objs...)...)
	return err
}

// runtimeLibDir is the folder beside nvcc's bin/ holding the static CUDA
// runtime, where NVIDIA's PyPI wheels put it (nvidia/cu13/lib): nvcc
// itself looks in lib64/ only, so without it the link stops at
// -lcudart_static. "" when there is none (a toolkit install's nvcc finds
// its own).
func runtimeLibDir(nvcc string) string {
	lib := filepath.Join(filepath.Dir(filepath.Dir(nvcc)), "lib")
	if _, err := os.Stat(filepath.Join(lib, "libcudart_static.a")); err != nil {
		return ""
	}
	return lib
}

// PartFlags is what, besides the source, decides a part's object: a
// cached object is keyed by the source and these.
func PartFlags(include string) string {
	v, _ := os.ReadFile(filepath.Join(include, "cutlass", "version.h"))
	return strings.Join(LibraryArch, " ") + " -O3 " + string(v)
}

// writeSource writes src as <name>.cu into a new temporary folder, which
// the caller removes.
func writeSource(name string, src []byte) (dir, in string, err error) {
	if dir, err = os.MkdirTemp("", "kgen-nvcc-"); err != nil {
		return "", "", err
	}
	in = filepath.Join(dir, name+".cu")
	if err := os.WriteFile(in, src, 0o644); err != nil {
		os.RemoveAll(dir)
		return "", "", err
	}
	return dir, in, nil
}

// run runs nvcc and returns its output; on failure the output comes back
// in the error.
func run(ctx context.Context, nvcc string, args ...string) (string, error) {
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, nvcc, args...)
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("nvcc %s: %v\n%s", strings.Join(args, " "), err, strings.TrimSpace(buf.String()))
	}
	return buf.String(), nil
}
