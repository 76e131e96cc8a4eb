package ir_test

import (
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestROCmPorts: `rocm: generated` builds for elementwise and rowwise
// kernels (the HIP dialect writes them) and is refused at its position,
// saying why, for a matmul.
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
	_, diags := build(t, `
kernel: m
kind: matmul
dtypes: [f32]
matmul: {a: x, b: w}
outputs:
  - y: acc
ports:
  rocm: generated
`)
	if len(diags) != 1 || diags[0].Pos.Line != 8 || !strings.Contains(diags[0].Msg, "rocm port of a matmul kernel") {
		t.Errorf("a matmul with rocm: generated: %v; want one error at line 8 naming the matmul", diags)
	}
}
