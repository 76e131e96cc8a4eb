package expr

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// formulaLine finds `- name: formula` lines in spec files, for seeds.
var formulaLine = regexp.MustCompile(`(?m)^\s*- [a-z_0-9]+: (.+)$`)

// FuzzFormula: parsing and checking any text never panics, every error
// offset lies within the text, and a formula that parses prints (String)
// as text that parses to the same tree.
func FuzzFormula(f *testing.F) {
	for _, s := range []string{
		"0.5 * x * (1 + tanh(k0 * (x + 0.044715 * x * x * x)))",
		"select(x >= 0 && !(y < 1) || x != y, -x, pow(x, 2))",
		"a - (b - c)", "-(-x)", "a / (b * c)", "1e-6 + .5 + 2. + 3E+2",
		"x / row_sum(exp(x - row_max(x)))", "f(,)", "((x)", "x ^ 2", "1.2.3", "3x",
		"\x00", "é", "(((((((((((((((((((((((x", "x +\n  y",
	} {
		f.Add(s)
	}
	for _, pattern := range []string{"../specs/*.yaml", "../testdata/*/*/specs/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				continue
			}
			for _, m := range formulaLine.FindAllStringSubmatch(string(data), -1) {
				f.Add(m[1])
			}
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		n, err := Parse(src)
		if err != nil {
			if n != nil {
				t.Errorf("Parse(%q) returned a tree and an error", src)
			}
			if err.Off < 0 || err.Off > len(src) {
				t.Errorf("Parse(%q): error offset %d outside [0, %d]: %s", src, err.Off, len(src), err.Msg)
			}
			if err.Msg == "" {
				t.Errorf("Parse(%q): empty error message", src)
			}
			return
		}
		c := &Checker{
			Rowwise: len(src)%2 == 0,
			Resolve: func(name string) (Type, string) {
				switch name[0] {
				case 'a', 'x', 'y':
					return Num, ""
				case 'b', 'o':
					return Bool, ""
				}
				return Unknown, "undefined name " + name
			},
			Report: func(off int, msg string) {
				if off < 0 || off > len(src) {
					t.Errorf("Check(%q): report offset %d outside [0, %d]: %s", src, off, len(src), msg)
				}
			},
		}
		c.Check(n)
		Refs(n)
		text := String(n)
		again, err := Parse(text)
		if err != nil {
			t.Fatalf("String(Parse(%q)) = %q does not parse: %v", src, text, err)
		}
		if show(again) != show(n) {
			t.Errorf("round trip of %q changed the tree: %s -> %s", src, show(n), show(again))
		}
	})
}
