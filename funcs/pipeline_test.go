package funcs_test

import (
	"fmt"
	"math"
	"path"
	"strings"
	"testing"
	"text/template"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/spec"
	"github.com/kgen-dev/kgen/templates"
)

// TestEveryRowReachesEveryBackend is what makes a row enough: for each
// function, a one-call elementwise kernel goes through the real pipeline
// (spec, ir, the Metal, CUDA and Go emitters) in both math modes and in a
// float and a half compute type, and each output must call the row's
// spelling and carry its prelude block; the IR's float64 evaluation must be
// the row's and its error bound finite.
func TestEveryRowReachesEveryBackend(t *testing.T) {
	preludes := map[string]*template.Template{"msl": parsePrelude(t, "msl"), "cuda": parsePrelude(t, "cuda")}
	for _, f := range funcs.Table {
		if f.Reduction {
			continue
		}
		for _, math := range []string{"precise", "fast"} {
			for _, dt := range []string{"f32", "f16"} {
				t.Run(f.Name+"/"+math+"/"+dt, func(t *testing.T) {
					k, out := generateOne(t, &f, math, dt)
					checkC(t, out.msl, f.MSL.Mode(math), preludes["msl"])
					checkC(t, out.cuda, f.CUDA.Mode(math), preludes["cuda"])
					checkGo(t, out.goSrc, f.Go)
					checkEval(t, k, &f)
				})
			}
		}
	}
}

type outputs struct{ msl, cuda, goSrc string }

// generateOne builds kernel y = f(a0, a1, …), boolean arguments as a_i > 0.
func generateOne(t *testing.T, f *funcs.Func, math, dt string) (*ir.Kernel, outputs) {
	t.Helper()
	var inputs, args []string
	for i, typ := range f.Args {
		in := fmt.Sprintf("a%d", i)
		inputs = append(inputs, in)
		if typ == funcs.Bool {
			in += " > 0"
		}
		args = append(args, in)
	}
	src := fmt.Sprintf("kernel: fn_%s\ndtypes: [%s]\nmath: %s\ninputs: [%s]\noutputs:\n  - y: %s(%s)\nports:\n  cuda: generated\n",
		f.Name, dt, math, strings.Join(inputs, ", "), f.Name, strings.Join(args, ", "))
	var diags diag.List
	s := spec.Parse("specs/fn.yaml", []byte(src), &diags)
	ks := ir.Build([]*spec.Spec{s}, &diags)
	if diags.Len() > 0 || len(ks) != 1 {
		t.Fatalf("%s:\n%s", src, diags.Err())
	}
	cfg := config.Default()
	res, err := generate.Emit(&cfg, ks)
	if err != nil {
		t.Fatal(err)
	}
	var out outputs
	for _, file := range res.Files {
		switch {
		case path.Ext(file.Path) == ".metal":
			out.msl = string(file.Data)
		case path.Ext(file.Path) == ".cu":
			out.cuda = string(file.Data)
		case path.Ext(file.Path) == ".go":
			out.goSrc += string(file.Data)
		}
	}
	return ks[0], out
}

func parsePrelude(t *testing.T, dir string) *template.Template {
	t.Helper()
	tmpl, err := template.ParseFS(templates.FS, dir+"/prelude.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// checkC: the C-family source calls the spelling and holds its prelude block.
func checkC(t *testing.T, src string, sp funcs.Spelling, prelude *template.Template) {
	t.Helper()
	want := sp.Name + "("
	if sp.Name == funcs.Conditional {
		want = " ? "
	}
	if !strings.Contains(src, want) {
		t.Errorf("no %q in:\n%s", want, src)
	}
	if sp.Prelude == "" {
		return
	}
	var block strings.Builder
	if err := prelude.ExecuteTemplate(&block, sp.Prelude, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(src, strings.TrimSpace(block.String())) {
		t.Errorf("prelude block %s is missing from:\n%s", sp.Prelude, src)
	}
}

// checkGo: the Go package calls the reference functions (by package name:
// math or kgenrt).
func checkGo(t *testing.T, src string, g funcs.GoRef) {
	t.Helper()
	for _, q := range []funcs.Qual{g.Float64, g.Float32} {
		if q == (funcs.Qual{}) {
			continue
		}
		if want := path.Base(q.Path) + "." + q.Name + "("; !strings.Contains(src, want) {
			t.Errorf("the Go package does not call %s", want)
		}
	}
}

// checkEval: the IR evaluates the call by the row, and bounds it.
func checkEval(t *testing.T, k *ir.Kernel, f *funcs.Func) {
	t.Helper()
	in := []float64{0.75, 0.5, 0.25}[:f.Arity()]
	got := k.Eval64(in, nil)
	if want := f.Eval(in); len(got) != 1 || got[0] != want {
		t.Errorf("Eval64(%v) = %v; want %g", in, got, want)
	}
	_, bounds := k.EvalBound(in, nil, ir.Rounding{Unit: 0x1p-24, FuncUlps: 1})
	if len(bounds) != 1 || !(bounds[0] >= 0) || math.IsInf(bounds[0], 0) {
		t.Errorf("EvalBound(%v) = %v; want one finite bound", in, bounds)
	}
}
