package parity_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// Column reductions (ir.Cols, docs/colwise.md): the golden kernels that
// show RMSNorm's and LayerNorm's weight gradients, bias gradients and mean
// pooling are expressible pass parity; the built-ins give the same bytes in
// every lane order; and planted bugs of the fold fail.

// TestGoldenColKernels runs testdata/golden/colwise (layer_norm_backward's
// dx, dw, db; mean_pool into a pinned f32 output; col_max and col_min in
// the storage type beside a per-element output; sq_error's total_sum) at
// 11 and 77 rows.
func TestGoldenColKernels(t *testing.T) {
	needCompiler(t)
	kernels, src := rowKernels(t, filepath.Join(repoRoot(), "testdata", "golden", "colwise", "kgen.yaml"))
	if len(kernels) != 4 {
		t.Fatalf("%d column-reducing golden kernels, want 4", len(kernels))
	}
	for _, k := range kernels {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			results, err := parity.Check(context.Background(), k, src[k.Name], parity.Options{Seed: 3, Cols: []int{7, 64, 4304}, Rows: []int{0, 11, 77}})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range results {
				checkConfined(t, r)
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
}

// TestColKernelsSameBytes runs the built-in column reductions in the
// forward, reverse and shuffled lane orders (Options.Orders: every later
// order must give the first one's bytes), and the same launch twice, at
// 77 rows (ten chunks) and the widths of sameBytesCols.
func TestColKernelsSameBytes(t *testing.T) {
	needCompiler(t)
	kernels, src := rowKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	n := 0
	for _, k := range kernels {
		if k.ColReductions() == nil {
			continue
		}
		n++
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			var runs [][][]byte
			opts := parity.Options{Seed: 5, Cols: sameBytesCols, Rows: []int{77},
				Orders: []mslcpu.LaneOrder{mslcpu.Forward, mslcpu.Reverse, mslcpu.Shuffled},
				Sample: func(s *parity.Sample) { runs = append(runs, s.Got) }}
			for range 2 {
				results, err := parity.Check(context.Background(), k, src[k.Name], opts)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range results {
					if r.Failed > 0 {
						t.Errorf("%s rows=%d cols=%d: %d of %d elements failed (or changed with the lane order); first: %s", r.HostName, r.Rows, r.Cols, r.Failed, r.Checked, r.First)
					}
				}
			}
			half := len(runs) / 2
			for i := range half {
				for b := range runs[i] {
					if !bytes.Equal(runs[i][b], runs[half+i][b]) {
						t.Errorf("launch %d: buffer %d differs between two runs", i, b)
					}
				}
			}
		})
	}
	if n < 2 {
		t.Fatalf("%d built-in kernels with column reductions, want rms_norm_backward and bias_grad", n)
	}
}

// TestWrongColKernelFails plants bugs in the column fold of
// rms_norm_backward (and bias_grad, whose only output is the sum) and
// wants parity to fail for every dtype: a row of each chunk dropped, the
// chunk's first row added to the stale workspace instead of stored, a way
// of the combine skipped, and the combine dropping the last chunk. At 77
// rows (ten chunks, two ways with two chunks).
func TestWrongColKernelFails(t *testing.T) {
	needCompiler(t)
	kernels, src := rowKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	byName := map[string]*ir.Kernel{}
	for _, k := range kernels {
		byName[k.Name] = k
	}
	mutations := []struct{ kernel, name, old, new string }{
		{"rms_norm_backward", "the fold drops a chunk's last row",
			"kgen_ws0[kgen_chunk * args.cols + kgen_j] = kgen_ci == 0u ? float(kgen_o_w_grad) :",
			"if (kgen_ci != 7u) kgen_ws0[kgen_chunk * args.cols + kgen_j] = kgen_ci == 0u ? float(kgen_o_w_grad) :"},
		{"rms_norm_backward", "the chunk's first row adds to the stale workspace",
			"= kgen_ci == 0u ? float(kgen_o_w_grad) :", "= false ? float(kgen_o_w_grad) :"},
		{"rms_norm_backward", "the combine skips its last way", "for (uint kgen_w = 0; kgen_w < kWays; ++kgen_w)", "for (uint kgen_w = 0; kgen_w + 1 < kWays; ++kgen_w)"},
		{"bias_grad", "the combine drops the last chunk", "kgen_c < args.kgen_chunks;", "kgen_c + 1u < args.kgen_chunks;"},
	}
	for _, m := range mutations {
		t.Run(m.kernel+"/"+m.name, func(t *testing.T) {
			t.Parallel()
			k := byName[m.kernel]
			if k == nil {
				t.Fatalf("no kernel %s", m.kernel)
			}
			wrong := replaceOnce(t, src[k.Name], m.old, m.new)
			results, err := parity.Check(context.Background(), k, wrong, parity.Options{Seed: 1, Cols: []int{7, 64}, Rows: []int{77}})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range parity.Summarize(results) {
				if r.OK() {
					t.Errorf("%s passed parity with the mutation %q: %s", r.HostName, m.name, r)
					continue
				}
				t.Logf("%s fails as it must: %d/%d lanes; first: %s", r.HostName, r.Differ, r.Lanes, r.First)
			}
		})
	}
}
