package spec_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/spec"
)

// FuzzParse: reading any bytes as a spec, and checking its formulas, never
// panics, and every diagnostic names the file and a line and column in it.
func FuzzParse(f *testing.F) {
	for _, pattern := range []string{"../specs/*.yaml", "../testdata/*/*/specs/*.yaml", "../testdata/*/*/specs/*/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil {
				f.Add(data)
			}
		}
	}
	f.Add([]byte(""))
	f.Add([]byte("kernel: [\n"))
	f.Add([]byte("kernel: a\ndtypes: [f32]\noutputs:\n  - y: |\n      1 +\n\n        2 *\n      q\n"))
	f.Add([]byte("kernel: a\r\ndtypes: [f32]\r\noutputs:\r\n  - y: \"1 +\r\n    q\"\r\n"))
	f.Add([]byte("&a [1]\n--- *a\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		const path = "specs/fuzz.yaml"
		var diags diag.List
		s := spec.Parse(path, src, &diags)
		if s != nil {
			ir.Build([]*spec.Spec{s}, &diags)
		}
		// Line breaks as YAML counts them: \r\n, \n, or a lone \r.
		lines := bytes.Count(bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n")), []byte("\n")) +
			bytes.Count(bytes.ReplaceAll(src, []byte("\r\n"), nil), []byte("\r")) + 1
		text := strings.Split(strings.ReplaceAll(strings.ReplaceAll(string(src), "\r\n", "\n"), "\r", "\n"), "\n")
		for _, d := range diags.Sorted() {
			if d.Pos.Path != path || d.Pos.Line < 1 || d.Pos.Col < 1 || d.Pos.Line > lines {
				t.Errorf("diagnostic at a bad position (file has %d lines): %s", lines, d)
				continue
			}
			// Columns count runes: at most one past the line's last.
			if runes := utf8.RuneCountInString(text[d.Pos.Line-1]); d.Pos.Col > runes+1 {
				t.Errorf("column %d past the end of line %d (%d runes): %s", d.Pos.Col, d.Pos.Line, runes, d)
			}
			if d.Msg == "" {
				t.Errorf("empty message at %s", d.Pos)
			}
		}
	})
}
