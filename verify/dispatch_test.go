package verify_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// dispatchCase is one fixture module of testdata/dispatch: verify's exact
// output is in its want.txt; edits then flip the result (a violation fixed,
// or one introduced into the clean module), and verify must agree.
type dispatchCase struct {
	name     string
	exit     int    // verify's exit code on the fixture as it is
	edits    []edit // the mutation
	wantExit int    // verify's exit code after the mutation
	// wantAfter are substrings of the output after the mutation, each on
	// its own line.
	wantAfter []string
}

var dispatchCases = []dispatchCase{
	{name: "clean", exit: 0,
		edits: []edit{
			{"app/app.go", "err := kernels.Gelu.Run(b, x, y)\n\tif errors.Is", "err := kgenrt.MetalPort(kernels.Gelu.Describe()).Run(nil)\n\tif errors.Is"},
			{"app/app.go", "kernels.Gelu.Available(b) && kernels.Twice.Available(b)", "kernels.Gelu.Available(kgenrt.Metal) && kernels.Twice.Available(kgenrt.CUDA)"},
			{"app/app.go", "if err := k.Run(b, x, y); !errors.Is", "if b == kgenrt.ROCm {\n\t\treturn nil\n\t}\n\tif err := k.Run(b, x, y); !errors.Is"},
			{"app/app.go", `return fmt.Errorf("batch: gelu: %w", err)`, `return fmt.Errorf("batch: gelu: no metal: %v", err)`},
		},
		wantExit: 1,
		wantAfter: []string{
			"app/app.go:15:16: direct-port: calls kgenrt.MetalPort, bypassing the generated port table",
			"app/app.go:15:51: direct-port: calls kgenrt.Port's Run directly, bypassing",
			"app/app.go:33:5: backend-compare: compares the backend with kgenrt.ROCm",
			"app/app.go:45:10: own-refusal: makes its own refusal (\"batch: gelu: no metal: %v\")",
			"app/app.go:53:5: backend-gate: gate enumerates backends (metal, cuda)",
			"; FAILED with 5 findings",
		}},
	{name: "reverted", exit: 1,
		edits:    []edit{{"app/gelu.go", "return kgenrt.MetalPort(k).Run(call)", "_ = call\n\treturn kernels.Gelu.Run(kgenrt.Metal, x, y)"}},
		wantExit: 0, wantAfter: []string{"1 launcher, 0 exempt, parity off; ok"}},
	{name: "direct_port", exit: 1,
		edits: []edit{
			{"app/app.go", "return p.Run(call)", "_, _ = p, call\n\treturn nil"},
			{"app/app.go", "return p.Encode\n", "return nil\n"},
			{"app/app.go", "return p.Enqueue(0, call)", "_, _ = p, call\n\treturn nil"},
			{"app/app.go", "var table = kgenrt.PortTable{\n\tKernel: kernels.Twice.Describe(),\n\tPorts:  [kgenrt.NumBackends]kgenrt.Port{kgenrt.MetalPort(kernels.Twice.Describe())},\n}", "var table = kernels.Twice"},
		},
		wantExit: 0, wantAfter: []string{"0 launchers, 0 exempt, parity off; ok"}},
	{name: "backend_compare", exit: 1,
		edits: []edit{
			{"app/app.go", "if b == kgenrt.CUDA {\n\t\treturn cudaGelu(x, y)\n\t}\n\treturn kernels.Gelu.Run(kgenrt.Metal, x, y)", "return kernels.Gelu.Run(b, x, y)"},
			{"app/app.go", "switch b {\n\tcase kgenrt.Metal:", "switch {\n\tcase kernels.Twice.Available(b):"},
			{"app/app.go", `if b.String() != "metal" {`, "if !kernels.Gelu.Available(b) {"},
		},
		wantExit: 0, wantAfter: []string{"3 launchers, 0 exempt, parity off; ok"}},
	{name: "own_refusal", exit: 1,
		edits: []edit{
			{"app/app.go", "return fmt.Errorf(\"gelu: backend %v unavailable\", b)", "return kernels.Gelu.Reference(x, y)"},
			{"app/app.go", "if _, err := kernels.Twice.Select(b); err != nil {\n\t\treturn &kgenrt.PortError{Kernel: \"twice\", Backend: b}\n\t}\n\t", ""},
			{"app/app.go", "return kgenrt.ErrNoPort", "return kernels.Gelu.Reference(x, y)"},
			{"app/app.go", `errors.New("no metal port for gelu")`, `fmt.Errorf("gelu: %w", err)`},
			{"app/app.go", "\"errors\"\n", ""},
		},
		wantExit: 0, wantAfter: []string{"4 launchers, 0 exempt, parity off; ok"}},
	{name: "backend_gate", exit: 1,
		edits: []edit{
			{"app/app.go", "return metal.Available() || cuda.Available()", "return metal.Available()"},
			{"app/app.go", "kernels.Gelu.Available(kgenrt.Metal) || kernels.Gelu.Available(kgenrt.CUDA)", "kernels.Gelu.Available(kgenrt.Metal)"},
			{"app/app.go", "!(hasMetal() && (isCUDAReady()))", "!hasMetal() && len(Devices()) > 0"},
		},
		wantExit: 0, wantAfter: []string{"0 launchers, 0 exempt, parity off; ok"}},
	{name: "platform_gate", exit: 1,
		edits: []edit{
			{"app/app.go", "if runtime.GOOS == \"darwin\" { // RunArgs launches as Run does\n\t\treturn kernels.Gelu.RunArgs(kgenrt.Metal, kernels.GeluArgs{X: x, Y: y})\n\t}\n\treturn kernels.Gelu.Reference(x, y)",
				"if err := kernels.Gelu.Run(kgenrt.Metal, x, y); !errors.Is(err, kgenrt.ErrNoPort) {\n\t\treturn err\n\t}\n\treturn kernels.Gelu.Reference(x, y)"},
			{"app/app.go", "import (\n", "import (\n\t\"errors\"\n"},
			{"app/twice_apple.go", "//go:build ios", "//go:build fixture"},
			{"app/twice_other.go", "//go:build !ios", "//go:build !fixture"},
			{"app/probe.go", "import (\n\t\"example.com/fixture/gen/kernels\"\n\t\"github.com/kgen-dev/kgen/kgenrt\"\n)", "import \"github.com/kgen-dev/kgen/kgenrt\""},
			{"app/probe.go", "return kernels.Twice.Run(kgenrt.CUDA, x, y)", "_, _ = x, y\n\treturn nil"},
		},
		wantExit: 0, wantAfter: []string{"1 launcher, 0 exempt, parity off; ok"}},
	{name: "ignore", exit: 1,
		edits: []edit{
			{"app/app.go", " //kgen:ignore direct-port benchmarks the raw port", ""},
			{"app/app.go", "\t//kgen:ignore backend-gate there used to be a gate here\n", ""},
			{"app/app.go", " //kgen:ignore backend-gate\n", " //kgen:ignore backend-gate probes for a log line\n"},
			{"app/app.go", "//kgen:ignore backend-gates legacy", "//kgen:ignore backend-gate legacy"},
		},
		wantExit: 1, wantAfter: []string{
			"app/app.go:11:16: direct-port: calls kgenrt.MetalPort",
			"2 launchers, 3 exempt, parity off; FAILED with 2 findings",
		}},
	{name: "exempt", exit: 1,
		edits: []edit{
			{"kgen.yaml", "    - path: app/gone.go\n      reason: deleted last release; this exemption outlived it\n", ""},
			{"kgen.yaml", "      rule: backend-gates\n", "      rule: backend-gate\n"},
			{"app/legacy.go", "func Legacy(call *kgenrt.Call) error {", "func Legacy(call *kgenrt.Call) error {\n\tif metalReady() || cudaReady() {\n\t\treturn nil\n\t}"},
			{"app/legacy.go", "\n// Legacy", "\nfunc metalReady() bool { return false }\n\nfunc cudaReady() bool { return false }\n\n// Legacy"},
		},
		wantExit: 0, wantAfter: []string{"2 launchers, 3 exempt, parity off; ok"}},
	{name: "load", exit: 1,
		edits:    []edit{{"app/app.go", ") int {", ") error {"}},
		wantExit: 0, wantAfter: []string{"1 launcher, 0 exempt, parity off; ok"}},
}

// TestDispatchFixtures runs kgen verify on each fixture module, compares the
// exact output, then mutates the module and checks that the result flips.
func TestDispatchFixtures(t *testing.T) {
	for _, tc := range dispatchCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := project(t, tc.name, false)
			out, code := kgen(dir, "verify")
			if code != tc.exit {
				t.Errorf("exit %d, want %d", code, tc.exit)
			}
			checkOutput(t, tc.name, out)
			applyEdits(t, dir, tc.edits)
			out, code = kgen(dir, "verify")
			if code != tc.wantExit {
				t.Errorf("after the mutation: exit %d, want %d\n%s", code, tc.wantExit, out)
			}
			for _, w := range tc.wantAfter {
				if !hasLine(out, w) {
					t.Errorf("after the mutation, no line has %q:\n%s", w, out)
				}
			}
		})
	}
}

func hasLine(out, sub string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

// TestDispatchNoModule: without a go.mod the rules and the type check of
// the generated package are skipped, visibly.
func TestDispatchNoModule(t *testing.T) {
	dir := project(t, "clean", true)
	out, code := kgen(dir, "verify")
	if code != 0 || !strings.HasSuffix(out, "kgen verify: 2 kernels, 3 variants, port dispatch and generated Go not checked: no go.mod at or above kgen.yaml, parity off; ok\n") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// TestDispatchFormats: the reverted launcher's findings in json (with the
// rule and the counts) and as GitHub annotations (titled with the rule).
func TestDispatchFormats(t *testing.T) {
	dir := project(t, "reverted", false)
	out, code := kgen(dir, "verify", "--format", "json")
	var rep struct {
		OK        bool
		Launchers *int
		Exempt    *int
		Checks    []string
		Findings  []struct {
			Check, Rule, Path, Message string
			Line, Col                  int
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	f := rep.Findings[0]
	if rep.OK || rep.Launchers == nil || *rep.Launchers != 2 || *rep.Exempt != 0 || !contains(rep.Checks, "dispatch") ||
		f.Check != "dispatch" || f.Rule != "direct-port" || f.Path != "app/gelu.go" || f.Line != 26 || f.Col != 16 ||
		!strings.HasPrefix(f.Message, "calls kgenrt.MetalPort, bypassing the generated port table") {
		t.Errorf("json report:\n%s", out)
	}
	out, code = kgen(dir, "verify", "--format", "github")
	want := "::error file=app/gelu.go,line=26,col=16,endLine=26,endColumn=25,title=kgen dispatch/direct-port::calls kgenrt.MetalPort, bypassing the generated port table: "
	if code != 1 || !strings.HasPrefix(out, want) || !strings.HasSuffix(out, "; FAILED with 2 findings\n") {
		t.Errorf("exit %d, github annotations:\n%s", code, out)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
