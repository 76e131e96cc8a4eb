package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ropeDemo runs the downstream's own QK-norm + RoPE kernel (Metal where
// Select allows, else the CPU reference) and checks it against the same
// math written here in float64: an RMSNorm per head, then the split-half
// rotation of the normalized row.
const ropeDemo = `package main

import (
	"errors"
	"fmt"
	"math"
	"os"

	"example.com/rope/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

const rows, cols, theta = 6, 16, 10000

func want(x, w []float64, pos []int32) []float64 {
	y := make([]float64, len(x))
	h := cols / 2
	for r := 0; r < rows; r++ {
		row := x[r*cols : (r+1)*cols]
		ss := 0.0
		for _, v := range row {
			ss += v * v
		}
		inv := 1 / math.Sqrt(ss/cols+1e-6)
		for c := range row {
			a := float64(pos[r]) * math.Pow(theta, -2*float64(c%h)/cols)
			p, sign := (c+h)%cols, 1.0
			if c < h {
				sign = -1
			}
			y[r*cols+c] = row[c]*inv*w[c]*math.Cos(a) + sign*row[p]*inv*w[p]*math.Sin(a)
		}
	}
	return y
}

func main() {
	xs, ws := make([]float32, rows*cols), make([]float32, cols)
	for i := range xs {
		xs[i] = float32(math.Sin(float64(i)*1.7)) * 3
	}
	for i := range ws {
		ws[i] = 0.5 + float32(i)/cols
	}
	positions := []int32{0, 1, 2, 7, 31, 63}
	failed := false
	for _, c := range []struct {
		dt  kgenrt.DType
		tol float64
	}{{kgenrt.F32, 2e-5}, {kgenrt.BF16, 0.05}} {
		x, _ := kgenrt.FromFloat32(c.dt, xs, rows, cols)
		w, _ := kgenrt.FromFloat32(c.dt, ws, cols)
		pos, _ := kgenrt.New(kgenrt.I32, rows)
		for r, p := range positions {
			pos.SetInt32(r, p)
		}
		y, _ := kgenrt.New(c.dt, rows, cols)
		path := "metal"
		err := kernels.QkRope.Run(kgenrt.Metal, x, w, pos, y, theta)
		if errors.Is(err, kgenrt.ErrNoPort) {
			path, err = "cpu reference", kernels.QkRope.Reference(x, w, pos, y, theta)
		}
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		ref, worst := want(x.Float64s(), w.Float64s(), positions), 0.0
		for i, v := range ref {
			worst = math.Max(worst, math.Abs(float64(y.Float32At(i))-v)/(1+math.Abs(v)))
		}
		fmt.Printf("qk_rope %v via %s: worst error %.3g\n", c.dt, path, worst)
		failed = failed || !(worst <= c.tol)
	}
	if failed {
		os.Exit(1)
	}
	fmt.Println("rope ok")
}
`

// readmeRope is the README's rotary-embedding example (the yaml block
// after "Rotary embeddings"), the text a new user starts from.
func readmeRope(t *testing.T) string {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)Rotary embeddings.*?```yaml\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no yaml block after \"Rotary embeddings\"")
	}
	return string(m[1])
}

// TestDownstreamRopeNorm: a module outside kgen writes its own QK-norm +
// RoPE spec from the README alone — the README's RoPE example, with the
// norm added as the README's next paragraph says (the partner normalized
// with its own weight: pair_half(x) * inv * pair_half(w)) — generates it
// through go generate, builds and vets it, and runs it against RoPE
// written by hand in float64.
func TestDownstreamRopeNorm(t *testing.T) {
	goTool(t)
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	spec := readmeRope(t)
	for _, e := range [][2]string{
		{"inputs: [x, ", "inputs: [x, {name: w, shape: [cols]}, "},
		{"let:\n", "let:\n  - inv: rsqrt(row_mean(x * x) + 1e-6)\n"},
		{"y: x * cos(angle)", "y: x * inv * w * cos(angle)"},
		{"pair_half(x) * sin(angle)", "pair_half(x) * inv * pair_half(w) * sin(angle)"},
	} {
		if !strings.Contains(spec, e[0]) {
			t.Fatalf("the README's RoPE example no longer has %q:\n%s", e[0], spec)
		}
		spec = strings.Replace(spec, e[0], e[1], 1)
	}
	spec = "kernel: qk_rope\nkind: rowwise\ndtypes: [f32, bf16]\ncompute: f32\n" + spec +
		"ports:\n  metal: generated\n  cuda: generated\n  rocm: null\n"
	sum, err := os.ReadFile("../go.sum")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"go.mod": "module example.com/rope\n\ngo 1.24\n\nrequire github.com/kgen-dev/kgen v0.0.0\n\n" +
			"replace github.com/kgen-dev/kgen => " + repo + "\n\ntool github.com/kgen-dev/kgen/cmd/kgen\n",
		"go.sum":             string(sum),
		"kgen.yaml":          "version: 1\nspecs: specs\nout:\n  msl: gen/msl\n  cuda: gen/cuda\n  go: gen/kernels\n",
		"specs/qk_rope.yaml": spec,
		"generate.go":        "package rope\n\n//go:generate go tool kgen gen\n",
	})
	mustGo(t, dir, nil, "build", "-mod=mod", "-o", os.DevNull, "github.com/kgen-dev/kgen/cmd/kgen")
	if out := mustGo(t, dir, nil, "generate", "./..."); !strings.Contains(out, "kgen gen: 1 kernel(s)") {
		t.Fatalf("go generate printed %q\nspec:\n%s", out, spec)
	}
	writeFiles(t, dir, map[string]string{"cmd/demo/main.go": ropeDemo})
	mustGo(t, dir, nil, "vet", "./...")
	out := mustGo(t, dir, nil, "run", "./cmd/demo")
	if !strings.Contains(out, "rope ok") {
		t.Fatalf("demo output:\n%s", out)
	}
	t.Logf("spec:\n%s\ndemo:\n%s", spec, out)
	if out := mustGo(t, dir, nil, "tool", "kgen", "verify", "--format", "json"); !strings.Contains(out, `"ok": true`) {
		t.Fatalf("kgen verify in the downstream module: %s", out)
	}
}
