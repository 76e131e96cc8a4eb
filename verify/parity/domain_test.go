package parity

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/spec"
)

func kernelOf(t *testing.T, yaml string) *ir.Kernel {
	t.Helper()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "specs"), 0o755)
	if err := os.WriteFile(filepath.Join(root, "specs", "k.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	var diags diag.List
	ks := ir.Build(spec.LoadDir(root, "specs", &diags), &diags)
	if diags.Len() > 0 || len(ks) != 1 {
		t.Fatalf("%v", diags.Sorted())
	}
	return ks[0]
}

// `domain: finite` (issue 12, class 9): parity feeds such a kernel finite
// inputs only; without it, ±Inf and NaN are among the inputs.
func TestDomainFinite(t *testing.T) {
	for _, tc := range []struct{ name, yaml string }{
		{"elementwise", "kernel: k\ndtypes: [f32, f16]\ninputs: [g, up]\noutputs:\n  - y: g * up\n"},
		{"rowwise", "kernel: k\nkind: rowwise\ndtypes: [f32, bf16]\ninputs: [x, {name: w, shape: row}]\noutputs:\n  - y: x * w - row_max(x)\n"},
	} {
		for _, domain := range []string{"", "domain: all\n", "domain: finite\n"} {
			k := kernelOf(t, tc.yaml+domain)
			g := shapeGens[k.Kind]
			for _, v := range k.Variants {
				nonFinite := 0
				opts := Options{Range: DefaultRange}
				for _, sh := range g.shapes(k, opts) {
					for _, in := range g.inputs(rand.New(rand.NewPCG(sh.seed, 2)), k, v, sh.sizes, opts) {
						for _, x := range in {
							if math.IsInf(x, 0) || math.IsNaN(x) {
								nonFinite++
							}
						}
					}
				}
				if finite := domain == "domain: finite\n"; finite != (nonFinite == 0) {
					t.Errorf("%s %q %s: %d non-finite inputs", tc.name, domain, v.HostName, nonFinite)
				}
			}
		}
	}
}

// TestExactSeesReductionTerms: a library function inside a row reduction
// (row_sum(cos(acc))) makes a kernel inexact, as one outside does: the
// step refers to the reduction, whose terms are its own expression. The
// differential check held such a matmul to bit for bit and failed on
// 1 ulp of cos (a spec from the random specs).
func TestExactSeesReductionTerms(t *testing.T) {
	for _, tc := range []struct {
		yaml  string
		exact bool
	}{
		{"kernel: k\nkind: rowwise\ndtypes: [f32]\ninputs: [x]\noutputs:\n  - y: x + row_sum(cos(x))\n", false},
		{"kernel: k\nkind: matmul\ndtypes: [f32]\nmatmul: {a: x, b: w}\noutputs:\n  - y: acc + row_sum(cos(acc))\n", false},
		{"kernel: k\nkind: rowwise\ndtypes: [f32]\ninputs: [x]\noutputs:\n  - y: x + row_sum(abs(x))\n", true},
		{"kernel: k\ndtypes: [f32]\ninputs: [x]\noutputs:\n  - y: cos(x)\n", false},
	} {
		if got := Exact(kernelOf(t, tc.yaml)); got != tc.exact {
			t.Errorf("Exact = %v, want %v:\n%s", got, tc.exact, tc.yaml)
		}
	}
}
