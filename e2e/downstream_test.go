package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// demo is the downstream program: it runs GELU kernels the way an
// application would (Metal where Select allows, else the CPU reference) and
// checks the numbers against GELU written by hand in float64. gelu_typo has
// a slipped digit in its coefficient (0.04715) and must be rejected by the
// same check wherever the tolerance can see it (f32, f16).
const demo = `package main

import (
	"errors"
	"fmt"
	"math"
	"os"

	"example.com/downstream/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

func gelu(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

type kernel interface {
	Run(b kgenrt.Backend, x, y *kgenrt.Tensor) error
	Reference(x, y *kgenrt.Tensor) error
}

// compute runs k on Metal, or on the CPU when Select refuses.
func compute(k kernel, x, y *kgenrt.Tensor) (string, error) {
	err := k.Run(kgenrt.Metal, x, y)
	if errors.Is(err, kgenrt.ErrNoPort) {
		return "cpu reference", k.Reference(x, y)
	}
	return "metal", err
}

// matches reports whether k computes GELU within tolerance in dtype dt.
func matches(k kernel, dt kgenrt.DType, abs, rel float64) (string, bool) {
	var xs []float32
	for x := -6.0; x <= 6; x += 0.25 {
		xs = append(xs, float32(x))
	}
	x, err := kgenrt.FromFloat32(dt, xs)
	if err != nil {
		panic(err)
	}
	y, _ := kgenrt.New(dt, len(xs))
	path, err := compute(k, x, y)
	if err != nil {
		panic(err)
	}
	for i, v := range x.Float64s() {
		want, got := gelu(v), float64(y.Float32At(i))
		if math.Abs(got-want) > abs+rel*math.Abs(want) {
			return path, false
		}
	}
	return path, true
}

func main() {
	failed := false
	for _, c := range []struct {
		dt       kgenrt.DType
		abs, rel float64
	}{{kgenrt.F32, 1e-6, 1e-5}, {kgenrt.F16, 1e-3, 1e-3}, {kgenrt.BF16, 1e-2, 1e-2}} {
		path, ok := matches(kernels.GeluTanh, c.dt, c.abs, c.rel)
		fmt.Printf("gelu_tanh %v via %s: matches GELU %v\n", c.dt, path, ok)
		_, typo := matches(kernels.GeluTypo, c.dt, c.abs, c.rel)
		fmt.Printf("gelu_typo %v: matches GELU %v\n", c.dt, typo)
		// bf16's tolerance is too coarse to see the slipped digit.
		failed = failed || !ok || typo && c.dt != kgenrt.BF16
	}
	// The spec's backward: true gives GeluTanhBackward from the same spec:
	// dx = dy · GELU'(x), checked against central differences of GELU.
	var xs []float32
	for x := -3.0; x <= 3; x += 0.25 {
		xs = append(xs, float32(x))
	}
	x, _ := kgenrt.FromFloat32(kgenrt.F32, xs)
	dy, _ := kgenrt.FromFloat32(kgenrt.F32, make([]float32, len(xs)))
	for i := range xs {
		dy.SetFloat32(i, 2)
	}
	dx, _ := kgenrt.New(kgenrt.F32, len(xs))
	if err := kernels.GeluTanhBackward.Run(kgenrt.Metal, x, dy, dx); errors.Is(err, kgenrt.ErrNoPort) {
		err = kernels.GeluTanhBackward.Reference(x, dy, dx)
	} else if err != nil {
		panic(err)
	}
	for i, v := range x.Float64s() {
		want := 2 * (gelu(v+1e-6) - gelu(v-1e-6)) / 2e-6
		if got := float64(dx.Float32At(i)); math.Abs(got-want) > 1e-5+1e-5*math.Abs(want) {
			fmt.Printf("gelu_tanh_backward at %g: %g, want %g\n", v, got, want)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
	fmt.Println("gelu_tanh_backward: matches GELU's derivative")
	fmt.Println("downstream ok")
}
`

// A module outside kgen generates its kernels with `go tool kgen gen` from a
// //go:generate line, builds, vets, cross-checks for darwin, and runs a
// program that computes through the generated API and checks its numbers.
func TestDownstreamModule(t *testing.T) {
	goTool(t)
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := os.ReadFile("../specs/gelu_tanh.yaml")
	if err != nil {
		t.Fatal(err)
	}
	typo := strings.Replace(strings.Replace(string(spec), "kernel: gelu_tanh", "kernel: gelu_typo", 1), "0.044715", "0.04715", 1)
	sum, err := os.ReadFile("../go.sum")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"go.mod": "module example.com/downstream\n\ngo 1.24\n\nrequire github.com/kgen-dev/kgen v0.0.0\n\n" +
			"replace github.com/kgen-dev/kgen => " + repo + "\n\ntool github.com/kgen-dev/kgen/cmd/kgen\n",
		"go.sum":               string(sum),
		"kgen.yaml":            "version: 1\nspecs: specs\nout:\n  msl: gen/msl\n  go: gen/kernels\n",
		"specs/gelu_tanh.yaml": string(spec),
		"specs/gelu_typo.yaml": typo,
		"generate.go":          "package downstream\n\n//go:generate go tool kgen gen\n",
	})
	// What `go get -tool` does: record the tool's requirements in go.mod.
	mustGo(t, dir, nil, "build", "-mod=mod", "-o", os.DevNull, "github.com/kgen-dev/kgen/cmd/kgen")
	// gen type-checks the package against the module's kgenrt before
	// writing it; a note would say it could not.
	if out := mustGo(t, dir, nil, "generate", "./..."); !strings.Contains(out, "kgen gen: 4 kernel(s)") || strings.Contains(out, "not type-checked") {
		t.Fatalf("go generate printed %q", out)
	}
	writeFiles(t, dir, map[string]string{"cmd/demo/main.go": demo})
	mustGo(t, dir, nil, "build", "./...")
	mustGo(t, dir, nil, "vet", "./...")
	out := mustGo(t, dir, nil, "run", "./cmd/demo")
	if !strings.Contains(out, "downstream ok") || !strings.Contains(out, "gelu_typo f32: matches GELU false") ||
		!strings.Contains(out, "gelu_tanh_backward: matches GELU's derivative") {
		t.Fatalf("demo output:\n%s", out)
	}
	t.Logf("demo:\n%s", out)
	darwin := []string{"GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=0"}
	mustGo(t, dir, darwin, "vet", "./...")
	mustGo(t, dir, darwin, "build", "./...")
	// verify type-checks the generated package in the downstream module too.
	if out := mustGo(t, dir, nil, "tool", "kgen", "verify", "--format", "json"); !strings.Contains(out, `"ok": true`) || !strings.Contains(out, `"gotypes"`) {
		t.Fatalf("kgen verify in the downstream module: %s", out)
	}
	namedArgs(t, dir)
	specEdits(t, dir, string(spec))
}

// namedArgs: the args struct takes tensors only by name — a positional
// literal (where two tensors of one dtype could be swapped) does not
// compile, a keyed one runs through RunArgs and ReferenceArgs.
func namedArgs(t *testing.T, dir string) {
	const prog = `package main

import (
	"errors"
	"fmt"

	"example.com/downstream/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

func main() {
	x, _ := kgenrt.FromFloat32(kgenrt.F32, []float32{1, 2})
	y, _ := kgenrt.New(kgenrt.F32, 2)
	err := kernels.GeluTanh.RunArgs(kgenrt.Metal, ARGS)
	if errors.Is(err, kgenrt.ErrNoPort) {
		err = kernels.GeluTanh.ReferenceArgs(ARGS)
	}
	fmt.Println(err, y.Float32At(1))
}
`
	writeFiles(t, dir, map[string]string{"cmd/named/main.go": strings.ReplaceAll(prog, "ARGS", "kernels.GeluTanhArgs{Y: y, X: x}")})
	if out := mustGo(t, dir, nil, "run", "./cmd/named"); !strings.HasPrefix(out, "<nil> 1.95") {
		t.Errorf("named arguments: %s", out)
	}
	for _, lit := range []string{"kernels.GeluTanhArgs{y, x}", "kernels.GeluTanhArgs{y, x, struct{}{}}"} {
		writeFiles(t, dir, map[string]string{"cmd/named/main.go": strings.ReplaceAll(prog, "ARGS", lit)})
		if out, err := goRun(t, dir, nil, "build", "./cmd/named"); err == nil {
			t.Errorf("%s compiles:\n%s", lit, out)
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, "cmd/named")); err != nil {
		t.Fatal(err)
	}
}

// specEdits adds, renames and deletes specs in the downstream module, each
// followed by the README's `go generate ./...`: go generate lists every
// package's files before it runs kgen, so a generated file that kgen removes
// must not be one go generate will read afterwards.
func specEdits(t *testing.T, dir, spec string) {
	if err := os.RemoveAll(filepath.Join(dir, "cmd")); err != nil { // the demo names GeluTypo
		t.Fatal(err)
	}
	rename := func(from, to string) {
		if err := os.Rename(filepath.Join(dir, from), filepath.Join(dir, to)); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name string
		edit func()
		want []string // generated Go files, which must (not, with "!") exist
	}{
		{"add", func() {
			writeFiles(t, dir, map[string]string{"specs/gelu_more.yaml": strings.Replace(spec, "kernel: gelu_tanh", "kernel: gelu_more", 1)})
		}, []string{"gelu_more_kernel.go"}},
		{"rename", func() {
			rename("specs/gelu_typo.yaml", "specs/gelu_slip.yaml")
			data, err := os.ReadFile(filepath.Join(dir, "specs/gelu_slip.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			writeFiles(t, dir, map[string]string{"specs/gelu_slip.yaml": strings.Replace(string(data), "kernel: gelu_typo", "kernel: gelu_slip", 1)})
		}, []string{"gelu_slip_kernel.go", "!gelu_typo_kernel.go"}},
		{"delete", func() {
			if err := os.Remove(filepath.Join(dir, "specs/gelu_more.yaml")); err != nil {
				t.Fatal(err)
			}
		}, []string{"!gelu_more_kernel.go", "gelu_tanh_kernel.go"}},
	}
	for _, s := range steps {
		s.edit()
		if out, err := goRun(t, dir, nil, "generate", "./..."); err != nil {
			t.Fatalf("%s a spec, then go generate ./...: %v\n%s", s.name, err, out)
		}
		for _, f := range s.want {
			_, err := os.Stat(filepath.Join(dir, "gen/kernels", strings.TrimPrefix(f, "!")))
			if exists := err == nil; exists != !strings.HasPrefix(f, "!") {
				t.Errorf("after %s: gen/kernels/%s exists: %v", s.name, strings.TrimPrefix(f, "!"), exists)
			}
		}
		mustGo(t, dir, nil, "build", "./...")
		if out, err := goRun(t, dir, nil, "tool", "kgen", "verify", "--parity", "off"); err != nil {
			t.Fatalf("after %s: kgen verify: %v\n%s", s.name, err, out)
		}
	}
}
