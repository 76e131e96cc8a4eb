package cost

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
)

var update = flag.Bool("update", false, "rewrite testdata/builtins.json with the measured counts")

const recordPath = "testdata/builtins.json"

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// builtins generates kgen's own kernels in memory.
func builtins(t *testing.T) ([]*ir.Kernel, map[string][]byte) {
	t.Helper()
	cfg, err := config.Load(filepath.Join(repoRoot(), "kgen.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := generate.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	src := map[string][]byte{}
	for _, f := range res.Files {
		for _, k := range res.Kernels {
			if f.Path == generate.MSLPath(cfg, k) {
				src[k.Name] = f.Data
			}
		}
	}
	return res.Kernels, src
}

func needCompiler(t *testing.T) {
	t.Helper()
	if _, err := mslcpu.Compiler(); err != nil {
		t.Skipf("no C++ compiler for the MSL harness: %v", err)
	}
}

// TestCostGate measures every built-in kernel × dtype at its cost shape (and
// every chain in its row-vector form too, MeasureGate) and
// fails when any count rose over testdata/builtins.json by more than
// Margin, naming the kernel, the count and both numbers. -update rewrites
// the record (commit it with the change that moved the counts).
func TestCostGate(t *testing.T) {
	needCompiler(t)
	kernels, src := builtins(t)
	reports, err := MeasureGate(context.Background(), kernels, src)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		if r.Failed > 0 {
			t.Errorf("%s: parity failed at the cost shape %s (%d lanes): its counts mean nothing", r.HostName, r.Shape, r.Failed)
		}
	}
	if *update {
		b, err := NewRecord(reports).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(recordPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: %d kernel × dtype records", recordPath, len(reports))
		return
	}
	rec, err := LoadRecord(recordPath)
	if err != nil {
		t.Fatalf("%v (create it with: go test ./verify/cost -run TestCostGate -update)", err)
	}
	regressions, improvements := Compare(rec, reports)
	for _, r := range regressions {
		t.Error(r)
	}
	if len(improvements) > 0 {
		t.Logf("%d counts fell below the record (lock them in with -update), e.g. %s", len(improvements), improvements[0])
	}
}
