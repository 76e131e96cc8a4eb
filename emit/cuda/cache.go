package cuda

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// CacheEnv names the folder where kgen keeps what nvcc made: `kgen
// cuda`'s CUTLASS part objects, and under checks/ the output of every
// compile that is only looked at (Check, CheckPart, Resources: `kgen
// verify`'s compile check and the tests' ptxas reports). Default:
// <user cache folder>/kgen/cuda. Removing the folder forgets everything.
const CacheEnv = "KGEN_CUDA_CACHE"

// CacheDir returns (and creates) the folder CacheEnv names, or its default.
func CacheDir() (string, error) {
	dir := os.Getenv(CacheEnv)
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache folder for nvcc's results (set $%s): %w", CacheEnv, err)
		}
		dir = filepath.Join(base, "kgen", "cuda")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

// checked runs nvcc with args, then "-o <temp>/<name><ext>" and the source
// written as <temp>/<name>.cu, and returns nvcc's output; the output file
// is discarded. A run that succeeded is remembered under the hash of
// everything that decides it — the toolkit (toolID), name, args, ext,
// extra (what else the run reads: CUTLASS's version for a part), the
// flags nvcc takes from the environment and the source — and an
// identical run later returns the remembered output
// without running nvcc: checking kgen's 34 CUDA sources takes minutes of
// nvcc, checking them again when nothing changed takes none. A failure is
// not remembered. Without a usable cache folder every run runs.
func checked(ctx context.Context, nvcc, name string, src []byte, extra, ext string, args []string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00", toolID(nvcc), name, strings.Join(args, "\x01"), ext, extra)
	for _, v := range []string{"NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"} { // nvcc reads them as flags
		fmt.Fprintf(h, "%s=%s\x00", v, os.Getenv(v))
	}
	h.Write(src)
	key := name + "-" + hex.EncodeToString(h.Sum(nil))[:32] + ".out"
	var at string
	if dir, err := CacheDir(); err == nil {
		at = filepath.Join(dir, "checks", key)
		if out, err := os.ReadFile(at); err == nil {
			return string(out), nil
		}
	}
	dir, in, err := writeSource(name, src)
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	out, err := run(ctx, nvcc, append(args, "-o", filepath.Join(dir, name+ext), in)...)
	if err != nil || at == "" {
		return out, err
	}
	if os.MkdirAll(filepath.Dir(at), 0o755) == nil {
		tmp := fmt.Sprintf("%s.tmp%d", at, os.Getpid())
		if os.WriteFile(tmp, []byte(out), 0o644) == nil {
			os.Rename(tmp, at) // best effort: a cache that cannot be written only costs time
		}
	}
	return out, nil
}

// toolID names the toolkit nvcc belongs to: the path, size and
// modification time of nvcc, ptxas, cicc and the include folder, so a
// toolkit installed over the old one (another version, another header
// wheel) is another toolkit.
func toolID(nvcc string) string {
	root := filepath.Dir(filepath.Dir(nvcc))
	var b strings.Builder
	for _, p := range []string{nvcc, filepath.Join(root, "bin", "ptxas"), filepath.Join(root, "nvvm", "bin", "cicc"), filepath.Join(root, "include")} {
		if fi, err := os.Stat(p); err == nil {
			fmt.Fprintf(&b, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
		} else {
			fmt.Fprintf(&b, "%s -\n", p)
		}
	}
	return b.String()
}
