package parity_test

import (
	"bytes"
	"context"
	"path"
	"path/filepath"
	"testing"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/emit/golang"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/verify/parity"
)

// goReferenceFor generates a golden project in memory and returns its
// kernels, their MSL sources and a GoReference that builds the generated
// package inside this module (only through the overlay: nothing is
// written into the checkout).
func goReferenceFor(t *testing.T, name string) (*generate.Result, map[string][]byte, parity.GoReference) {
	t.Helper()
	cfg, err := config.Load(filepath.Join(repoRoot(), "testdata", "golden", name, "kgen.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := generate.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs(repoRoot())
	g := parity.GoReference{ModuleDir: root, PkgDir: filepath.Join(root, "internal", "kgen_difftest_"+name),
		ImportPath: "github.com/kgen-dev/kgen/internal/kgen_difftest_" + name,
		Files:      map[string][]byte{}, GoNames: map[string]string{}}
	src := map[string][]byte{}
	for _, f := range res.Files {
		if path.Dir(f.Path) == cfg.OutGo {
			g.Files[path.Base(f.Path)] = f.Data
		}
	}
	for _, k := range res.Kernels {
		g.GoNames[k.Name] = golang.GoName(k.Name)
		src[k.Name] = sourceOf(res, cfg, k.Name)
	}
	return res, src, g
}

func sourceOf(res *generate.Result, cfg *config.Config, name string) []byte {
	for _, k := range res.Kernels {
		if k.Name == name {
			for _, f := range res.Files {
				if f.Path == generate.MSLPath(cfg, k) {
					return f.Data
				}
			}
		}
	}
	return nil
}

// differ runs parity on every kernel with samples, the Go reference on the
// samples, and returns the lanes compared and those that differ.
func differ(t *testing.T, res *generate.Result, src map[string][]byte, g parity.GoReference) (checked, bad int, first string) {
	t.Helper()
	var samples []*parity.Sample
	for _, k := range res.Kernels {
		opts := parity.Options{Seed: 1, Sizes: []int{1, 9, 1000}, Sample: func(s *parity.Sample) { samples = append(samples, s) }}
		if _, err := parity.Check(context.Background(), k, src[k.Name], opts); err != nil {
			t.Fatal(err)
		}
	}
	outs, err := g.Run(context.Background(), res.Kernels, samples)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range samples {
		n, b, d := parity.Differ(s, outs[i])
		checked, bad = checked+n, bad+b
		if first == "" && len(d) > 0 {
			first = d[0]
		}
	}
	return checked, bad, first
}

// TestDifferentialNegativeZero is issue 12's first example: 1/(x * -0), a
// constant -0 and select(c, -0, 0), in f32, f16 and bf16 compute. The
// generated Go reference must give the MSL's bits; with Go's constant -0
// (which is +0) put back, the check must fail.
func TestDifferentialNegativeZero(t *testing.T) {
	needCompiler(t)
	res, src, g := goReferenceFor(t, "negative_zero")
	checked, bad, first := differ(t, res, src, g)
	if checked == 0 || bad != 0 {
		t.Fatalf("%d of %d lanes differ; first: %s", bad, checked, first)
	}
	mutated := 0
	for name, data := range g.Files {
		for _, neg := range []string{"x * float32(math.Copysign(0, -1))", "x*float32(math.Copysign(0, -1))"} {
			mutated += bytes.Count(data, []byte(neg))
			data = bytes.ReplaceAll(data, []byte(neg), []byte("x * -0"))
		}
		g.Files[name] = data
	}
	if mutated == 0 {
		t.Fatal("the mutation found no -0 to undo")
	}
	if _, bad, _ := differ(t, res, src, g); bad == 0 {
		t.Fatal("the differential check passed a Go reference that computes 1/(x * -0) as +Inf")
	}
}

// TestDifferentialGoldens holds the generated Go reference to the MSL on
// the golden projects: bit for bit where no library function is called,
// within the stated bound otherwise.
func TestDifferentialGoldens(t *testing.T) {
	needCompiler(t)
	for _, name := range []string{"all_functions", "precedence", "constants", "logic", "pinned_input", "rowwise", "math_fast"} {
		t.Run(name, func(t *testing.T) {
			res, src, g := goReferenceFor(t, name)
			if checked, bad, first := differ(t, res, src, g); checked == 0 || bad != 0 {
				t.Fatalf("%d of %d lanes differ; first: %s", bad, checked, first)
			}
		})
	}
}
