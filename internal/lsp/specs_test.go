package lsp

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/internal/yamlnode"
	"github.com/kgen-dev/kgen/spec"
)

// TestRepositorySpecs runs the server's features over every spec of kgen's
// own config (each kind, matmuls with their chains and quantized operands):
// no diagnostic, a hover on every name a formula reads that says what it
// is, and on the kernel its launch.
func TestRepositorySpecs(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files, err := spec.Files(root, "specs")
	if err != nil || len(files) == 0 {
		t.Fatalf("no specs: %v", err)
	}
	s := &server{disk: newDiskSpecs()}
	for _, rel := range files {
		full := filepath.Join(root, filepath.FromSlash(rel))
		src, err := yamlnode.ReadFile(full)
		if err != nil {
			t.Fatal(err)
		}
		a := analyze(full, string(src), env{disk: s.disk})
		if len(a.diags) > 0 || a.built == nil {
			t.Errorf("%s: %v", rel, a.diags)
			continue
		}
		if h := s.hover(a, Position{0, 1}); h == nil || !strings.Contains(h.Contents.Value, "launch (metal)") {
			t.Errorf("%s: kernel hover %+v", rel, h)
		}
		for _, f := range a.formulas() {
			for off := 0; off < len(f.Text); off++ {
				start, end, ok := wordAt(f.Text, off)
				if !ok || start != off || calledAt(f.Text, end) {
					continue
				}
				p := f.Map.At(off)
				pos := a.lspPos(p.Line, p.Col)
				h := s.hover(a, pos)
				if h == nil || !strings.Contains(h.Contents.Value, "**"+f.Text[start:end]+"** — ") {
					t.Errorf("%s:%d:%d: hover over %q: %+v", rel, p.Line, p.Col, f.Text[start:end], h)
				}
				if len(s.complete(a, pos).Items) == 0 {
					t.Errorf("%s:%d:%d: no completion", rel, p.Line, p.Col)
				}
				s.definition(a, pos)
			}
		}
	}
}
