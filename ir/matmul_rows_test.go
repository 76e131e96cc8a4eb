package ir_test

import (
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestMatmulRowReductions: row_* in a matmul epilogue makes the kernel
// row-owning (RowTile, a strip NMax columns wide within Metal's 32 KiB,
// one threadgroup per 8 rows), with the rowwise kind's passes; misuse is
// reported at its line and column.
func TestMatmulRowReductions(t *testing.T) {
	k := mustBuild(t, "kernel: k\nkind: matmul\ndtypes: [f32]\nmatmul: {a: x, b: w}\nlet:\n  - e: exp(acc - row_max(acc))\noutputs:\n  - y: e / row_sum(e)\n")
	mm := k.Matmul()
	if mm.Rows == nil || mm.Rows.Passes != 2 || len(mm.Rows.Reductions) != 2 {
		t.Fatalf("rows %+v", mm.Rows)
	}
	if mm.Tile != ir.RowTile || mm.NMax != 928 || mm.ThreadgroupBytes > 32768 {
		t.Errorf("tile %s, NMax %d, %d bytes", mm.Tile, mm.NMax, mm.ThreadgroupBytes)
	}
	if got := len(k.Stages()); got != 3 { // pass 1, pass 2, write
		t.Errorf("%d stages", got)
	}
	for _, c := range []struct{ yaml, want string }{
		{"kernel: k\nkind: matmul\ndtypes: [f32]\nmatmul: {a: x, b: w}\noutputs:\n  - y: acc / row_sum(acc)\ntile: {bm: 64}\n",
			"specs/k.yaml:7:7: a matmul with row reductions uses the row-owning tile"},
		{"kernel: k\nkind: matmul\ndtypes: [f32]\nmatmul: {a: x, b: w}\ninputs:\n  - {name: g, shape: [n]}\noutputs:\n  - y: acc - row_sum(g)\n",
			"specs/k.yaml:8:14: row_sum of row-shaped inputs only"},
	} {
		_, diags := build(t, c.yaml)
		var all []string
		for _, d := range diags {
			all = append(all, d.String())
		}
		if !strings.Contains(strings.Join(all, "\n"), c.want) {
			t.Errorf("got %v, want %q", all, c.want)
		}
	}
}
