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

// topkCols are the widths the top-k kernels run at: fewer columns than k
// (1, 7), k itself for topk_softmax (8), 64 (k of topk_wide), a row a
// lane's 4 values do not hold (65), and wide rows, past the Metal row
// cache at 8192 + 1 (a vocabulary-sized row is 32K to 256K columns: the
// same loop, more iterations).
var topkCols = []int{1, 7, 8, 64, 65, 4304, 8193}

// topkKernels builds the built-ins topk_softmax and topk_logits (k = 50) and
// the golden top-k kernels
// (testdata/golden/topk: argmax, k = 1; topk_values, k = 4 beside a
// per-element output; topk_wide, k = 64; topk_centered, values only, the
// key after a row reduction) with their MSL.
func topkKernels(t *testing.T) ([]*ir.Kernel, map[string][]byte) {
	t.Helper()
	var out []*ir.Kernel
	src := map[string][]byte{}
	for _, cfg := range []string{filepath.Join(repoRoot(), "kgen.yaml"), filepath.Join(repoRoot(), "testdata", "golden", "topk", "kgen.yaml")} {
		ks, s := rowKernels(t, cfg)
		for _, k := range ks {
			if k.TopKSelection() != nil {
				out, src[k.Name] = append(out, k), s[k.Name]
			}
		}
	}
	if len(out) != 6 {
		t.Fatalf("want topk_softmax, topk_logits and the 4 golden top-k kernels, got %d kernels", len(out))
	}
	return out, src
}

// TestTopKKernels runs the top-k kernels on the MSL harness against the
// float64 selection (ir.TopKOrder) with adversarial rows (parity's
// topkTies: a row of one value, a row of a few values, two NaNs, two
// +Infs, a -Inf, ±0, subnormals), every dtype, rows {0, 1, 11}: the
// columns exactly except where two keys are within their bounds.
func TestTopKKernels(t *testing.T) {
	needCompiler(t)
	kernels, src := topkKernels(t)
	for _, k := range kernels {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			results, err := parity.Check(context.Background(), k, src[k.Name], parity.Options{Seed: 5, Cols: topkCols})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range results {
				checkConfined(t, r)
			}
			for _, r := range parity.Summarize(results) {
				if !r.OK() {
					t.Errorf("%s", r)
					for _, f := range r.Failures {
						t.Errorf("  %s", f)
					}
					continue
				}
				t.Logf("%s", r)
			}
		})
	}
}

// TestTopKShuffled reruns them with each group's lanes in a shuffled
// order: the rounds' team argmax must not depend on it.
func TestTopKShuffled(t *testing.T) {
	needCompiler(t)
	kernels, src := topkKernels(t)
	for _, k := range kernels {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			results, err := parity.Check(context.Background(), k, src[k.Name],
				parity.Options{Seed: 6, Cols: []int{8, 300, 4304}, Rows: []int{11}, Orders: []mslcpu.LaneOrder{mslcpu.Shuffled}})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range results {
				if r.Failed > 0 {
					t.Errorf("%s rows=%d cols=%d (shuffled lanes): %d of %d elements out of tolerance; first: %s", r.HostName, r.Rows, r.Cols, r.Failed, r.Checked, r.First)
				}
			}
		})
	}
}

// TestTopKSanitized runs the top-k kernels under the address sanitizer
// (every store of a slot inside its [rows, k] output, short rows and k = cols
// included) and the thread sanitizer (each lane an OS thread, four
// simdgroups per row), on the MSL harness. (Dropping the team argmax's
// trailing barrier is not caught here: tried, the harness's simd functions
// order the lanes enough that TSan sees no race.)
func TestTopKSanitized(t *testing.T) {
	needCompiler(t)
	kernels, src := topkKernels(t)
	for _, san := range []mslcpu.Sanitizer{mslcpu.AddressSanitizer, mslcpu.ThreadSanitizer} {
		cols, rows := []int{1, 8, 300}, []int{11}
		if san == mslcpu.ThreadSanitizer {
			cols, rows = []int{300}, []int{2} // an OS thread per lane: one group of 128-lane teams
		}
		for _, k := range kernels {
			t.Run(san.String()+"/"+k.Name, func(t *testing.T) {
				results, err := parity.Check(context.Background(), k, src[k.Name],
					parity.Options{Seed: 7, Cols: cols, Rows: rows, Sanitize: san})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range results {
					if r.Failed > 0 {
						t.Errorf("%s rows=%d cols=%d (%s): %d of %d elements out of tolerance; first: %s", r.HostName, r.Rows, r.Cols, san, r.Failed, r.Checked, r.First)
					}
				}
			})
		}
	}
}

// TestWrongTopKFails plants bugs in the selection's helpers and checks
// that parity fails every variant of every top-k kernel they can show in:
// a lane's list ordering ties to the higher column, the merge's winning
// lane keeping its head (the same element every slot), a full list taking
// no better element, NaN ranked as an ordinary bit pattern (below -0), the
// cross-simdgroup combine keeping the first simdgroup's best, topk_norm
// summing one slot short.
func TestWrongTopKFails(t *testing.T) {
	needCompiler(t)
	kernels, src := topkKernels(t)
	bugs := []struct {
		name, from, to        string
		manyRounds, needsCols bool // k > 1 (a list of one has no order); a topk_index output
		kMax                  int  // only kernels of k at most this (0: any): a lane must hold more than k elements
	}{
		{"ties to the higher column", "(r == kr[i - 1] && c < kc[i - 1])", "(r == kr[i - 1] && c > kc[i - 1])", true, true, 0},
		{"the winner's lane keeps its head", "kgen_kh += kgen_br != 0u && kgen_bc == kgen_mine ? 1u : 0u;", "kgen_kh += 0u;", true, false, 0},
		{"a full list takes nothing", "if (n == k && !(r > kr[k - 1] || (r == kr[k - 1] && c < kc[k - 1]))) {", "if (n == k) {", false, false, 8},
		{"NaN unranked", "b = 0x7fc00000u;", "b = 0xffc00000u;", false, false, 0},
		{"first simdgroup wins", "if (ri > r || (ri == r && ci < c)) {", "if (false) {", false, false, 0},
		{"norm one slot short", "kgen_tr < kgen_tn; ++kgen_tr", "kgen_tr + 1u < kgen_tn; ++kgen_tr", false, false, 0},
	}
	for _, bug := range bugs {
		for _, k := range kernels {
			if !strings.Contains(string(src[k.Name]), bug.from) || bug.manyRounds && k.TopKSelection().K == 1 || bug.needsCols && !hasTopKIndex(k) ||
				bug.kMax > 0 && k.TopKSelection().K > bug.kMax {
				// topk_norm's sum: only kernels with a topk_norm output; a
				// list of one neither orders nor moves; which of two equal
				// keys is taken shows only in the columns.
				continue
			}
			t.Run(bug.name+"/"+k.Name, func(t *testing.T) {
				t.Parallel()
				bad := []byte(strings.Replace(string(src[k.Name]), bug.from, bug.to, 1))
				results, err := parity.Check(context.Background(), k, bad, parity.Options{Seed: 5, Cols: []int{8, 300, 4304}, Rows: []int{11}})
				if err != nil {
					t.Fatal(err)
				}
				failed := map[string]bool{}
				for _, r := range results {
					if r.Failed > 0 {
						failed[r.HostName] = true
					}
				}
				for _, v := range k.Variants {
					if !failed[v.HostName] {
						t.Errorf("%s: the planted bug %q passes parity", v.HostName, bug.name)
					}
				}
			})
		}
	}
}

// TestTopKGoReference runs the generated Go reference of the golden top-k
// kernels (kgenrt.TopK's sort) on the inputs parity gave the MSL and
// holds it to the MSL's bits: the columns and the values everywhere
// (their keys are inputs and a product, exact arithmetic), topk_norm's
// weights too (a float32 sum in slot order and a division on both sides).
// (kgenrt.TopK tying to the higher column fails it: tried by hand, as the
// Go reference builds against the module's kgenrt.)
func TestTopKGoReference(t *testing.T) {
	needCompiler(t)
	res, src, g := goReferenceFor(t, "topk")
	// The overlay has no cudabin folder to embed; the Go reference never
	// reads the CUDA binaries.
	g.Files["cudabin.go"] = []byte(strings.Replace(string(g.Files["cudabin.go"]), "//go:embed cudabin\n", "", 1))
	if checked, bad, first := differ(t, res, src, g); checked == 0 || bad != 0 {
		t.Fatalf("%d of %d lanes differ; first: %s", bad, checked, first)
	}
}

// hasTopKIndex reports whether k stores the selection's columns.
func hasTopKIndex(k *ir.Kernel) bool {
	for _, o := range k.TopKSelection().Outputs {
		if o.What == ir.TopKIndex {
			return true
		}
	}
	return false
}
