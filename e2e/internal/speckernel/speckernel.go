// Package speckernel builds the kernel of one spec written in a test, as
// `kgen gen` would, for the CPU harness tests of the ports (e2e/cudacpu,
// e2e/hipcpu).
package speckernel

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/ir"
)

// Build writes src as the only spec of a temporary project and returns
// its kernel.
func Build(t *testing.T, src string) *ir.Kernel {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "specs"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		config.FileName: "version: 1\nspecs: specs\nout:\n  msl: gen/msl\n  go: gen/kernels\n",
		"specs/k.yaml":  src,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(filepath.Join(dir, config.FileName))
	if err != nil {
		t.Fatal(err)
	}
	ks, err := generate.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ks[0]
}
