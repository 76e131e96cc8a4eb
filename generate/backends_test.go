package generate_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/ir"
)

// TestEveryPortedBackendIsEmitted: for every backend the IR lets a spec
// port (ir.Generated), a kernel of each kind with that port gets its source
// file, its per-kernel Go file and a filled slot in its port table; for
// every other backend, a kernel forced to have the port is an error, never a
// silently missing file. A backend added to ir.Generated without its row in
// emit/cfam's Dialects or emit/golang's ports fails here.
func TestEveryPortedBackendIsEmitted(t *testing.T) {
	cfg, err := config.Load(filepath.Join("..", config.FileName))
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[ir.Kind]string{ir.Elementwise: "gelu_tanh", ir.Rowwise: "rms_norm"}
	for b := ir.Backend(0); b < ir.NumBackends; b++ {
		for kind, name := range byKind {
			kernels, err := generate.Load(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var k *ir.Kernel
			for _, c := range kernels {
				if c.Name == name {
					k = c
				}
			}
			if k == nil || k.Kind != kind {
				t.Fatalf("built-in %s (%s) not found", name, kind)
			}
			k.Ports[b] = true
			res, err := generate.Emit(cfg, []*ir.Kernel{k})
			if !ir.Generated[b] {
				if err == nil || !strings.Contains(err.Error(), b.String()) {
					t.Errorf("%s with a forced %s port: err = %v, want an error naming %s", name, b, err, b)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s with a %s port: %v", name, b, err)
			}
			files := map[string][]byte{}
			for _, f := range res.Files {
				files[f.Path] = f.Data
			}
			if len(files[generate.SourcePath(cfg, k, b)]) == 0 {
				t.Errorf("%s: no %s source at %s", name, b, generate.SourcePath(cfg, k, b))
			}
			api := files[filepath.ToSlash(filepath.Join(cfg.OutGo, name+"_kernel.go"))]
			if !bytes.Contains(api, []byte("// "+b.String()+": generated")) {
				t.Errorf("%s: the port table has no generated %s slot", name, b)
			}
		}
	}
}
