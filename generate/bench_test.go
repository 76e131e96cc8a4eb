package generate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/internal/output"
	"github.com/kgen-dev/kgen/ir"
)

// syntheticSpec returns a spec exercising lets, constants, params and two
// inputs, varied by i so that no two kernels are alike.
func syntheticSpec(i int) string {
	return fmt.Sprintf(`kernel: synth_%04d
doc: synthetic kernel %d for the generation benchmark.
dtypes: [f32, f16, bf16]
compute: f32
inputs: [x, h]
params:
  - {name: scale, type: f32}
constants:
  k0: %d.5
let:
  - inner: k0 * (x + 0.044715 * x * x * x) + scale * h
  - gate: select(inner > 0, inner, -inner)
outputs:
  - y: 0.5 * x * (1 + tanh(inner)) + gate
  - z: max(x, h) * %d
`, i, i, i%97, i%13+1)
}

// writeProject lays out a project of n synthetic specs under dir.
func writeProject(tb testing.TB, dir string, n int) *config.Config {
	tb.Helper()
	specs := filepath.Join(dir, "specs")
	if err := os.MkdirAll(specs, 0o755); err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < n; i++ {
		p := filepath.Join(specs, fmt.Sprintf("synth_%04d.yaml", i))
		if err := os.WriteFile(p, []byte(syntheticSpec(i)), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	cfgPath := filepath.Join(dir, config.FileName)
	if err := os.WriteFile(cfgPath, []byte("version: 1\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		tb.Fatal(err)
	}
	return cfg
}

// genOnce is `kgen gen`: generate in memory, diff with the disk, write.
func genOnce(tb testing.TB, cfg *config.Config) (written int) {
	res, err := generate.Run(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	changes, err := output.Diff(cfg.Dir, []string{cfg.Out[ir.Metal], cfg.OutGo}, res.Files)
	if err != nil {
		tb.Fatal(err)
	}
	w, _, err := output.Apply(cfg.Dir, changes)
	if err != nil {
		tb.Fatal(err)
	}
	return len(w)
}

// BenchmarkGen1000 is a first `kgen gen` of 1000 specs into an empty tree.
func BenchmarkGen1000(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cfg := writeProject(b, b.TempDir(), 1000)
		b.StartTimer()
		if w := genOnce(b, cfg); w == 0 {
			b.Fatal("nothing written")
		}
	}
}

// BenchmarkRegen1000 is a second `kgen gen` with nothing changed: it must
// write nothing.
func BenchmarkRegen1000(b *testing.B) {
	cfg := writeProject(b, b.TempDir(), 1000)
	genOnce(b, cfg)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if w := genOnce(b, cfg); w != 0 {
			b.Fatalf("second gen wrote %d files, want 0", w)
		}
	}
}

// TestRegenWritesNothing checks the no-op property on a small project, so
// it holds in every test run and not only under -bench.
func TestRegenWritesNothing(t *testing.T) {
	cfg := writeProject(t, t.TempDir(), 20)
	if w := genOnce(t, cfg); w == 0 {
		t.Fatal("first gen wrote nothing")
	}
	if w := genOnce(t, cfg); w != 0 {
		t.Fatalf("second gen wrote %d files, want 0", w)
	}
}

// BenchmarkPipeline1000 is the in-memory part of `kgen gen` alone: load and
// check 1000 specs, build the IR, render every MSL and Go file.
func BenchmarkPipeline1000(b *testing.B) {
	cfg := writeProject(b, b.TempDir(), 1000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := generate.Run(cfg); err != nil {
			b.Fatal(err)
		}
	}
}
