package backward

import (
	"testing"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/spec"
)

func TestDump(t *testing.T) {
	for _, c := range fdCases {
		var diags diag.List
		s := spec.Parse("specs/k.yaml", []byte(c.src+ports), &diags)
		specs := Derive([]*spec.Spec{s}, &diags)
		b := specs[len(specs)-1]
		t.Logf("== %s", b.Kernel.Name)
		for _, in := range b.Inputs {
			t.Logf("  in %s %v", in.Name.Name, in.Dims)
		}
		for _, f := range b.Let {
			t.Logf("  let %s: %s", f.Name.Name, f.Text)
		}
		for _, f := range b.Outputs {
			t.Logf("  out %s: %s", f.Name.Name, f.Text)
		}
	}
}
