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
// result. nvcc's output comes back in the error.
func Compile(ctx context.Context, nvcc, name string, src []byte, mode, out string) error {
	dir, err := os.MkdirTemp("", "kgen-nvcc-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, name+".cu")
	if err := os.WriteFile(in, src, 0o644); err != nil {
		return err
	}
	args := []string{"-std=c++17", "-O3", "-Xptxas", "-warn-spills"}
	switch mode {
	case "fatbin":
		args = append(append(args, "-fatbin"), FatbinArchs...)
	default:
		args = append(args, "-cubin", "-arch=sm_90")
		out = filepath.Join(dir, name+".cubin")
	}
	args = append(args, "-o", out, in)
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, nvcc, args...)
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("nvcc %s: %v\n%s", strings.Join(args, " "), err, strings.TrimSpace(buf.String()))
	}
	return nil
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
// each entry point's registers, stack frame and spill bytes.
func Resources(ctx context.Context, nvcc, name string, src []byte) ([]Usage, error) {
	dir, err := os.MkdirTemp("", "kgen-ptxas-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, name+".cu")
	if err := os.WriteFile(in, src, 0o644); err != nil {
		return nil, err
	}
	args := []string{"-std=c++17", "-O3", "-cubin", "-arch=sm_90", "-Xptxas", "-v", "-o", filepath.Join(dir, name+".cubin"), in}
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, nvcc, args...)
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("nvcc %s: %v\n%s", strings.Join(args, " "), err, strings.TrimSpace(buf.String()))
	}
	var out []Usage
	for _, m := range ptxasRE.FindAllStringSubmatch(buf.String(), -1) {
		switch {
		case m[1] != "":
			out = append(out, Usage{Entry: m[1]})
		case len(out) == 0:
			return nil, fmt.Errorf("ptxas -v: figures before any entry point:\n%s", buf.String())
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
