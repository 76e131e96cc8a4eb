package e2e

import (
	"context"
	"math"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kgen-dev/kgen/kgenrt"
	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// needMLX skips, saying why (haveMLX), where MLX (pip's mlx[cpu], which
// make test installs best effort) cannot be imported: MLX is the outside
// referee of these tests, other people's implementation of the same
// functions.
func needMLX(t *testing.T) {
	t.Helper()
	if why := haveMLX(); why != "" {
		t.Skip(why)
	}
}

// emulateMetal runs kgenrt's Metal port on the MSL-on-CPU harness for the
// test (mslcpu.EmulateMetal), or skips where the harness has no compiler.
func emulateMetal(t *testing.T) {
	t.Helper()
	if _, err := mslcpu.Compiler(); err != nil {
		t.Skipf("no C++ compiler for the MSL harness: %v", err)
	}
	t.Cleanup(mslcpu.EmulateMetal(context.Background(), mslcpu.Launch{MatrixLanes: mslcpu.ScrambledLanes}))
}

// runMLX runs script with python3 in a temp folder holding the named
// tensors' values as float32 (writeF32: NAME.f32) and returns the arrays
// the script saved (np.ndarray.tofile of float32, OUT.f32), count values
// each, by name.
func runMLX(t *testing.T, script string, in map[string]*kgenrt.Tensor, count int, outs ...string) map[string][]float64 {
	t.Helper()
	dir := t.TempDir()
	for name, tn := range in {
		writeF32(t, dir, name+".f32", tn)
	}
	prelude := "import numpy as np, mlx.core as mx\nload = lambda n, *s: mx.array(np.fromfile(n + '.f32', dtype=np.float32).reshape(s))\n" +
		"save = lambda n, a: np.array(a.astype(mx.float32)).astype(np.float32).tofile(n + '.f32')\n"
	cmd := exec.Command("python3", "-c", prelude+script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("MLX: %v\n%s", err, out)
	}
	got := map[string][]float64{}
	for _, name := range outs {
		got[name] = readF32(t, filepath.Join(dir, name+".f32"), count)
	}
	return got
}

// seeded are count reproducible values in [-amp, amp].
func seeded(count int, seed, amp float64) []float32 {
	out := make([]float32, count)
	for i := range out {
		out[i] = float32(amp * math.Sin(float64(i)*0.7548776662+seed*1.324717957))
	}
	return out
}

// compareMLX reports the elements of got farther from MLX's want than abs
// + rel·|want|, and logs the largest difference.
func compareMLX(t *testing.T, what string, got *kgenrt.Tensor, want []float64, abs, rel float64) {
	t.Helper()
	if got.Len() != len(want) {
		t.Fatalf("%s: %d values, MLX gave %d", what, got.Len(), len(want))
	}
	worst, bad := 0.0, 0
	for i, w := range want {
		g := float64(got.Float32At(i))
		d := math.Abs(g - w)
		worst = max(worst, d)
		if !(d <= abs+rel*math.Abs(w)) {
			if bad++; bad <= 5 {
				t.Errorf("%s[%d] = %g, MLX %g", what, i, g, w)
			}
		}
	}
	t.Logf("%s: %d values, largest |kgen - MLX| %.3g, %d beyond %g + %g·|MLX|", what, len(want), worst, bad, abs, rel)
}
