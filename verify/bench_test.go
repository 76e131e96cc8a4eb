package verify_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify"
)

// syntheticSpec is generate's benchmark spec: lets, constants, params and
// two inputs, varied by i so that no two kernels are alike.
func syntheticSpec(i int) string {
	return fmt.Sprintf(`kernel: synth_%04d
doc: synthetic kernel %d for the verify benchmark.
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

// BenchmarkVerify1000 is `kgen verify --parity off` on 1000 kernels (3000
// variants) generated to disk, without a go.mod (so without the
// port-dispatch rules, whose cost is the go command's): regenerate in
// memory, compare 4001 files, parse the generated Go, recompute 3000 keys
// from the .metal files, check ports and launchers.
func BenchmarkVerify1000(b *testing.B) {
	dir := b.TempDir()
	for i := 0; i < 1000; i++ {
		writeFile(b, filepath.Join(dir, "specs", fmt.Sprintf("synth_%04d.yaml", i)), syntheticSpec(i))
	}
	writeFile(b, filepath.Join(dir, config.FileName), "version: 1\n")
	if out, code := kgen(dir, "gen"); code != 0 {
		b.Fatalf("kgen gen: %s", out)
	}
	cfg, err := config.Load(filepath.Join(dir, config.FileName))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := verify.Run(context.Background(), cfg, verify.Options{OutDirs: []string{cfg.Out[ir.Metal], cfg.OutGo}, Parity: "off"})
		if err != nil || !rep.OK() || rep.Variants != 3000 {
			b.Fatalf("%v: %+v", err, rep)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
		b.Fatal("the benchmark project must not be a module")
	}
}
