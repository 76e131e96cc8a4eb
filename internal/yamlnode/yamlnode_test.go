package yamlnode

import (
	"strings"
	"testing"

	"github.com/goccy/go-yaml/ast"

	"github.com/kgen-dev/kgen/diag"
)

// value parses src, a mapping, and returns the doc and the value of key.
func value(t *testing.T, src, key string) (*Doc, ast.Node) {
	t.Helper()
	var diags diag.List
	doc, ok := Parse("f.yaml", []byte(src), &diags)
	if !ok || diags.Len() > 0 {
		t.Fatalf("Parse: %v", diags.Err())
	}
	var found ast.Node
	ast.Walk(visitFunc(func(n ast.Node) {
		if mv, ok := n.(*ast.MappingValueNode); ok && found == nil {
			if k, _ := Scalar(mv.Key); k == key {
				found = Unwrap(mv.Value)
			}
		}
	}), doc.Root)
	if found == nil {
		t.Fatalf("no key %q", key)
	}
	return doc, found
}

type visitFunc func(ast.Node)

func (f visitFunc) Visit(n ast.Node) ast.Visitor {
	f(n)
	return f
}

// TestMapScalar checks that every occurrence of the marker word maps to
// the line and column where the file has it.
func TestMapScalar(t *testing.T) {
	tests := []struct {
		name, src string
		word      string
		want      []string // line:col of each occurrence of word in the value
	}{
		{"plain", "y: x * zz + 1\n", "zz", []string{"1:8"}},
		{"plain after spaces", "y:    1 + zz\n", "zz", []string{"1:11"}},
		{"double quoted", "y: \"x * zz\"\n", "zz", []string{"1:9"}},
		{"single quoted", "y: 'x * (zz)'  # note\n", "zz", []string{"1:10"}},
		{"nested", "a:\n  - y: zz + zz\n", "zz", []string{"2:8", "2:13"}},
		{"literal", "y: |\n  x *\n  zz +\n    (zz)\n", "zz", []string{"3:3", "4:6"}},
		{"literal strip", "y: |-\n    x * zz\n", "zz", []string{"2:9"}},
		{"literal blank line", "y: |\n  x\n\n  + zz\n", "zz", []string{"4:5"}},
		{"literal below header column", "outputs:\n  - y: |\n      1 +\n      zz\n", "zz", []string{"4:7"}},
		{"folded", "y: >\n  x *\n  zz +\n    zz\nz: 1\n", "zz", []string{"3:3", "4:5"}},
		{"folded blank line", "y: >-\n  x *\n\n  zz\n", "zz", []string{"4:3"}},
		{"plain two lines", "y: x * 2 +\n  exp(zz)\n", "zz", []string{"2:7"}},
		{"plain three lines", "a:\n  - y: x *\n      2 +\n      zz\n  - z: 1\n", "zz", []string{"4:7"}},
		{"plain line starting with minus", "y: x *\n   -zz\n", "zz", []string{"2:5"}},
		{"plain minus line, nested, last", "a:\n  - y: x *\n      -zz\n", "zz", []string{"3:8"}},
		{"plain minus line, not last", "y: x *\n   -zz\nz: 1\n", "zz", []string{"2:5"}},
		{"plain minus line, no newline", "y: zz\n   -zz", "zz", []string{"1:4", "2:5"}},
		{"double quoted two lines", "y: \"x +\n    zz\"\n", "zz", []string{"2:5"}},
		{"crlf literal", "y: |\r\n  x +\r\n    zz\r\n", "zz", []string{"3:5"}},
		{"crlf plain", "y: x + zz\r\n", "zz", []string{"1:8"}},
		// Columns count runes; a TAB is one column; escapes are as long
		// as they are written.
		{"multi-byte before, quoted", "y: \"éé zz\"\n", "zz", []string{"1:8"}},
		{"multi-byte before, plain", "y: éé + zz +\n  zz\n", "zz", []string{"1:9", "2:3"}},
		{"multi-byte before, literal", "y: |\n  éé zz\n", "zz", []string{"2:6"}},
		{"multi-byte key, two lines", "é:\n  y: x +\n    zz\n", "zz", []string{"3:5"}},
		{"escapes before", "y: \"\\x41 zz \\u00e9\\t zz\"\n", "zz", []string{"1:10", "1:22"}},
		{"tab before", "y: \"a\tzz\"\n", "zz", []string{"1:7"}},
		{"quote doubled before", "y: 'it''s zz'\n", "zz", []string{"1:11"}},
		{"escape then end", "y: \"\\x41zz\"\n", "zz", []string{"1:9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, n := value(t, tt.src, "y")
			text, ok := Scalar(n)
			if !ok {
				t.Fatalf("not a scalar: %T", n)
			}
			m := doc.MapScalar(n)
			var got []string
			for off := 0; ; {
				i := strings.Index(text[off:], tt.word)
				if i < 0 {
					break
				}
				p := m.At(off + i)
				if p.Path != "f.yaml" {
					t.Errorf("path %q", p.Path)
				}
				got = append(got, strings.TrimPrefix(p.String(), "f.yaml:"))
				off += i + len(tt.word)
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("value %q: %s at %v; want %v", text, tt.word, got, tt.want)
			}
		})
	}
}

// TestTabsWhereYAMLKeepsThem: a TAB in a comment or a quoted string is
// text, not a separator, and stays allowed.
func TestTabsWhereYAMLKeepsThem(t *testing.T) {
	for _, src := range []string{"k: v # a\tcomment\n", "k: \"a\tb\"\n", "k: 'a\tb'\n"} {
		var diags diag.List
		if _, ok := Parse("f.yaml", []byte(src), &diags); !ok {
			t.Errorf("Parse(%q): %v", src, diags.Err())
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"a: [1, 2\nb: 3\n", "f.yaml:2:1: invalid YAML: "},
		{"a:\n\t- 1\n", "f.yaml:2:1: a TAB outside a comment or quoted string; use spaces"},
		// Issue 12: goccy joins the tokens around a TAB in a plain scalar.
		{"outputs:\n  - y: x + 1\t0\n", "f.yaml:2:13: a TAB outside a comment or quoted string; use spaces"},
		{"k: a\tb # c\n", "f.yaml:1:5: a TAB"},
		{"\xef\xbb\xbfkernel: k\n", "f.yaml:1:1: the file starts with a UTF-8 byte order mark"},
		{"\xff\xfek\x00:\x00", "f.yaml:1:1: the file is UTF-16 or UTF-32"},
		{"\xfe\xff\x00k", "f.yaml:1:1: the file is UTF-16 or UTF-32"},
		{"k: v\nd: \xe9t\xe9\n", "f.yaml:2:4: invalid UTF-8 (byte 0xe9)"},
		{"a: 1\n---\nb: 2\n", "f.yaml:2:1: a file holds one YAML document; found 2"},
		// goccy misreads these; the message says why.
		{"k: 1\n\"a\tb\": 2\n", "f.yaml:2:1: invalid YAML: non-map value is specified (a TAB in a quoted string confuses the YAML reader here; write \\t in double quotes)"},
		{"{doc: \"a\tb\", k: v}\n", "f.yaml:1:"},
		// Control characters YAML forbids, at their rune column.
		{"k: \"é\tb\x01\"\n", "f.yaml:1:8: the control character U+0001, which YAML does not allow"},
		{"k: v\nd: ééé\x7f\n", "f.yaml:2:7: the control character U+007F"},
		{"k: 'x\u0085'\n", "f.yaml:1:6: the control character U+0085"},
		{"k: v # \x1b[31m\n", "f.yaml:1:8: the control character U+001B"},
	}
	for _, tt := range tests {
		var diags diag.List
		if _, ok := Parse("f.yaml", []byte(tt.src), &diags); ok {
			t.Errorf("Parse(%q) succeeded", tt.src)
			continue
		}
		if got := diags.Err().Error(); !strings.HasPrefix(got, tt.want) || strings.Contains(got, "\t") {
			t.Errorf("Parse(%q):\n got %s\nwant %s…", tt.src, got, tt.want)
		}
	}
	var diags diag.List
	doc, ok := Parse("f.yaml", []byte("# only a comment\n"), &diags)
	if !ok || doc.Root != nil || diags.Len() != 0 {
		t.Errorf("empty document: ok=%v root=%v diags=%v", ok, doc.Root, diags.Err())
	}
}

func TestFieldsAndPos(t *testing.T) {
	src := "kernel: a\nparams:\n  - {name: p, type: f32}\n  - name: q\n    type: u32\nkernel: b\nlist: [1, x, true, null, 'q']\n"
	var diags diag.List
	doc, _ := Parse("f.yaml", []byte(src), &diags)
	if got := doc.Pos(doc.Root).String(); got != "f.yaml:1:1" {
		t.Errorf("Pos(block mapping) = %s; want f.yaml:1:1", got)
	}
	fields, ok := doc.Fields(doc.Root, "a spec", &diags)
	if !ok {
		t.Fatal("Fields failed")
	}
	var keys []string
	for _, f := range fields {
		keys = append(keys, f.Key+"@"+strings.TrimPrefix(f.KeyPos.String(), "f.yaml:"))
	}
	if got := strings.Join(keys, " "); got != "kernel@1:1 params@2:1 list@7:1" {
		t.Errorf("keys %s", got)
	}
	if got := diags.Err().Error(); got != `f.yaml:6:1: duplicate key "kernel" (first at line 1)` {
		t.Errorf("duplicate: %s", got)
	}
	items, _ := doc.Seq(fields[1].Value, "params", &diags)
	if got := doc.Pos(items[0]).String(); got != "f.yaml:3:5" {
		t.Errorf("Pos(flow mapping) = %s; want f.yaml:3:5 (the '{')", got)
	}
	if got := doc.Pos(items[1]).String(); got != "f.yaml:4:5" {
		t.Errorf("Pos(block mapping in a list) = %s; want f.yaml:4:5 (its first key)", got)
	}
	list, _ := doc.Seq(fields[2].Value, "list", &diags)
	var kinds []string
	for _, n := range list {
		kinds = append(kinds, Describe(n))
	}
	if got := strings.Join(kinds, ", "); got != "a number, a string, a boolean, null, a string" {
		t.Errorf("Describe: %s", got)
	}
	if s, ok := Scalar(list[4]); !ok || s != "q" {
		t.Errorf("Scalar('q') = %q, %v", s, ok)
	}
	if _, ok := Scalar(fields[1].Value); ok {
		t.Error("Scalar accepted a list")
	}
	var more diag.List
	if _, ok := doc.Fields(fields[2].Value, "list", &more); ok || !strings.Contains(more.Err().Error(), "list must be a mapping, not a list") {
		t.Errorf("Fields(list): ok=%v %v", ok, more.Err())
	}
	if _, ok := doc.Seq(fields[0].Value, "kernel", &more); ok {
		t.Error("Seq accepted a string")
	}
}
