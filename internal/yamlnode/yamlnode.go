// Package yamlnode walks goccy/go-yaml syntax trees for kgen's hand-checked
// files (kgen.yaml and specs). A tree walk, unlike struct decoding, lets kgen
// report every problem in a file at its own line and column instead of
// stopping at the first.
package yamlnode

import (
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/kgen-dev/kgen/diag"
)

// Doc is a parsed YAML file.
type Doc struct {
	Path  string   // as reported in diagnostics
	Lines []string // source lines, for positions inside scalars
	Root  ast.Node // the first document's body; nil for an empty file
}

// Parse parses src. Syntax errors are returned as diagnostics. Duplicate keys
// are left to Fields, which reports them all instead of just the first.
func Parse(path string, src []byte, diags *diag.List) (*Doc, bool) {
	// Line breaks as YAML (and goccy) count them: \r\n, \n, or a lone \r.
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(string(src), "\r\n", "\n"), "\r", "\n"), "\n")
	doc := &Doc{Path: path, Lines: lines}
	if !checkSize(path, src, diags) || !precheck(path, src, diags) || !checkNesting(path, src, diags) {
		return nil, false
	}
	file, err := parser.ParseBytes(src, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		pos := doc.errPos(err)
		hint := ""
		if strings.Contains(doc.line(pos.Line-1)+doc.line(pos.Line), "\t") {
			// goccy misreads some quoted strings holding a TAB (a quoted
			// key, a flow mapping's value) and blames a later token.
			hint = ` (a TAB in a quoted string confuses the YAML reader here; write \t in double quotes)`
		}
		diags.Addf(pos, "invalid YAML: %s%s", yamlMessage(err), hint)
		return nil, false
	}
	if len(file.Docs) > 1 {
		diags.Addf(doc.Pos(file.Docs[1]), "a file holds one YAML document; found %d", len(file.Docs))
		return nil, false
	}
	if len(file.Docs) == 1 {
		doc.Root = Unwrap(file.Docs[0].Body)
	}
	return doc, true
}

func yamlMessage(err error) string {
	msg := err.Error()
	var ye interface{ GetMessage() string }
	if errors.As(err, &ye) {
		msg = ye.GetMessage()
	}
	if strings.Contains(msg, "\t") {
		// A raw tab would make the one-line diagnostic unreadable; tabs
		// only ever appear here as indentation.
		msg = strings.ReplaceAll(msg, "\t", `\t`) + " (indent YAML with spaces, not tabs)"
	}
	return msg
}

func (d *Doc) errPos(err error) diag.Pos {
	var ye interface{ GetToken() *token.Token }
	if errors.As(err, &ye) && ye.GetToken() != nil {
		return d.tokenPos(ye.GetToken())
	}
	return diag.Pos{Path: d.Path, Line: 1, Col: 1}
}

func (d *Doc) tokenPos(tk *token.Token) diag.Pos {
	if tk == nil || tk.Position == nil {
		return diag.Pos{Path: d.Path, Line: 1, Col: 1}
	}
	// goccy counts a lone \r, and a \r\n inside quotes, as two line breaks
	// where this file has one: keep positions inside the file.
	line := min(max(tk.Position.Line, 1), len(d.Lines))
	col := min(max(tk.Position.Column, 1), utf8.RuneCountInString(d.line(line))+1)
	return diag.Pos{Path: d.Path, Line: line, Col: col}
}

// Pos is the position of a node's first token.
func (d *Doc) Pos(n ast.Node) diag.Pos {
	if n == nil {
		return diag.Pos{Path: d.Path, Line: 1, Col: 1}
	}
	switch v := n.(type) {
	case *ast.LiteralNode:
		return d.tokenPos(v.Start)
	case *ast.MappingValueNode:
		// Its token is the ':'; the entry starts at its key.
		return d.Pos(v.Key)
	case *ast.MappingNode:
		// A block mapping's token is its first ':'; a flow mapping's the '{'.
		if !v.IsFlowStyle && len(v.Values) > 0 {
			return d.Pos(v.Values[0])
		}
	case *ast.DocumentNode:
		if v.Start != nil { // the '---' line
			return d.tokenPos(v.Start)
		}
	}
	return d.tokenPos(n.GetToken())
}

// Unwrap strips tags, anchors and comments so callers see the value node.
func Unwrap(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.TagNode:
			n = v.Value
		case *ast.AnchorNode:
			n = v.Value
		default:
			return n
		}
	}
}

// Field is one key of a mapping.
type Field struct {
	Key    string
	KeyPos diag.Pos
	Value  ast.Node // unwrapped; a *ast.NullNode for "key:" with no value
}

// Fields returns the keys of a mapping node in source order. It reports a
// non-mapping node (naming what) and duplicate keys; duplicates after the
// first are dropped.
func (d *Doc) Fields(n ast.Node, what string, diags *diag.List) ([]Field, bool) {
	m, ok := n.(*ast.MappingNode)
	if !ok {
		if mv, isValue := n.(*ast.MappingValueNode); isValue {
			m = &ast.MappingNode{Values: []*ast.MappingValueNode{mv}}
		} else {
			diags.Addf(d.Pos(n), "%s must be a mapping, not %s", what, Describe(n))
			return nil, false
		}
	}
	seen := map[string]diag.Pos{}
	var out []Field
	for _, mv := range m.Values {
		keyNode := Unwrap(mv.Key)
		key, isScalar := Scalar(keyNode)
		pos := d.Pos(keyNode)
		if !isScalar {
			diags.Addf(pos, "%s: keys must be plain names", what)
			continue
		}
		if first, dup := seen[key]; dup {
			diags.Addf(pos, "duplicate key %q (first at line %d)", key, first.Line)
			continue
		}
		seen[key] = pos
		out = append(out, Field{Key: key, KeyPos: pos, Value: Unwrap(mv.Value)})
	}
	return out, true
}

// Seq returns the items of a sequence node, or reports that n is not one.
func (d *Doc) Seq(n ast.Node, what string, diags *diag.List) ([]ast.Node, bool) {
	s, ok := n.(*ast.SequenceNode)
	if !ok {
		diags.Addf(d.Pos(n), "%s must be a list, not %s", what, Describe(n))
		return nil, false
	}
	items := make([]ast.Node, len(s.Values))
	for i, v := range s.Values {
		items[i] = Unwrap(v)
	}
	return items, true
}

// Scalar returns the text of a scalar node as written (without quotes).
func Scalar(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		return v.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return v.GetToken().Value, true
	}
	return "", false
}

// IsNull reports whether n is YAML null (`~`, `null`, or nothing).
func IsNull(n ast.Node) bool {
	_, ok := n.(*ast.NullNode)
	return ok || n == nil
}

// Describe names a node's kind for messages ("a list", "a number", …).
func Describe(n ast.Node) string {
	switch n.(type) {
	case nil, *ast.NullNode:
		return "null"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number"
	case *ast.BoolNode:
		return "a boolean"
	case *ast.StringNode, *ast.LiteralNode:
		return "a string"
	case *ast.AliasNode:
		return "an alias"
	}
	return "an unsupported YAML value"
}

// CheckDuplicates reports every duplicate key of every mapping in the doc,
// as Fields does for the mappings a reader visits: for callers that keep
// the YAML tree as it is (kgen fmt) and so never call Fields on all of it.
func (d *Doc) CheckDuplicates(diags *diag.List) {
	if d.Root != nil {
		ast.Walk(dupVisitor{d, diags}, d.Root)
	}
}

type dupVisitor struct {
	d     *Doc
	diags *diag.List
}

func (v dupVisitor) Visit(n ast.Node) ast.Visitor {
	if m, ok := n.(*ast.MappingNode); ok {
		v.d.Fields(m, "a mapping", v.diags)
	}
	return v
}
