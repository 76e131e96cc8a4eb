package kgen_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/backward"
	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/emit/cfam"
	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/internal/output"
	"github.com/kgen-dev/kgen/spec"
	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// A user's name becomes a C identifier in the generated MSL and CUDA: the
// kernel name a global function (MSL) and the prefix of globals, value names
// parameters and locals of the kernel's own functions. A name the generated
// code also uses unqualified in those functions (tanhf, min, uint4, count)
// would be shadowed by the user's, and the C compiler, not the spec, would
// report it. The scan below reads every generated C-family source and
// collects each identifier a user could also write that such a function
// looks up; each must be refused by spec.CheckName, or be listed in
// harmlessCNames with the reason it cannot clash.

// harmlessCNames are identifiers the scan finds that no user name can
// break, with why; TestHarmlessCNamesCompile compiles each as every kind
// of value name.
var harmlessCNames = map[string]string{
	"m": "a matmul's size field: a member of the args struct, only ever read as args.m " +
		"(the Go side renames a user's m, a taken local, to m_)",
	"k": "a matmul's size field, read only as args.k (see m)",
	"p": "a matmul chain's size field, read only as args.p (see m)",
	"i": "the elementwise body's loop index: it hides a tensor named i only inside the loop, " +
		"where the body reaches tensors through their <name>_v arrays (checked with nvcc 12 too)",
}

var (
	userNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	// cTokenRE splits C: strings, numbers (pp-numbers: 1e-6f, 0xff800000),
	// identifiers, and the punctuation the scan looks at.
	cTokenRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.])*|[A-Za-z_][A-Za-z0-9_]*|::|->|\[\[|\]\]|[{}();.]`)
	// helperRE finds the name of the function a top-level declaration
	// defines: an identifier, template arguments maybe, then "(".
	helperRE = regexp.MustCompile(`\b([A-Za-z_]\w*)\s*(?:<[^<>();{}]*>)?\s*\(`)
)

// notFunctionNames are identifiers followed by "(" in a declaration that do
// not name the declared function.
var notFunctionNames = map[string]bool{"decltype": true, "__launch_bounds__": true, "alignas": true, "sizeof": true}

// C comments, preprocessor lines and attributes, which the scan drops.
var (
	blockCommentRE = regexp.MustCompile(`(?s)/\*.*?\*/`)
	lineCommentRE  = regexp.MustCompile(`//[^\n]*`)
	preprocessorRE = regexp.MustCompile(`(?m)^\s*#[^\n]*`)
	attributeRE    = regexp.MustCompile(`\[\[.*?\]\]`)
)

// stripC removes comments and preprocessor lines.
func stripC(src string) string {
	src = blockCommentRE.ReplaceAllString(src, " ")
	src = lineCommentRE.ReplaceAllString(src, " ")
	return preprocessorRE.ReplaceAllString(src, " ")
}

// topLevel splits C source into top-level declarations: each ends at a
// ";" or "}" at brace depth 0.
func topLevel(src string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range src {
		switch r {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				out = append(out, src[start:i+1])
				start = i + 1
			}
		case ';':
			if depth == 0 {
				out = append(out, src[start:i+1])
				start = i + 1
			}
		}
	}
	return out
}

// definedName is the function a top-level declaration defines, or "".
func definedName(decl string) string {
	head := decl
	if i := strings.IndexByte(head, '{'); i >= 0 {
		head = head[:i]
	}
	head = attributeRE.ReplaceAllString(head, " ")
	for _, m := range helperRE.FindAllStringSubmatch(head, -1) {
		if !notFunctionNames[m[1]] {
			return m[1]
		}
	}
	return ""
}

// lookedUp returns the identifiers of decl that C name lookup resolves
// unqualified: not members (after . or ->), not qualified (after ::), not
// nested-name qualifiers (before ::, where only types and namespaces are
// found, and no user name is one), not attribute tokens, not strings.
func lookedUp(decl string) []string {
	toks := cTokenRE.FindAllString(decl, -1)
	var out []string
	attr := 0
	for i, t := range toks {
		switch {
		case t == "[[":
			attr++
		case t == "]]":
			attr--
		case attr > 0, !userNameRE.MatchString(t): // strings and numbers too
		case i > 0 && (toks[i-1] == "." || toks[i-1] == "->" || toks[i-1] == "::"):
		case i+1 < len(toks) && toks[i+1] == "::":
		default:
			out = append(out, t)
		}
	}
	return out
}

// userDerived reports whether id is one of the spec's names or made from
// one (x_v, gelu_tanh_eval, q_rows): the user's own identifiers, whose
// clashes with each other are the name registry's business.
func userDerived(id string, names []string) bool {
	for _, n := range names {
		if id == n || strings.HasPrefix(id, n+"_") {
			return true
		}
	}
	return false
}

func specNames(s *spec.Spec) []string {
	names := []string{s.Kernel.Name}
	for _, in := range s.Inputs {
		names = append(names, in.Name.Name)
	}
	for _, p := range s.Params {
		names = append(names, p.Name.Name)
	}
	// An indexable tensor's own dimensions (docs/indexing.md): user names,
	// read only as args.<name>, like a batched matmul's batch sizes.
	for _, in := range s.Inputs {
		names = append(names, in.Dims...)
	}
	for _, o := range s.Outputs {
		names = append(names, o.Dims...)
	}
	if s.Matmul != nil {
		names = append(names, s.Matmul.A.Name.Name)
		for _, b := range s.Matmul.B {
			names = append(names, b.Name.Name, b.Acc.Name)
		}
		if t := s.Matmul.Then; t != nil {
			names = append(names, t.Name.Name, t.Acc.Name)
		}
		// A batched matmul's batch sizes and groups: user names, read
		// only as args.<name>.
		for _, b := range s.Matmul.Batch {
			names = append(names, b.Name)
		}
		for _, o := range append(append([]spec.Operand{s.Matmul.A}, s.Matmul.B...), thenOf(s.Matmul)...) {
			for _, d := range o.Batch {
				if d.Group != "" {
					names = append(names, d.Group)
				}
			}
		}
	}
	// A batched rowwise kernel's batch sizes and its inputs' groups: user
	// names, read only as args.<name> too.
	for _, b := range s.Batch {
		names = append(names, b.Name)
	}
	for _, in := range s.Inputs {
		for _, d := range in.Batch {
			if d.Group != "" {
				names = append(names, d.Group)
			}
		}
	}
	for _, c := range s.Constants {
		names = append(names, c.Name.Name)
	}
	for _, f := range append(append([]spec.Formula{}, s.Let...), s.Outputs...) {
		names = append(names, f.Name.Name)
	}
	for _, g := range s.Segments {
		names = append(names, g.Name)
	}
	return names
}

func thenOf(m *spec.MatmulSpec) []spec.Operand {
	if m.Then == nil {
		return nil
	}
	return []spec.Operand{*m.Then}
}

// cFile is a generated C-family source and the user names of its spec.
type cFile struct {
	path  string
	data  []byte
	names []string
}

// specsOf loads the specs under root/specs for their names, a derived
// backward kernel's (which share its forward's file) included.
func specsOf(t *testing.T, root string) map[string][]string {
	t.Helper()
	var diags diag.List
	names := map[string][]string{}
	for _, s := range backward.Derive(spec.LoadDir(root, "specs", &diags), &diags) {
		names[s.Path] = append(names[s.Path], specNames(s)...)
	}
	if diags.Len() > 0 {
		t.Fatal(diags.Err())
	}
	return names
}

// cSources picks the .metal and .cu files of files and pairs them with
// their spec's names (from the header).
func cSources(t *testing.T, prefix string, files []output.File, names map[string][]string) []cFile {
	t.Helper()
	var out []cFile
	for _, f := range files {
		if !strings.HasSuffix(f.Path, ".metal") && !strings.HasSuffix(f.Path, ".cu") {
			continue
		}
		ns, ok := names[output.Source(f.Data)]
		if !ok {
			t.Fatalf("%s%s: no spec %q", prefix, f.Path, output.Source(f.Data))
		}
		out = append(out, cFile{path: prefix + f.Path, data: f.Data, names: ns})
	}
	return out
}

// diskCFiles reads kgen's own generated sources, gen/msl and gen/cuda.
func diskCFiles(t *testing.T) []cFile {
	t.Helper()
	var files []output.File
	for _, pattern := range []string{"../gen/msl/*.metal", "../gen/cuda/*.cu"} {
		paths, _ := filepath.Glob(pattern)
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, output.File{Path: strings.TrimPrefix(filepath.ToSlash(p), "../"), Data: data})
		}
	}
	if len(files) == 0 {
		t.Fatal("no generated sources in ../gen")
	}
	return cSources(t, "", files, specsOf(t, ".."))
}

// goldenCFiles generates every golden case in memory with a CUDA port and
// in the math mode given, so that every formula function's MSL and CUDA
// spelling, both kinds and every reduction are scanned, not only what
// kgen's own specs use.
func goldenCFiles(t *testing.T, math string) []cFile {
	t.Helper()
	var out []cFile
	cases, _ := filepath.Glob("../testdata/golden/*/kgen.yaml")
	for _, file := range cases {
		cfg, err := config.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		kernels, err := generate.Load(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range kernels {
			_, refused := cfam.CUDA.Refuses[k.Kind] // Metal-only kinds keep no CUDA port
			if mm := k.Matmul(); mm != nil && mm.CUDA == nil {
				refused = true // the IR plans a CUDA matmul only at Build (ir.CUTLASS)
			}
			k.Math, k.Ports[spec.CUDA] = math, !refused
		}
		res, err := generate.Emit(cfg, kernels)
		if err != nil {
			t.Fatal(err)
		}
		prefix := "testdata/golden/" + filepath.Base(cfg.Dir) + " (math " + math + ", with a CUDA port): "
		out = append(out, cSources(t, prefix, res.Files, specsOf(t, cfg.Dir))...)
	}
	return out
}

// scan adds the identifiers of the first kind above to found, each with a
// file it is used in.
func scan(files []cFile, found map[string]string) {
	for _, f := range files {
		for id := range lookups(string(f.data), f.names) {
			if _, seen := found[id]; !seen {
				found[id] = f.path
			}
		}
	}
}

// lookups returns the identifiers that code declaring user names looks up,
// other than the user's own. Helpers (functions named kgen_…) are skipped
// while no user name has been declared: C++ resolves a non-dependent name
// where it is written and a dependent call by ADL, which finds nothing
// global for float and friends, so a helper never sees a later
// declaration. A helper after a user's declaration is scanned like any
// other code.
func lookups(src string, names []string) map[string]bool {
	out := map[string]bool{}
	user := false
	for _, decl := range topLevel(stripC(src)) {
		ids := lookedUp(decl)
		if !user && strings.HasPrefix(definedName(decl), "kgen_") {
			continue
		}
		for _, id := range ids {
			switch {
			case userDerived(id, names):
				user = true
			case !strings.HasPrefix(id, "kgen"):
				out[id] = true
			}
		}
	}
	return out
}

// TestGeneratedCNamesReserved scans kgen's own generated sources (gen/)
// and every golden case with a CUDA port in both math modes: an identifier
// that a user's name could shadow must be one spec refuses.
func TestGeneratedCNamesReserved(t *testing.T) {
	found := map[string]string{}
	scan(diskCFiles(t), found)
	scan(goldenCFiles(t, "precise"), found)
	scan(goldenCFiles(t, "fast"), found)
	// Names the generated code is known to look up in user scope: a scan
	// that misses them is broken, and would pass anything.
	for _, id := range []string{"tanhf", "fmaxf", "uint4", "min", "count", "rows_per_group"} {
		if _, ok := found[id]; !ok {
			t.Errorf("the scan did not find %q", id)
		}
	}
	var ids []string
	for id := range found {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if refused(id) {
			continue
		}
		if _, ok := harmlessCNames[id]; !ok {
			t.Errorf("%s: the generated code looks up %q where user names are declared, but a kernel or value may be named %q: reserve it in spec/cnames.go", found[id], id, id)
		}
	}
}

// refused reports whether no kernel or value may be named id: spec
// refuses it, or it is a formula function (refused as a value name by the
// formula checker) that spec refuses as a kernel name.
func refused(id string) bool {
	if spec.CheckName(id) != "" {
		return true
	}
	_, isFunc := funcs.Lookup(id)
	return isFunc && spec.CheckKernelName(id) != ""
}

// TestHarmlessCNamesCompile generates a kernel with each harmless name as
// an input, output, let, param and constant, elementwise and rowwise, and
// compiles its MSL: the claim of harmlessCNames, checked.
func TestHarmlessCNamesCompile(t *testing.T) {
	if _, err := mslcpu.Compiler(); err != nil {
		t.Skipf("no C++ compiler for MSL: %v", err)
	}
	for name := range harmlessCNames {
		for role, src := range harmlessSpecs(name) {
			_, res, err := generateCase(t, src)
			if err != nil {
				t.Fatalf("%s as %s: %v", name, role, err)
			}
			for _, f := range res.Files {
				if strings.HasSuffix(f.Path, ".metal") {
					if err := mslcpu.CheckSyntax(context.Background(), f.Data); err != nil {
						t.Errorf("%s as %s: %v", name, role, err)
					}
				}
			}
		}
	}
}

// harmlessSpecs are specs using name as each kind of value.
func harmlessSpecs(n string) map[string]string {
	head := "kernel: k\ndtypes: [f32, f16]\n"
	row := "kernel: k\nkind: rowwise\ndtypes: [f32, f16]\n"
	return map[string]string{
		"input":         head + "inputs: [x, " + n + "]\noutputs:\n  - y: x + " + n + "\n",
		"output":        head + "inputs: [x]\noutputs:\n  - " + n + ": x * 2\n",
		"let and param": head + "inputs: [x]\nparams:\n  - {name: sc, type: f32}\nlet:\n  - " + n + ": x * sc\noutputs:\n  - y: " + n + " + 1\n",
		"chain let": "kernel: k\nkind: matmul\ndtypes: [f32, f16]\nmatmul: {a: x, b: w, then: c}\nlet:\n  - " + n + ": acc * 0.5\n" +
			"  - e: exp(" + n + " - row_max(" + n + "))\noutputs:\n  - y: acc2 / row_sum(e)\n",
		"param":          head + "inputs: [x]\nparams:\n  - {name: " + n + ", type: f32}\noutputs:\n  - y: x * " + n + "\n",
		"constant":       head + "inputs: [x]\nconstants:\n  " + n + ": 2\noutputs:\n  - y: x * " + n + "\n",
		"row input":      row + "inputs: [x, {name: " + n + ", shape: row}]\noutputs:\n  - y: x * " + n + " - row_mean(x)\n",
		"rowwise input":  row + "inputs: [x, " + n + "]\noutputs:\n  - y: exp(x - row_max(x)) / row_sum(" + n + ")\n",
		"rowwise let":    row + "inputs: [x]\nlet:\n  - " + n + ": exp(x - row_max(x))\noutputs:\n  - y: " + n + " / row_sum(" + n + ")\n",
		"rowwise param":  row + "inputs: [x]\nparams:\n  - {name: " + n + ", type: f32}\noutputs:\n  - y: x * rsqrt(row_mean(x * x) + " + n + ")\n",
		"rowwise output": row + "inputs: [x]\noutputs:\n  - " + n + ": x - row_mean(x)\n",
	}
}

// writeCase lays out a project of one spec in dir.
// generateCase writes src as specs/k.yaml of a fresh case folder and runs
// generate on it in memory (nothing written to gen/).
func generateCase(t *testing.T, src string) (*config.Config, *generate.Result, error) {
	t.Helper()
	dir := t.TempDir()
	writeCase(t, dir, src)
	cfg, err := config.Load(filepath.Join(dir, "kgen.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := generate.Run(cfg)
	return cfg, res, err
}

func writeCase(t *testing.T, dir, src string) {
	t.Helper()
	for p, data := range map[string]string{"kgen.yaml": "version: 1\nspecs: specs\nout:\n  msl: gen/msl\n  go: gen/kernels\n", "specs/k.yaml": src} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
