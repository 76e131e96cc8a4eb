package lsp

import (
	"context"
	_ "embed"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

//go:embed client.lua
var clientLua []byte

// badSpec has a typo on line 7 (tahn, 0-based line 6, characters 22-26)
// and keys out of kgen fmt's order (doc last, let after outputs).
const badSpec = `kernel: gelu
dtypes: [f32, f16]
inputs: [x]
constants:
  k0: 0.7978845608028654
outputs:
  - y: 0.5 * x * (1 + tahn(inner))
let:
  - inner: k0 * (x + 0.044715 * x * x * x)
doc: GELU, tanh approximation.
`

// nvimResult is what client.lua saw.
type nvimResult struct {
	OK          bool   `json:"ok"`
	Err         string `json:"err"`
	Diagnostics []struct {
		Line    int    `json:"line"`
		Col     int    `json:"col"`
		EndLine int    `json:"end_line"`
		EndCol  int    `json:"end_col"`
		Message string `json:"message"`
	} `json:"diagnostics"`
	Hover      string   `json:"hover"`
	HoverInput string   `json:"hover_input"`
	Completion []string `json:"completion"`
	Definition struct {
		Line int `json:"line"`
		Col  int `json:"col"`
	} `json:"definition"`
	Cleared   bool     `json:"cleared"`
	Formatted []string `json:"formatted"`
}

// TestNeovim drives `kgen lsp` from headless Neovim: the diagnostic of a
// typo with its range, hover over a let and an input, completion inside a
// formula, go to definition of a let, the diagnostic clearing when the buffer is fixed, and
// formatting in kgen fmt's layout.
func TestNeovim(t *testing.T) {
	nvim, err := exec.LookPath("nvim")
	if err != nil {
		t.Skip("nvim is not on PATH: this test drives kgen lsp from headless Neovim (Debian/Ubuntu: apt-get install neovim)")
	}
	if testing.Short() {
		t.Skip("builds kgen and starts Neovim")
	}
	dir := t.TempDir()
	kgen := filepath.Join(dir, "kgen")
	if out, err := exec.Command("go", "build", "-o", kgen, "github.com/kgen-dev/kgen/cmd/kgen").CombinedOutput(); err != nil {
		t.Fatalf("building kgen: %v\n%s", err, out)
	}
	root := filepath.Join(dir, "proj")
	spec := filepath.Join(root, "specs", "gelu.yaml")
	script := filepath.Join(dir, "client.lua")
	for name, data := range map[string][]byte{filepath.Join(root, "kgen.yaml"): []byte("version: 1\n"), spec: []byte(badSpec), script: clientLua} {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outFile := filepath.Join(dir, "out.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvim, "--headless", "--clean", "-n", "-u", "NONE", "-c", "luafile "+script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "KGEN_BIN="+kgen, "KGEN_SPEC="+spec, "KGEN_ROOT="+root, "KGEN_LSP_OUT="+outFile,
		"XDG_STATE_HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CACHE_HOME="+dir)
	log, err := cmd.CombinedOutput()
	data, rerr := os.ReadFile(outFile)
	if rerr != nil {
		t.Fatalf("nvim wrote no result (%v): %v\n%s", rerr, err, log)
	}
	var r nvimResult
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%v in %s", err, data)
	}
	if !r.OK {
		t.Fatalf("the Lua client failed: %s\n%s", r.Err, log)
	}
	if len(r.Diagnostics) != 1 || r.Diagnostics[0].Message != `unknown function "tahn" (did you mean "tanh"?)` ||
		r.Diagnostics[0].Line != 6 || r.Diagnostics[0].Col != 22 || r.Diagnostics[0].EndLine != 6 || r.Diagnostics[0].EndCol != 26 {
		t.Errorf("diagnostics %+v, want one on tahn (line 6, columns 22-26)", r.Diagnostics)
	}
	for _, c := range []struct{ got, want string }{
		{r.Hover, "**inner** — let"}, {r.Hover, "declared at specs/gelu.yaml:9:5"},
		{r.HoverInput, "**x** — input"}, {r.HoverInput, "shape: [n]"},
	} {
		if !strings.Contains(c.got, c.want) {
			t.Errorf("hover %q, want it to contain %q", c.got, c.want)
		}
	}
	for _, w := range []string{"inner", "x", "k0", "tanh", "i"} {
		if !slices.Contains(r.Completion, w) {
			t.Errorf("completion %v lacks %q", r.Completion, w)
		}
	}
	if r.Definition.Line != 8 || r.Definition.Col != 4 {
		t.Errorf("definition of inner at %+v, want its let (line 8, column 4)", r.Definition)
	}
	if !r.Cleared {
		t.Error("the diagnostic did not clear once the buffer was fixed")
	}
	want := []string{"kernel: gelu", "doc: GELU, tanh approximation.", "dtypes: [f32, f16]"}
	if len(r.Formatted) < 3 || !slices.Equal(r.Formatted[:3], want) || !slices.Contains(r.Formatted, "  - y: 0.5 * x * (1 + tanh(inner))") {
		t.Errorf("formatted buffer %q, want it to start %q and keep the fixed formula", r.Formatted, want)
	}
}
