package golang_test

import (
	"bytes"
	"go/ast"
	"go/format"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/emit/golang"
	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/generate"
)

// generated runs the whole pipeline on a config and returns the Go
// package's files by name.
func generated(t *testing.T, configPath string) (*generate.Result, map[string][]byte) {
	t.Helper()
	cfg, err := config.Load(configPath)
	if err != nil {
		t.Fatal(err)
	}
	res, err := generate.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range res.Files {
		if path.Dir(f.Path) == cfg.OutGo {
			files[path.Base(f.Path)] = f.Data
		}
	}
	return res, files
}

// writeProject writes a kgen.yaml and specs into a temporary folder.
func writeProject(t *testing.T, specs map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"kgen.yaml": "version: 1\nspecs: specs\nout:\n  msl: gen/msl\n  go: gen/kernels\n"}
	for name, s := range specs {
		files["specs/"+name+".yaml"] = s
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "kgen.yaml")
}

var headerRE = regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)

// typeCheck parses and type-checks the generated Go files as one package
// (kgenrt comes from this module's source), and checks each is gofmt-clean
// and starts with the generated-code header.
func typeCheck(t *testing.T, files map[string][]byte) *types.Package {
	pkg, _, _ := typeCheckInfo(t, files)
	return pkg
}

// typeCheckInfo is typeCheck returning the syntax and type information too.
func typeCheckInfo(t *testing.T, files map[string][]byte) (*types.Package, *types.Info, []*ast.File) {
	t.Helper()
	wd, _ := os.Getwd()
	fset := token.NewFileSet()
	var asts []*ast.File
	for name, data := range files {
		if !strings.HasSuffix(name, ".go") {
			continue
		}
		first, _, _ := bytes.Cut(data, []byte("\n"))
		if !headerRE.Match(first) {
			t.Errorf("%s: first line %q is not the generated-code header", name, first)
		}
		if formatted, err := format.Source(data); err != nil || !bytes.Equal(formatted, data) {
			t.Errorf("%s is not gofmt-clean (%v)", name, err)
		}
		f, err := parser.ParseFile(fset, filepath.Join(wd, name), data, parser.ParseComments)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !ast.IsGenerated(f) {
			t.Errorf("%s: go/ast does not see it as generated", name)
		}
		asts = append(asts, f)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{},
		Defs: map[*ast.Ident]types.Object{}}
	pkg, err := conf.Check("example.com/gen/kernels", fset, asts, info)
	if err != nil {
		t.Fatalf("generated package does not type-check: %v", err)
	}
	return pkg, info, asts
}

func TestRepoSpecsGenerateACompilingPackage(t *testing.T) {
	res, files := generated(t, "../../kgen.yaml")
	pkg := typeCheck(t, files)
	if _, ok := files["inventory.md"]; !ok {
		t.Error("no inventory.md")
	}
	for _, k := range res.Kernels {
		for _, suffix := range []string{"_kernel.go", "_reference.go", "_msl.go"} {
			if _, ok := files[k.Name+suffix]; !ok {
				t.Errorf("kernel %s: no %s%s", k.Name, k.Name, suffix)
			}
		}
		name := golang.GoName(k.Name)
		typ := pkg.Scope().Lookup(name + "Kernel")
		if typ == nil {
			t.Fatalf("no type %sKernel", name)
		}
		mset := types.NewMethodSet(typ.Type())
		for _, m := range []string{"Run", "Encode", "Enqueue", "Reference", "Reference64", "Select", "Available", "Variant", "Describe"} {
			if mset.Lookup(pkg, m) == nil {
				t.Errorf("%sKernel has no method %s", name, m)
			}
		}
		src := string(files[k.Name+"_kernel.go"])
		for _, s := range k.Steps {
			if !strings.Contains(src, s.Name+" = "+s.Source) {
				t.Errorf("%s_kernel.go does not echo formula %s = %s", k.Name, s.Name, s.Source)
			}
		}
		if !strings.Contains(src, "generated from "+k.SpecPath) {
			t.Errorf("%s_kernel.go does not name its spec", k.Name)
		}
	}
}

// Specs that poke at the Go emitter's corners: every function, Go-sensitive
// names, constant-only operands, integer params, compute types narrower and
// wider than the storage, a pinned input, backquotes in the doc, and a
// kernel name ending in a GOOS.
var cornerSpecs = map[string]string{
	"every_func": `kernel: every_func
doc: "uses ` + "`every`" + ` function"
dtypes: [f32, bf16]
compute: f32
inputs: [x, math]
params: [{name: k, type: i32}, {name: binary, type: u32}]
let:
  - lit0: x * (1 / 2) + 1 / 0
  - a: abs(x) + exp(x) + exp2(x) + log(x) + log2(x) + log1p(x) + expm1(x) + sqrt(x) + rsqrt(x)
  - b: tanh(x) + sigmoid(x) + erf(x) + sin(x) + cos(x) + floor(x) + ceil(x) + pow(x, math)
  - c: min(x, math) + max(x, f32(k)) + clamp(x, 0, f32(binary)) + fma(x, math, 1) + select(x > 0 && !(x < 1) || x == 2, x, -x)
outputs:
  - y: lit0 + a + b + c + pi
  - err: -(x * math) + 2 * 3 + select(x > 1, 1, 0) + max(2, 3)
`,
	"half_compute": `kernel: half_compute
dtypes: [f32, bf16]
compute: f16
inputs: [x, {name: g, dtype: f32}]
params: [{name: s, type: f32}]
constants: {c: 0.1}
outputs:
  - y: x * g + s * c - tanh(x)
`,
	"act_linux": `kernel: act_linux
dtypes: [f16, bf16]
inputs: [x]
outputs:
  - y: max(x, 0) * 2
ports: {metal: null}
`,
}

func TestCornerSpecsCompile(t *testing.T) {
	_, files := generated(t, writeProject(t, cornerSpecs))
	typeCheck(t, files)
	for name := range files {
		if strings.HasSuffix(name, "_test.go") || strings.HasSuffix(name, "_linux.go") {
			t.Errorf("file %s would be a test or build-constrained file", name)
		}
	}
	ref := string(files["half_compute_reference.go"])
	for _, want := range []string{
		"kgenrt.RoundF16(x.Float32At(i))",                 // f32/bf16 storage converted to f16 on load
		"kgenrt.RoundF16(g.Float32At(i))",                 // the pinned f32 input too
		"kgenrt.RoundF16(s)",                              // and the param
		"c := float32(0.099975586)",                       // the constant rounded to f16
		"kgenrt.RoundF16(float32(math.Tanh(float64(x))))", // functions: float64 → float32 → f16
	} {
		if !strings.Contains(ref, want) {
			t.Errorf("half_compute_reference.go lacks %q", want)
		}
	}
	every := string(files["every_func_reference.go"])
	for _, want := range []string{"lit0_ :=", "lit0 := float32(1)", "err_ =", "k, binary_ int32", "float32(k)"} {
		if !strings.Contains(every, want) {
			t.Errorf("every_func_reference.go lacks %q", want)
		}
	}
	if !strings.Contains(string(files["act_linux_kernel.go"]), "nil, // metal: null") {
		t.Error("metal: null should leave the Metal slot nil")
	}
	if !strings.Contains(string(files["every_func_msl.go"]), "+ \"`\" +") {
		t.Error("a backquote in the MSL should split the raw string")
	}
}

func TestGoNameClashesAreErrors(t *testing.T) {
	cfg, err := config.Load(writeProject(t, map[string]string{
		"a": "kernel: conv2d\ndtypes: [f32]\ninputs: [x]\noutputs:\n  - y: x\n",
		"b": "kernel: conv_2d\ndtypes: [f32]\ninputs: [x]\noutputs:\n  - y: x\n",
		"c": "kernel: kernels\ndtypes: [f32]\ninputs: [x]\noutputs:\n  - y: x\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = generate.Run(cfg)
	if err == nil {
		t.Fatal("clashing Go names were accepted")
	}
	// One positioned line per clashing pair, at the later kernel's name.
	want := "specs/b.yaml:1:9: kernel \"conv_2d\" and kernel \"conv2d\" (specs/a.yaml:1:9) both become Go name Conv2d; rename one of them\n" +
		"specs/c.yaml:1:9: kernel \"kernels\" would declare the Go name Kernels, which the package's Kernels function has; rename the kernel"
	if err.Error() != want {
		t.Errorf("error:\n%s\nwant:\n%s", err, want)
	}
	if _, ok := diag.AsError(err); !ok {
		t.Errorf("the clashes are not diagnostics: %T", err)
	}
}

// Every elementwise function of the formula language has a CPU evaluation.
func TestEveryFunctionHasACPUEvaluation(t *testing.T) {
	for _, f := range funcs.Table {
		if !f.Reduction && !golang.SupportedFunc(f.Name) {
			t.Errorf("function %s has no Go evaluation", f.Name)
		}
	}
}
