package lsp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/spec"
)

// geluSpec is a rowwise spec with one typo (tahn) on line 15, column 23.
const geluSpec = `kernel: gelu
doc: GELU, tanh approximation.
kind: rowwise
dtypes: [f32, f16]
compute: f32
inputs: [x, {name: w, shape: [cols]}]
params:
  - {name: eps, type: f32}
constants:
  k0: 0.7978845608028654
let:
  - inner: k0 * (x + 0.044715 * x * x * x)
  - ms: row_mean(x * x)
outputs:
  - y: 0.5 * x * (1 + tahn(inner)) * w * rsqrt(ms + eps)
`

var geluFixed = strings.Replace(geluSpec, "tahn", "tanh", 1)

func openSpec(tc *testClient, file, text string) string {
	uri := fileURI(file)
	tc.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": "yaml", "version": 1, "text": text}})
	return uri
}

func changeSpec(tc *testClient, uri string, version int, text string) {
	tc.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": version},
		"contentChanges": []map[string]any{{"text": text}}})
}

func rng(l1, c1, l2, c2 int) Range {
	return Range{Start: Position{Line: l1, Character: c1}, End: Position{Line: l2, Character: c2}}
}

// TestDiagnosticsAsYouType: gen's positioned errors from the unsaved
// buffer, ranged over the offending token, cleared once fixed.
func TestDiagnosticsAsYouType(t *testing.T) {
	dir := project(t, map[string]string{"gelu.yaml": geluFixed})
	tc := startClient(t)
	uri := openSpec(tc, filepath.Join(dir, "specs", "gelu.yaml"), geluSpec)
	ds := tc.diagnostics(uri)
	if len(ds) != 1 {
		t.Fatalf("got %d diagnostics, want 1: %+v", len(ds), ds)
	}
	if want := `unknown function "tahn" (did you mean "tanh"?)`; ds[0].Message != want {
		t.Errorf("message %q, want %q", ds[0].Message, want)
	}
	if want := rng(14, 22, 14, 26); ds[0].Range != want {
		t.Errorf("range %+v, want %+v (the name tahn)", ds[0].Range, want)
	}
	changeSpec(tc, uri, 2, geluFixed)
	if ds := tc.diagnostics(uri); len(ds) != 0 {
		t.Fatalf("after the fix: %+v, want none", ds)
	}
	// A misspelled key: the range is the key; an operator error: the operator.
	changeSpec(tc, uri, 3, strings.Replace(geluFixed, "outputs:", "outptus:", 1))
	ds = tc.diagnostics(uri)
	if len(ds) == 0 || ds[0].Range != rng(13, 0, 13, 7) {
		t.Errorf("misspelled key: %+v, want the first at %+v", ds, rng(13, 0, 13, 7))
	}
	changeSpec(tc, uri, 4, strings.Replace(geluFixed, "0.5 * x", "0.5 % x", 1))
	ds = tc.diagnostics(uri)
	if len(ds) != 1 || ds[0].Range != rng(14, 11, 14, 12) {
		t.Errorf("integer operator on numbers: %+v, want one at %+v", ds, rng(14, 11, 14, 12))
	}
	// Saving republishes, from the text the client sends with it.
	tc.notify("textDocument/didSave", map[string]any{"textDocument": map[string]any{"uri": uri}, "text": geluFixed})
	if ds := tc.diagnostics(uri); len(ds) != 0 {
		t.Errorf("after saving the fixed text: %+v", ds)
	}
	tc.shutdown()
}

// TestDiagnosticsAcrossSpecs: a kernel name another spec of the config
// already has is gen's error here too, and a spec outside any config still
// gets its spec-level checks.
func TestDiagnosticsAcrossSpecs(t *testing.T) {
	dir := project(t, map[string]string{"a.yaml": geluFixed})
	tc := startClient(t)
	uri := openSpec(tc, filepath.Join(dir, "specs", "b.yaml"), geluFixed)
	ds := tc.diagnostics(uri)
	if len(ds) != 1 || !strings.Contains(ds[0].Message, `kernel "gelu" is already defined in specs/a.yaml:1:9`) || ds[0].Range != rng(0, 8, 0, 12) {
		t.Errorf("duplicate kernel: %+v", ds)
	}
	// Renaming the other kernel in its unsaved buffer clears this error.
	other := openSpec(tc, filepath.Join(dir, "specs", "a.yaml"), geluFixed)
	if ds := tc.diagnostics(other); len(ds) != 0 {
		t.Errorf("a.yaml: %+v", ds)
	}
	tc.diagnostics(uri) // republished with a.yaml's buffer: the same error
	changeSpec(tc, other, 2, strings.Replace(geluFixed, "kernel: gelu", "kernel: gelu2", 1))
	tc.diagnostics(other)
	if ds := tc.diagnostics(uri); len(ds) != 0 {
		t.Errorf("b.yaml after a.yaml's kernel was renamed: %+v", ds)
	}
	loose := t.TempDir()
	uri = openSpec(tc, filepath.Join(loose, "g.yaml"), geluSpec)
	ds = tc.diagnostics(uri)
	if len(ds) != 1 || !strings.Contains(ds[0].Message, "tahn") {
		t.Errorf("spec outside a config: %+v", ds)
	}
	// YAML files that are not specs get nothing: the config, a workflow
	// beside the specs, a YAML file outside any config without a kernel.
	for _, f := range []string{filepath.Join(dir, "kgen.yaml"), filepath.Join(dir, ".github", "ci.yaml"), filepath.Join(loose, "other.yaml")} {
		if ds := tc.diagnostics(openSpec(tc, f, "on: [push]\njobs: {}\n")); len(ds) != 0 {
			t.Errorf("%s is not a spec: %+v", f, ds)
		}
	}
	tc.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": uri}})
	if ds := tc.diagnostics(uri); len(ds) != 0 {
		t.Errorf("closing must clear the diagnostics: %+v", ds)
	}
	tc.shutdown()
}

// TestConfigFlag: `kgen --config PATH lsp` checks every spec under that
// config: a folder that is not the found kgen.yaml's specs folder is.
func TestConfigFlag(t *testing.T) {
	dir := project(t, nil)
	alt := filepath.Join(dir, "alt.yaml")
	if err := os.WriteFile(alt, []byte("version: 1\nspecs: other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "other", "g.yaml")
	for _, c := range []struct {
		opts Options
		want int
	}{{Options{}, 0}, {Options{Config: alt}, 1}} {
		tc := startClientWith(t, c.opts)
		if ds := tc.diagnostics(openSpec(tc, file, geluSpec)); len(ds) != c.want {
			t.Errorf("config %q: %d diagnostics %+v, want %d", c.opts.Config, len(ds), ds, c.want)
		}
		tc.shutdown()
	}
}

// TestProtocol: what a server owes any client, whatever the spec.
func TestProtocol(t *testing.T) {
	tc := startClient(t)
	tc.nextID++
	id := json.RawMessage(jsonInt(tc.nextID))
	if err := tc.c.write(map[string]any{"jsonrpc": "2.0", "id": &id, "method": "textDocument/rename", "params": map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if m := tc.next(); m.Error == nil || m.Error.Code != codeMethodNotFound || string(*m.ID) != string(id) {
		t.Errorf("unknown method: %+v, want error %d", m, codeMethodNotFound)
	}
	var h *Hover // a document never opened: no answer, no error
	tc.request("textDocument/hover", map[string]any{"textDocument": map[string]any{"uri": "file:///nowhere.yaml"}, "position": Position{}}, &h)
	if h != nil {
		t.Errorf("hover in an unknown document: %+v", h)
	}
	tc.shutdown()
}

func hoverText(tc *testClient, uri string, line, char int) string {
	var h *Hover
	tc.request("textDocument/hover", map[string]any{"textDocument": map[string]any{"uri": uri}, "position": Position{line, char}}, &h)
	if h == nil {
		return ""
	}
	return h.Contents.Value
}

// TestHover: names in formulas, functions, declarations and the kernel.
func TestHover(t *testing.T) {
	dir := project(t, nil)
	tc := startClient(t)
	uri := openSpec(tc, filepath.Join(dir, "specs", "gelu.yaml"), geluFixed)
	tc.diagnostics(uri)
	for _, c := range []struct {
		line, char int
		want       []string
	}{
		{11, 18, []string{"**x** — input", "shape: [rows, cols]", "T, the variant's storage dtype (f32, f16)", "declared at specs/gelu.yaml:6:10"}},
		{14, 37, []string{"**w** — input", "shape: [cols]"}},
		{14, 52, []string{"**eps** — param", "args field: f32", "declared at specs/gelu.yaml:8:12"}},
		{14, 28, []string{"**inner** — let", "in formulas: number", "declared at specs/gelu.yaml:12:5"}},
		{11, 13, []string{"**k0** — constant", "value: 0.7978845608028654"}},
		{14, 22, []string{"tanh(number) number", "Error rule: library"}},
		{12, 10, []string{"row_mean(number) number", "reduction"}},
		{12, 4, []string{"**ms** — let"}}, // the declaration itself
		{0, 2, []string{"**kernel gelu** — rowwise", "host names: gelu_f32, gelu_f16", "args struct", "| rows | u32 | 0 | size |", "launch (metal): grid"}},
		{3, 1, []string{"**dtypes**: Storage types"}},
	} {
		got := hoverText(tc, uri, c.line, c.char)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("hover at %d:%d = %q, want it to contain %q", c.line, c.char, got, w)
			}
		}
	}
	if got := hoverText(tc, uri, 1, 20); got != "" {
		t.Errorf("hover over the doc text: %q, want nothing", got)
	}
	tc.shutdown()
}

func completionLabels(tc *testClient, uri string, line, char int) map[string]bool {
	var list CompletionList
	tc.request("textDocument/completion", map[string]any{"textDocument": map[string]any{"uri": uri}, "position": Position{line, char}}, &list)
	out := map[string]bool{}
	for _, it := range list.Items {
		out[it.Label] = true
	}
	return out
}

// TestCompletion: names in scope at each formula, functions, keys and
// enumerated values.
func TestCompletion(t *testing.T) {
	dir := project(t, nil)
	tc := startClient(t)
	text := geluFixed + "  - z: \n"
	text = strings.Replace(text, "kind: rowwise", "kind: rowwise\nmath: ", 1)
	uri := openSpec(tc, filepath.Join(dir, "specs", "gelu.yaml"), text)
	tc.diagnostics(uri)
	check := func(what string, got map[string]bool, yes, no []string) {
		t.Helper()
		for _, w := range yes {
			if !got[w] {
				t.Errorf("%s: %q missing from %v", what, w, got)
			}
		}
		for _, w := range no {
			if got[w] {
				t.Errorf("%s: %q offered, but it is not usable there", what, w)
			}
		}
	}
	// Line 13 (0-based) is "  - inner: …" now: only what precedes it.
	check("first let", completionLabels(tc, uri, 12, 20), []string{"x", "w", "eps", "k0", "pi", "row", "cols", "tanh", "row_sum", "f32", "pair_half"}, []string{"inner", "ms", "y"})
	check("second let", completionLabels(tc, uri, 13, 17), []string{"inner", "x"}, []string{"ms", "y"})
	check("output", completionLabels(tc, uri, 15, 12), []string{"inner", "ms", "eps"}, []string{"y"})
	check("math value", completionLabels(tc, uri, 3, 6), []string{"precise", "fast"}, []string{"math"})
	check("a formula not written yet", completionLabels(tc, uri, 16, 7), []string{"inner", "ms", "exp"}, nil)
	// A key being typed, which breaks the YAML until its colon.
	changeSpec(tc, uri, 2, text+"ma\n")
	tc.diagnostics(uri)
	check("top-level key", completionLabels(tc, uri, 17, 2), []string{"math", "matmul", "tolerance", "ports"}, []string{"abs", "name"})
	changeSpec(tc, uri, 3, "kernel: k\ndtypes: [f32]\ninputs:\n  - name: x\n    sh\noutputs:\n  - y: x\ntolerance:\n  f16: {abs: 1}\n  \n")
	tc.diagnostics(uri)
	check("keys of a long-form input", completionLabels(tc, uri, 4, 6), []string{"name", "dtype", "shape"}, []string{"kernel", "abs"})
	check("keys of tolerance", completionLabels(tc, uri, 9, 2), []string{"f32", "bf16"}, []string{"kernel", "abs"})
	tc.shutdown()
}

// TestDefinition: a let, an input and a param used in a formula lead to
// their declarations.
func TestDefinition(t *testing.T) {
	dir := project(t, nil)
	tc := startClient(t)
	file := filepath.Join(dir, "specs", "gelu.yaml")
	uri := openSpec(tc, file, geluFixed)
	tc.diagnostics(uri)
	for _, c := range []struct {
		line, char int
		want       Range
	}{
		{14, 28, rng(11, 4, 11, 9)}, // inner
		{14, 37, rng(5, 19, 5, 20)}, // w, in {name: w, …}
		{14, 53, rng(7, 11, 7, 14)}, // eps
		{12, 17, rng(5, 9, 5, 10)},  // x
	} {
		var locs []Location
		tc.request("textDocument/definition", map[string]any{"textDocument": map[string]any{"uri": uri}, "position": Position{c.line, c.char}}, &locs)
		if len(locs) != 1 || locs[0].URI != uri || locs[0].Range != c.want {
			t.Errorf("definition at %d:%d = %+v, want %s %+v", c.line, c.char, locs, uri, c.want)
		}
	}
	var locs []Location
	tc.request("textDocument/definition", map[string]any{"textDocument": map[string]any{"uri": uri}, "position": Position{14, 22}}, &locs)
	if len(locs) != 0 {
		t.Errorf("a function has no definition in the spec: %+v", locs)
	}
	tc.shutdown()
}

// TestFormatting: one whole-document edit with kgen fmt's layout, none
// when the layout is already canonical.
func TestFormatting(t *testing.T) {
	dir := project(t, nil)
	tc := startClient(t)
	messy := "dtypes: [f32]   # storage\nkernel: k\noutputs:\n  - y: x\ninputs: [x]"
	uri := openSpec(tc, filepath.Join(dir, "specs", "k.yaml"), messy)
	tc.diagnostics(uri)
	want, err := spec.Format("specs/k.yaml", []byte(messy))
	if err != nil {
		t.Fatal(err)
	}
	var edits []TextEdit
	tc.request("textDocument/formatting", map[string]any{"textDocument": map[string]any{"uri": uri}, "options": map[string]any{"tabSize": 2, "insertSpaces": true}}, &edits)
	if len(edits) != 1 || edits[0].NewText != string(want) || edits[0].Range != rng(0, 0, 4, 11) {
		t.Fatalf("edits %+v, want one over %+v with %q", edits, rng(0, 0, 4, 11), want)
	}
	changeSpec(tc, uri, 2, string(want))
	tc.diagnostics(uri)
	tc.request("textDocument/formatting", map[string]any{"textDocument": map[string]any{"uri": uri}, "options": map[string]any{}}, &edits)
	if len(edits) != 0 {
		t.Errorf("canonical text: %+v, want no edit", edits)
	}
	tc.shutdown()
}
