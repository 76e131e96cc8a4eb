package ir_test

import (
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestROCmPorts: `rocm: generated` builds for elementwise and rowwise
// kernels (the HIP dialect writes them).
func TestROCmPorts(t *testing.T) {
	for _, src := range []string{`
kernel: e
dtypes: [f32]
inputs: [x]
outputs:
  - y: x * 2
ports:
  rocm: generated
`, `
kernel: r
kind: rowwise
dtypes: [f32]
inputs: [x]
outputs:
  - y: x / row_sum(x)
ports:
  rocm: generated
`} {
		k := mustBuild(t, src)
		if !k.Ports[ir.ROCm] || !k.Ports[ir.Metal] {
			t.Errorf("%s: ports %v; want metal and rocm", k.Name, k.Ports)
		}
	}
	// A matmul's ROCm port: matmul_rocm_test.go.
}
