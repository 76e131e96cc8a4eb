package lsp

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/internal/yamlnode"
	"github.com/kgen-dev/kgen/spec"
)

// TestTyping replays the repository's specs as if typed: every prefix of
// each that ends inside a line or at its end is analyzed, and hover,
// completion and definition are asked for at its last character. Partial
// buffers are most of what a server sees; none may panic.
func TestTyping(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files, err := spec.Files(root, "specs")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{disk: newDiskSpecs()}
	for _, rel := range files {
		full := filepath.Join(root, filepath.FromSlash(rel))
		src, err := yamlnode.ReadFile(full)
		if err != nil {
			t.Fatal(err)
		}
		text := string(src)
		for i := 0; i < len(text); i++ {
			if text[i] != '\n' && text[i] != '(' && text[i] != ':' {
				continue
			}
			prefix := text[:i]
			a := analyze(full, prefix, env{})
			a.lspDiagnostics()
			line := strings.Count(prefix, "\n")
			pos := Position{Line: line, Character: len(prefix) - strings.LastIndex(prefix, "\n") - 1}
			s.hover(a, pos)
			s.complete(a, pos)
			s.definition(a, pos)
		}
	}
}
