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

// GQARows is a batched rowwise spec with every form of a tensor's batch
// (as verify/parity's gqa_rows): x whole, kv grouped, a per-head weight, a
// per-row scale shared by the heads, and a [rows] output; port is the
// generated port it names ("cuda", "rocm").
func GQARows(port string) string {
	return `kernel: gqa_rows
kind: rowwise
dtypes: [f32, f16, bf16]
compute: f32
batch: [b, h]
inputs:
  - x
  - {name: kv, batch: [b, h / group]}
  - {name: w, shape: [cols], batch: [h]}
  - {name: s, shape: [rows], batch: [b]}
params: [{name: eps, type: f32, example: 1e-5}]
let:
  - inv: rsqrt(row_mean(x * x) + eps)
outputs:
  - y: x * inv * w + kv * s
  - m: row_max(kv) + f32(row)
ports:
  ` + port + `: generated
`
}

// AxpyHeads is a batched elementwise spec with every form of a tensor's
// batch (as verify/parity's axpy_heads), for port.
func AxpyHeads(port string) string {
	return `kernel: axpy_heads
kind: elementwise
dtypes: [f32, f16, bf16]
batch: [b, h]
inputs:
  - x
  - {name: kv, batch: [b, h / group]}
  - {name: bias, batch: [h]}
  - {name: s, batch: []}
params: [{name: a, type: f32, example: 0.5}]
outputs:
  - y: x * a + kv + bias * s + f32(i)
ports:
  ` + port + `: generated
`
}
