package cuda

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRuntimeLibDir: the link finds the static CUDA runtime beside a PyPI
// wheel's nvcc (bin/../lib), and adds nothing for an nvcc without one.
func TestRuntimeLibDir(t *testing.T) {
	root := t.TempDir()
	nvcc := filepath.Join(root, "bin", "nvcc")
	if got := runtimeLibDir(nvcc); got != "" {
		t.Errorf("no lib folder: got %q", got)
	}
	lib := filepath.Join(root, "lib")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lib, "libcudart_static.a"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := runtimeLibDir(nvcc); got != lib {
		t.Errorf("got %q, want %q", got, lib)
	}
	if got := runtimeLibDir("nvcc"); got != "" {
		t.Errorf("bare nvcc: got %q", got)
	}
}
