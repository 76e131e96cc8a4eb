package ir_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestQuantCUDAPlan: `cuda: generated` on a matmul with quantized Bs gives
// the generated tensor-core port (ir.QuantCUDA), no CUTLASS plan, and the
// CUDA forms by m (skinny ≤ 16, mid tile ≤ 64 where the dense form is
// planned — a single B — and ≤ 256 where not — the gated pair —, the
// kernel's own above) for a single and a gated B, the dense form's plan
// (its dequantization phase writes an [n, k] workspace of the storage
// type; a library plan of 16-bit CUTLASS GEMMs that takes any shape);
// what it cannot run is refused at the port's
// line and column with the reason (before, the CUTLASS plan refused every
// quantized B as "pins its dtype").
func TestQuantCUDAPlan(t *testing.T) {
	head := "kernel: k\nkind: matmul\ndtypes: [f16, bf16]\n"
	ports := "ports: {metal: generated, cuda: generated}\n"
	for _, c := range []struct {
		matmul string
		nb     int
	}{
		{"matmul: {a: x, b: {name: w, quant: {format: affine, bits: 4, group: 64}}}\n", 1},
		{"matmul:\n  a: x\n  b:\n    - {name: wg, quant: q4_0, acc: gate}\n    - {name: wu, quant: q8_0, acc: up}\n", 2},
	} {
		out := "outputs:\n  - y: acc\n"
		if c.nb == 2 {
			out = "outputs:\n  - y: gate * up\n"
		}
		k := mustBuild(t, head+c.matmul+ports+out)
		mm := k.Matmul()
		if mm.CUDA != nil || mm.Split != nil || mm.QuantCUDA == nil {
			t.Fatalf("%d B(s): CUTLASS plan %v, split %v, quantized port %v", c.nb, mm.CUDA != nil, mm.Split != nil, mm.QuantCUDA != nil)
		}
		q := mm.QuantCUDA
		if q.Large.BN*c.nb != 128 || q.Mid.BN*c.nb != 64 || q.Large.Bytes(c.nb) > 48*1024 || q.Mid.Bytes(c.nb) > 48*1024 {
			t.Errorf("%d B(s): tiles %+v %+v", c.nb, q.Large, q.Mid)
		}
		for _, tile := range []ir.QuantTile{q.Large, q.Mid} {
			if c.nb*tile.BN*tile.BK/ir.QuantChunk != tile.Threads() || tile.BN/tile.WarpsN%16 != 0 {
				t.Errorf("%d B(s): tile %+v: one chunk a thread and whole pairs of n8 tiles a warp", c.nb, tile)
			}
		}
		midMax := 256
		if c.nb == 1 {
			midMax = ir.DenseAbove
			d := q.Dense
			if d == nil || mm.LibraryPlan() != d.GEMM || d.GEMM.AlignOf(k.Variants[0].DType) != 1 || len(d.GEMM.SIMTParts()) != 0 {
				t.Fatalf("1 B: dense form %+v", d)
			}
			ws := d.Dequant.Bindings[len(d.Dequant.Bindings)-2]
			if ws.Name != ir.DenseName(0) || ws.Role != ir.Output || ws.DType != 0 || ws.Shape.String() != "[n, k]" || d.Dequant.LaunchOn(ir.CUDA).Threadgroup[0] != ir.DequantThreads {
				t.Errorf("1 B: dequantization phase %+v", d.Dequant)
			}
		} else if q.Dense != nil || mm.LibraryPlan() != nil {
			t.Errorf("2 Bs: a dense form %+v (the split over dequantized Bs is not generated)", q.Dense)
		}
		forms, phases := k.CUDAForms(), k.DescriptorPhases()
		if len(forms) != 2 || forms[0].AtMost != 16 || phases[forms[0].Phase].Suffix != "gemv" || forms[1].AtMost != midMax || phases[forms[1].Phase].Suffix != "mid" {
			t.Errorf("%d B(s): forms %+v", c.nb, forms)
		}
		if len(k.Phases()) != 1 || phases[forms[1].Phase].LaunchOn(ir.Metal).Grid[0] != nil {
			t.Errorf("%d B(s): the mid tile must be CUDA's alone (Metal phases %d)", c.nb, len(k.Phases()))
		}
		if u, _ := k.QuantWeightRounding(ir.CUDA, k.Variants[1].DType); u < 0x1p-8 {
			t.Errorf("%d B(s): bf16 weight rounding %g", c.nb, u)
		}
	}
	q4 := "matmul: {a: x, b: {name: w, quant: q4_0}}\n"
	for _, c := range []struct{ spec, want string }{
		{head + q4 + ports + "outputs:\n  - y: acc / row_sum(acc)\n", "reduces rows"},
		{head + "matmul: {a: {name: x, layout: col_major}, b: {name: w, quant: q4_0}}\n" + ports + "outputs:\n  - y: acc\n", "col_major"},
		{strings.Replace(head, "[f16, bf16]", "[f32, bf16]", 1) + q4 + ports + "outputs:\n  - y: acc\n", "storage f32"},
		{head + "matmul:\n  a: x\n  b:\n    - {name: wg, quant: q4_0, acc: gate}\n    - {name: wu, acc: up}\n" + ports + "outputs:\n  - y: gate * up\n", "B wu is not quantized"},
	} {
		_, diags := build(t, c.spec)
		at := fmt.Sprintf("specs/k.yaml:%d:", 1+strings.Count(c.spec[:strings.Index(c.spec, "ports:")], "\n"))
		if len(diags) == 0 || !strings.Contains(diags[0].String(), at) || !strings.Contains(diags[0].String(), c.want) {
			t.Errorf("got %v, want a positioned %q", diags, c.want)
		}
	}
}
