package kgen_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/generate"
)

// lineBreaks are what ends a `//` comment for clang (CR, LF, and the
// vertical tab and form feed clang treats as whitespace) or for a reader.
var lineBreaks = regexp.MustCompile("\r\n|\r|\n|\u2028|\u2029|\u0085")

// TestUserTextStaysInComments is issue 12's injection: a doc or spec path
// with a lone CR (and every other hostile rune) ends the comment in the
// .metal, the .cu and the MSL embedded in Go, and `#define fmin fmax`
// becomes code. spec refuses such text; this drives the emitters past that
// check (the kernels' Doc and SpecPath set directly) to show that no
// generated file ever carries the payload at the start of a line, and that
// every Go file still parses.
func TestUserTextStaysInComments(t *testing.T) {
	cfg, err := config.Load(filepath.Join("..", "testdata", "golden", "cuda_segments", "kgen.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	kernels, err := generate.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	payload := "\n#define fmin fmax\n"
	breaks := []string{"\r", "\n", "\r\n", "\u2028", "\u2029", "\u0085", "\\\n", "??/\n", "\x00", "\ufeff", "*/"}
	for i, br := range breaks {
		k := kernels[i%len(kernels)]
		k.Doc = "innocent" + strings.ReplaceAll(payload, "\n", br) + "tail"
		k.SpecPath = "specs/x" + strings.ReplaceAll(payload, "\n", br) + ".yaml"
		res, err := generate.Emit(cfg, kernels)
		if err != nil {
			t.Fatalf("break %q: %v", br, err)
		}
		for _, f := range res.Files {
			text := string(f.Data)
			// C++ splices a backslash-newline before anything else.
			spliced := strings.ReplaceAll(strings.ReplaceAll(text, "\\\r\n", ""), "\\\n", "")
			if strings.HasSuffix(f.Path, ".md") {
				spliced = "" // Markdown: a doc's lines are prose there, never code
			}
			for _, line := range lineBreaks.Split(spliced, -1) {
				if strings.HasPrefix(strings.TrimLeft(line, " \t\x00\ufeff"), "#define fmin") {
					t.Errorf("break %q: %s carries the payload as code: %q", br, f.Path, line)
				}
			}
			if strings.ContainsRune(text, 0) {
				t.Errorf("break %q: %s contains NUL", br, f.Path)
			}
			if strings.HasSuffix(f.Path, ".go") {
				if _, err := parser.ParseFile(token.NewFileSet(), f.Path, f.Data, parser.ParseComments); err != nil {
					t.Errorf("break %q: %s does not parse: %v", br, f.Path, err)
				}
			}
		}
	}
}
