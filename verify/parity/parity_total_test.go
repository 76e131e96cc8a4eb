package parity_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/parity"
)

// total_sum (ir/total.go, docs/colwise.md): the golden sq_error's loss
// passes parity at widths below, at and above the total launch's 256 ways,
// and planted bugs of its three launches fail.

// goldenTotal is testdata/golden/colwise's sq_error with its MSL.
func goldenTotal(t *testing.T) (*ir.Kernel, []byte) {
	t.Helper()
	kernels, src := rowKernels(t, filepath.Join(repoRoot(), "testdata", "golden", "colwise", "kgen.yaml"))
	for _, k := range kernels {
		if k.Name == "sq_error" {
			return k, src[k.Name]
		}
	}
	t.Fatal("no golden kernel sq_error")
	return nil, nil
}

// TestTotalSum checks sq_error (a per-element output, a total_sum and a
// col_sum of one let) at 0, 1, 11 and 77 rows of 1 to 600 columns.
func TestTotalSum(t *testing.T) {
	needCompiler(t)
	k, src := goldenTotal(t)
	results, err := parity.Check(context.Background(), k, src, parity.Options{Seed: 7, Cols: []int{1, 7, 256, 600}, Rows: []int{0, 1, 11, 77}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range parity.Summarize(results) {
		if !r.OK() {
			t.Errorf("%s; first: %s", r, r.First)
			continue
		}
		t.Logf("%s", r)
	}
}

// TestWrongTotalFails plants bugs in each launch of a total_sum and wants
// parity to fail at 77 rows of 600 columns (three columns per way for the
// first 88 ways): for every dtype, except where the bug loses one column
// of 600 (0.17% of the loss), which only f32's tolerance sees (f16's and
// bf16's allow their storage's relative rounding, 2⁻¹¹ and 2⁻⁸, of it).
func TestWrongTotalFails(t *testing.T) {
	needCompiler(t)
	k, src := goldenTotal(t)
	mutations := []struct {
		name, old, new string
		f32Only        bool
	}{
		{name: "the row passes drop a chunk's last row",
			old: "kgen_ws0[kgen_chunk * args.cols + kgen_j] = kgen_ci == 0u ?",
			new: "if (kgen_ci != 7u) kgen_ws0[kgen_chunk * args.cols + kgen_j] = kgen_ci == 0u ?"},
		{name: "the combine leaves the column's sum unstored", old: "if (args.kgen_chunks > 0u) kgen_ws0[kgen_j] = kgen_r0;", new: ";"},
		{"the total launch skips its last way", "for (uint kgen_w = 0; kgen_w < kWays; ++kgen_w) {\n            kgen_r0 = kgen_r0 + kgen_part[kgen_w];", "for (uint kgen_w = 0; kgen_w + 1 < kWays; ++kgen_w) {\n            kgen_r0 = kgen_r0 + kgen_part[kgen_w];", true},
		{"the total launch's ways stop a column early", "kgen_j < args.cols; kgen_j += kWays)", "kgen_j + 1u < args.cols; kgen_j += kWays)", true},
		{name: "the total subtracts a way", old: "kgen_r0 = kgen_r0 + kgen_part[kgen_w];", new: "kgen_r0 = kgen_r0 - kgen_part[kgen_w];"},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			wrong := replaceOnce(t, src, m.old, m.new)
			results, err := parity.Check(context.Background(), k, wrong, parity.Options{Seed: 1, Cols: []int{600}, Rows: []int{77}})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range parity.Summarize(results) {
				switch {
				case r.OK() && m.f32Only && !strings.HasSuffix(r.HostName, "_f32"):
					t.Logf("%s passes with one column of 600 lost, within its storage tolerance: %s", r.HostName, r)
					continue
				case r.OK():
					t.Errorf("%s passed parity with the mutation %q: %s", r.HostName, m.name, r)
					continue
				}
				t.Logf("%s fails as it must: %d/%d lanes; first: %s", r.HostName, r.Differ, r.Lanes, r.First)
			}
		})
	}
}

// TestSavedGolden checks testdata/golden/backward's layer_norm_saved (its
// mean and 1/std saved as [rows] f32 outputs) and its backward, which reads
// them and writes x's, w's, b's and the scale param's gradients, at 0, 11
// and 77 rows.
func TestSavedGolden(t *testing.T) {
	needCompiler(t)
	kernels, src := rowKernels(t, filepath.Join(repoRoot(), "testdata", "golden", "backward", "kgen.yaml"))
	n := 0
	for _, k := range kernels {
		if !strings.HasPrefix(k.Name, "layer_norm_saved") {
			continue
		}
		n++
		t.Run(k.Name, func(t *testing.T) {
			results, err := parity.Check(context.Background(), k, src[k.Name], parity.Options{Seed: 9, Cols: []int{7, 64, 300}, Rows: []int{0, 11, 77}})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range parity.Summarize(results) {
				if !r.OK() {
					t.Errorf("%s; first: %s", r, r.First)
					continue
				}
				t.Logf("%s", r)
			}
		})
	}
	if n != 2 {
		t.Fatalf("%d layer_norm_saved kernels, want the forward and its backward", n)
	}
}
