package ir_test

import (
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// TestCUTLASSPlan: `cuda: generated` on a matmul gives the IR's CUTLASS
// plan — EVT leaves in the epilogue stage's argument order, an [n] input a
// row broadcast, [m] a column broadcast, the [m, n] input the C source —
// CUTLASS for the 16-bit dtypes, the SIMT GEMM (no alignment) for f32;
// what it cannot plan is refused at the port's line and column with the
// reason.
func TestCUTLASSPlan(t *testing.T) {
	head := "kernel: k\nkind: matmul\ndtypes: [f32, bf16]\nmatmul: {a: x, b: w}\nports: {metal: generated, cuda: generated}\n"
	k := mustBuild(t, head+"inputs:\n  - {name: s, shape: [m]}\n  - {name: bias, shape: [n]}\n  - {name: res, shape: [m, n]}\nparams:\n  - {name: alpha, type: f32}\noutputs:\n  - y: alpha * acc * s + bias + res\n")
	c := k.Matmul().CUDA
	if c == nil {
		t.Fatal("no CUDA plan")
	}
	var got []string
	for _, l := range c.Leaves {
		got = append(got, l.Name+":"+l.Kind.String())
	}
	want := "s:column broadcast bias:row broadcast res:C source acc:accumulator"
	if strings.Join(got, " ") != want {
		t.Errorf("leaves %v, want %s", got, want)
	}
	if c.Leaves[3].Kind != ir.EVTAcc || c.Leaves[3].Binding != -1 || c.Leaves[1].Binding != 3 {
		t.Errorf("leaf bindings %+v", c.Leaves)
	}
	if c.Source != 4 || len(c.DTypes) != 1 || c.DTypes[0] != dtype.BF16 || c.Align != 8 {
		t.Errorf("source %d, dtypes %v, align %d", c.Source, c.DTypes, c.Align)
	}
	if len(c.SIMT) != 1 || c.SIMT[0] != dtype.F32 || c.AlignOf(dtype.F32) != 1 || c.AlignOf(dtype.BF16) != 8 {
		t.Errorf("simt %v, align f32 %d bf16 %d", c.SIMT, c.AlignOf(dtype.F32), c.AlignOf(dtype.BF16))
	}
	if e := c.Entries(); len(e) != 2 || e[0] != dtype.BF16 || e[1] != dtype.F32 {
		t.Errorf("entries %v", e)
	}
	if k2 := mustBuild(t, strings.Replace(head, "cuda: generated", "cuda: null", 1)+"outputs:\n  - y: acc\n"); k2.Matmul().CUDA != nil {
		t.Error("a plan without cuda: generated")
	}
	for _, c := range []struct{ body, want string }{
		{"inputs:\n  - {name: a, shape: [m, n]}\n  - {name: b, shape: [m, n]}\noutputs:\n  - y: acc + a + b\n", "more than one [m, n] epilogue input"},
		{"outputs:\n  - y: acc / row_sum(acc)\n", "row reductions"},
		{"outputs:\n  - y: acc\n  - z: 2 * acc\n", "stores one output"},
		{"params:\n  - {name: c, type: i32}\noutputs:\n  - y: acc * f32(c)\n", "param c is an integer"},
		{"outputs:\n  - y: select(col > row, 0, acc)\n", "reads the index row"},
	} {
		_, diags := build(t, head+c.body)
		if len(diags) == 0 || !strings.Contains(diags[0].String(), "specs/k.yaml:5:") || !strings.Contains(diags[0].String(), c.want) {
			t.Errorf("got %v, want a positioned %q", diags, c.want)
		}
	}
	f32 := mustBuild(t, strings.Replace(head, "[f32, bf16]", "[f32]", 1)+"outputs:\n  - y: acc\n").Matmul().CUDA
	if f32 == nil || len(f32.DTypes) != 0 || len(f32.SIMT) != 1 {
		t.Errorf("f32 only: %+v", f32)
	}
	gated := "kernel: k\nkind: matmul\ndtypes: [bf16]\nmatmul:\n  a: x\n  b: [{name: wg, acc: g}, {name: wu, acc: u}]\nports: {cuda: generated}\noutputs:\n  - y: g * u\n"
	if _, diags := build(t, gated); len(diags) == 0 || !strings.Contains(diags[0].String(), "two Bs") {
		t.Errorf("gated: %v", diags)
	}
}
