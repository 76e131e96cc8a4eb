package parity_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// TestTeamFoldThreadgroups runs the team fold (ir/teamfold.go) at every
// team size a threadgroup allows: threadgroups of 32 to 1024 threads, rows
// of 1 to 32 simdgroups (at 1024 threads: 7 columns take one simdgroup,
// 200 two, 500 four, 1000 eight, 4304 all 32), with teams past the last
// row joining the barriers, each group's lanes forward, reversed and
// shuffled. The kernel has three reductions in its first pass and one in
// its second, so the partials' slots turn over an odd number of times
// within a pass.
func TestTeamFoldThreadgroups(t *testing.T) {
	needCompiler(t)
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("kgen.yaml", "version: 1\nspecs: specs\nout:\n  msl: gen/msl\n  go: gen/kernels\n")
	for _, tg := range []int{32, 64, 256, 1024} {
		write(fmt.Sprintf("specs/fold%d.yaml", tg), fmt.Sprintf(`kernel: fold%d
kind: rowwise
dtypes: [f32, f16]
inputs: [x]
let:
  - lo: row_min(x)
  - hi: row_max(x)
  - d: x - row_mean(x)
outputs:
  - y: (x - lo) / (hi - lo + 1) + row_sum(d * d) / 1000
threadgroup: %d
`, tg, tg))
	}
	kernels, src := rowKernels(t, filepath.Join(dir, "kgen.yaml"))
	if len(kernels) != 4 {
		t.Fatalf("%d kernels, want 4", len(kernels))
	}
	for _, k := range kernels {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			results, err := parity.Check(context.Background(), k, src[k.Name], parity.Options{Seed: 5,
				Cols: []int{7, 200, 500, 1000, 4304}, Rows: []int{11},
				Orders: []mslcpu.LaneOrder{mslcpu.Forward, mslcpu.Reverse, mslcpu.Shuffled}})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range parity.Summarize(results) {
				if !r.OK() {
					t.Errorf("%s", r)
					continue
				}
				t.Logf("%s", r)
			}
		})
	}
}
