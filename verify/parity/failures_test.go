package parity_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/parity"
)

// TestFailuresDescribed: a wrong kernel's results keep its first failing
// lanes (Result.Failures, the report's First) and its worst lane, not
// only the count. judgeLane describes a lane only when the report keeps
// it, so this holds the report to what it says.
func TestFailuresDescribed(t *testing.T) {
	needCompiler(t)
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	var k *ir.Kernel
	for _, kk := range kernels {
		if kk.Name == "gelu_tanh" {
			k = kk
		}
	}
	if k == nil {
		t.Fatal("no gelu_tanh kernel in the built-in specs")
	}
	wrong := replaceOnce(t, src[k.Name], "kgen_math::tanh(inner)", "kgen_math::sin(inner)")
	results, err := parity.Check(context.Background(), k, wrong, parity.Options{Seed: 1, Sizes: []int{100}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		switch {
		case r.Failed == 0:
			t.Errorf("%s: sin for tanh passed", r.HostName)
		case len(r.Failures) == 0 || len(r.Failures) > r.Failed || r.First == "":
			t.Errorf("%s: %d lanes failed, %d described, first %q", r.HostName, r.Failed, len(r.Failures), r.First)
		case r.Worst == nil || r.Worst.Excess <= 1:
			t.Errorf("%s: worst lane %+v, want one beyond its tolerance", r.HostName, r.Worst)
		}
	}
	for _, r := range parity.Summarize(results) {
		if r.OK() || r.First == "" {
			t.Errorf("%s: report %s, want a failure with its first lane", r.HostName, r)
		}
	}
}
