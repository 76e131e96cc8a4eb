package parity_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// gatherKernels are the kernels with indexed reads or positioned writes
// (docs/indexing.md): the built-ins and the golden case of every form.
func gatherKernels(t *testing.T) ([]*ir.Kernel, map[string][]byte) {
	t.Helper()
	var out []*ir.Kernel
	src := map[string][]byte{}
	for _, cfg := range []string{filepath.Join(repoRoot(), "kgen.yaml"), filepath.Join(repoRoot(), "testdata", "golden", "gather", "kgen.yaml")} {
		ks, s := rowKernels(t, cfg)
		for _, k := range ks {
			if len(k.Rows().Gathers)+len(k.Rows().Scatters) > 0 {
				out = append(out, k)
				src[k.Name] = s[k.Name]
			}
		}
	}
	if len(out) < 2 {
		t.Fatalf("%d kernels with indexed reads; want embedding and gather_forms at least", len(out))
	}
	return out, src
}

// TestGatherKernelsASan runs every kernel with indexed reads under
// AddressSanitizer with parity's index inputs (in range, -1, the
// dimension, one past it, i32's minimum and maximum) at widths on the
// scalar and wide paths and row counts 0, 1 and 11: every element must
// equal the float64 reference (0 outside the tensor), and no access may
// leave a buffer.
func TestGatherKernelsASan(t *testing.T) {
	needCompiler(t)
	if err := mslcpu.SanitizerAvailable(context.Background(), mslcpu.AddressSanitizer); err != nil {
		t.Skipf("no AddressSanitizer runtime: %v", err)
	}
	kernels, src := gatherKernels(t)
	for _, k := range kernels {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			results, err := parity.Check(context.Background(), k, src[k.Name], parity.Options{Seed: 5, Cols: []int{1, 7, 64, 4304}, Rows: []int{0, 1, 11}, Sanitize: mslcpu.AddressSanitizer})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range parity.Summarize(results) {
				if !r.OK() {
					t.Errorf("under ASan: %s; first: %s", r, r.First)
					continue
				}
				t.Logf("%s", r)
			}
		})
	}
}

// TestGatherBoundsAreNeeded proves TestGatherKernelsASan can fail: with
// the range check of embedding's row taken out of its MSL, the
// out-of-range ids read outside the table; with kv_cache_append's position
// check taken out, the positions past max_seq land in the next head's rows
// (or past the cache), which parity sees as elements that should have kept
// their values. The harness refuses the first launch, parity the second.
func TestGatherBoundsAreNeeded(t *testing.T) {
	needCompiler(t)
	if err := mslcpu.SanitizerAvailable(context.Background(), mslcpu.AddressSanitizer); err != nil {
		t.Skipf("no AddressSanitizer runtime: %v", err)
	}
	kernels, src := gatherKernels(t)
	checks := map[string]string{
		"embedding":       "(unsigned int)kgen_take0_0 < args.vocab",
		"kv_cache_append": "(unsigned int)kgen_at_k_cache_1 < args.max_seq",
	}
	for _, k := range kernels {
		check, ok := checks[k.Name]
		if !ok {
			continue
		}
		delete(checks, k.Name)
		if !strings.Contains(string(src[k.Name]), check) {
			t.Fatalf("%s's MSL has no %q", k.Name, check)
		}
		bad := strings.Replace(string(src[k.Name]), check, "true", 1)
		results, err := parity.Check(context.Background(), k, []byte(bad), parity.Options{Seed: 5, Cols: []int{64}, Rows: []int{11}, Sanitize: mslcpu.AddressSanitizer})
		if err != nil {
			t.Logf("%s without its range check: %v", k.Name, firstLine(err.Error()))
			continue
		}
		failed := false
		for _, r := range parity.Summarize(results) {
			if !r.OK() {
				failed = true
				t.Logf("%s without its range check: %s", k.Name, r.First)
				break
			}
		}
		if !failed {
			t.Errorf("%s without its range check passed: nothing out of range was touched", k.Name)
		}
	}
	if len(checks) > 0 {
		t.Errorf("kernels not found: %v", checks)
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
