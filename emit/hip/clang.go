// Package hip compiles the HIP sources emit/cfam writes (cfam.HIP) into
// AMDGPU code objects with clang and lld alone: no ROCm headers, no device
// libraries (-nogpuinc -nogpulib; Debian's ROCm device libraries stop
// before gfx942, and every HIP source defines what it uses). `kgen verify`
// compiles every generated HIP source for each of Archs and checks the
// objects (CheckObject); the builds are cached by the hash of everything
// that decides them.
package hip

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ClangEnv names the clang to use; otherwise clang-19 on PATH.
const ClangEnv = "KGEN_HIP_CLANG"

// Archs are the targets kgen builds and checks: gfx942 (MI300, CDNA 3,
// 64-lane wavefronts) and gfx1100 (RDNA 3, 32-lane wavefronts).
var Archs = []string{"gfx942", "gfx1100"}

// Flags are the compile flags before the target: device code only, as one
// linked code object (lld), no HIP headers or device libraries; warnings
// are errors, but for unused variables (a row kernel declares every thread
// coordinate, and one without reductions reads no wavefront index).
var Flags = []string{"-x", "hip", "-std=c++17", "-O3", "--cuda-device-only", "-nogpulib", "-nogpuinc",
	"--no-gpu-bundle-output", "-fuse-ld=lld", "-Wall", "-Wno-unused-variable", "-Werror"}

// Args are the clang arguments that compile in into the code object out
// for arch.
func Args(arch, in, out string) []string {
	return append(append([]string{}, Flags...), "--offload-arch="+arch, in, "-o", out)
}

// Clang finds clang and checks it has an lld to link with, or says why
// not.
func Clang() (string, error) {
	name := os.Getenv(ClangEnv)
	if name == "" {
		name = "clang-19"
	}
	clang, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("no %s for the HIP port (set $%s, or apt-get install clang-19 lld-19): %w", name, ClangEnv, err)
	}
	out, err := exec.Command(clang, "-print-prog-name=ld.lld").Output()
	lld := strings.TrimSpace(string(out))
	if err != nil || !filepath.IsAbs(lld) {
		return "", fmt.Errorf("%s finds no ld.lld to link AMDGPU code objects with (apt-get install lld-19)", clang)
	}
	if _, err := os.Stat(lld); err != nil {
		return "", fmt.Errorf("%s finds no ld.lld to link AMDGPU code objects with (apt-get install lld-19): %w", clang, err)
	}
	return clang, nil
}

// Compile compiles one HIP source for arch and returns the code object. A
// build of the same source by the same clang with the same flags is read
// from the cache (CacheDir) instead of run again.
func Compile(ctx context.Context, clang, name string, src []byte, arch string) ([]byte, error) {
	co, _, err := build(ctx, clang, name, src, arch)
	return co, err
}

// build compiles src for arch, with the compiler's report of each
// kernel's resources (-Rpass-analysis=kernel-resource-usage, Resources),
// and caches both under the hash of the compiler, flags, target and
// source.
func build(ctx context.Context, clang, name string, src []byte, arch string) (co []byte, report string, err error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00", toolID(clang), name, strings.Join(Args(arch, "", ""), "\x01"), arch)
	h.Write(src)
	key := fmt.Sprintf("%s-%s-%s", name, arch, hex.EncodeToString(h.Sum(nil))[:32])
	var at string
	if dir, err := CacheDir(); err == nil {
		at = filepath.Join(dir, key)
		co, err1 := os.ReadFile(at + ".co")
		report, err2 := os.ReadFile(at + ".usage")
		if err1 == nil && err2 == nil {
			return co, string(report), nil
		}
	}
	dir, err := os.MkdirTemp("", "kgen-hip-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	in, out := filepath.Join(dir, name+".hip"), filepath.Join(dir, name+"-"+arch+".co")
	if err := os.WriteFile(in, src, 0o644); err != nil {
		return nil, "", err
	}
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, clang, append(Args(arch, in, out), remarks)...)
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return nil, "", fmt.Errorf("%s %s: %v\n%s", clang, strings.Join(Args(arch, name+".hip", name+"-"+arch+".co"), " "), err, strings.TrimSpace(buf.String()))
	}
	if co, err = os.ReadFile(out); err != nil {
		return nil, "", err
	}
	report = buf.String()
	if at != "" && os.MkdirAll(filepath.Dir(at), 0o755) == nil {
		store(at+".usage", []byte(report))
		store(at+".co", co)
	}
	return co, report, nil
}

// store writes data at path through a temporary file (best effort: a
// cache that cannot be written only costs time).
func store(path string, data []byte) {
	tmp := fmt.Sprintf("%s.tmp%d", path, os.Getpid())
	if os.WriteFile(tmp, data, 0o644) == nil {
		os.Rename(tmp, path)
	}
}

// CacheEnv names the folder of cached code objects; default <user cache
// folder>/kgen/hip. Removing it forgets them all.
const CacheEnv = "KGEN_HIP_CACHE"

// CacheDir returns (and creates) the folder CacheEnv names, or its default.
func CacheDir() (string, error) {
	dir := os.Getenv(CacheEnv)
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache folder for the HIP code objects (set $%s): %w", CacheEnv, err)
		}
		dir = filepath.Join(base, "kgen", "hip")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

// toolID names the compiler: the resolved paths, sizes and modification
// times of clang and its lld, so an upgrade is another compiler.
func toolID(clang string) string {
	var b strings.Builder
	paths := []string{clang}
	if out, err := exec.Command(clang, "-print-prog-name=ld.lld").Output(); err == nil {
		paths = append(paths, strings.TrimSpace(string(out)))
	}
	for _, p := range paths {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		if fi, err := os.Stat(p); err == nil {
			fmt.Fprintf(&b, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
		} else {
			fmt.Fprintf(&b, "%s -\n", p)
		}
	}
	return b.String()
}
