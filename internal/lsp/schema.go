package lsp

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/kgen-dev/kgen/spec"
)

// Spec keys come from the spec's JSON Schema (spec.Schema, the one `kgen
// schema` prints and the parser is tested against), so a field added there
// is completed and described here with no change.

// schemaNode is one JSON Schema object, as far as completion reads it.
type schemaNode struct {
	Ref         string                 `json:"$ref"`
	Description string                 `json:"description"`
	Properties  map[string]*schemaNode `json:"properties"`
	Items       *schemaNode            `json:"items"`
	OneOf       []*schemaNode          `json:"oneOf"`
	AnyOf       []*schemaNode          `json:"anyOf"`
	AllOf       []*schemaNode          `json:"allOf"`
	Enum        []any                  `json:"enum"`
	Definitions map[string]*schemaNode `json:"definitions"`
}

var loadSchema = sync.OnceValue(func() *schemaNode {
	var root schemaNode
	if err := json.Unmarshal(spec.Schema, &root); err != nil {
		panic("spec.Schema is not JSON: " + err.Error()) // a test reads it too
	}
	return &root
})

// alternatives is n with its $ref followed and its oneOf/anyOf/allOf
// branches spread out: every schema a value there may match.
func alternatives(n *schemaNode) []*schemaNode {
	root := loadSchema()
	var out []*schemaNode
	var walk func(n *schemaNode, depth int)
	walk = func(n *schemaNode, depth int) {
		if n == nil || depth > 16 {
			return
		}
		if name, ok := strings.CutPrefix(n.Ref, "#/definitions/"); ok {
			walk(root.Definitions[name], depth+1)
			return
		}
		out = append(out, n)
		for _, group := range [][]*schemaNode{n.OneOf, n.AnyOf, n.AllOf} {
			for _, b := range group {
				walk(b, depth+1)
			}
		}
	}
	walk(n, 0)
	return out
}

// schemaAt follows a YAML path (keys, and "[]" for a sequence item) from
// the spec's root; the result lists the schemas a value there may match.
func schemaAt(path []string) []*schemaNode {
	nodes := []*schemaNode{loadSchema()}
	for _, step := range path {
		var next []*schemaNode
		for _, n := range nodes {
			for _, alt := range alternatives(n) {
				if step == "[]" && alt.Items != nil {
					next = append(next, alt.Items)
				} else if p := alt.Properties[step]; p != nil {
					next = append(next, p)
				}
			}
		}
		nodes = next
	}
	var out []*schemaNode
	for _, n := range nodes {
		out = append(out, alternatives(n)...)
	}
	return out
}

// schemaKeys lists the keys a mapping at path may hold, with their
// descriptions, sorted.
func schemaKeys(path []string) []CompletionItem {
	seen := map[string]bool{}
	var out []CompletionItem
	for _, n := range schemaAt(path) {
		for key, p := range n.Properties {
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, CompletionItem{Label: key, Kind: completionProperty, Detail: describeSchema(p), InsertText: key + ": "})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Label < out[j].Label })
	return out
}

// schemaValues lists the enumerated values of the value at path (of its
// items, for a sequence such as dtypes).
func schemaValues(path []string) []CompletionItem {
	seen := map[string]bool{}
	var out []CompletionItem
	add := func(nodes []*schemaNode) {
		for _, n := range nodes {
			for _, v := range n.Enum {
				s := "null"
				if v != nil {
					s = fmt.Sprint(v)
				}
				if !seen[s] {
					seen[s] = true
					out = append(out, CompletionItem{Label: s, Kind: completionValue})
				}
			}
		}
	}
	add(schemaAt(path))
	add(schemaAt(append(path[:len(path):len(path)], "[]")))
	return out
}

// describeSchema is the description of the value n describes, looking
// through references.
func describeSchema(n *schemaNode) string {
	for _, alt := range alternatives(n) {
		if alt.Description != "" {
			return alt.Description
		}
	}
	return ""
}

// yamlLine splits a block YAML line: its indentation, the column (from 1) of
// a sequence dash if it starts with "- ", the column of the content after
// them, and the key if the content is "key:".
type yamlLine struct {
	dash, col int
	key       string
	content   string
}

var keyRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_-]*)\s*:(\s|$)`)

func splitYAMLLine(s string) yamlLine {
	body := strings.TrimLeft(s, " ")
	l := yamlLine{col: len(s) - len(body) + 1}
	for strings.HasPrefix(body, "- ") || body == "-" {
		l.dash = l.col
		rest := strings.TrimLeft(strings.TrimPrefix(body, "-"), " ")
		l.col += len(body) - len(rest)
		body = rest
	}
	l.content = body
	if m := keyRE.FindStringSubmatch(body); m != nil {
		l.key = m[1]
	}
	return l
}

// yamlPath is the path of keys (and "[]" items) of the block mapping that
// holds column col of line (from 1), found by indentation: each line above
// that starts left of the current level is a parent. Flow collections
// ({…} and […]) on one line are not entered; their keys are rare to type
// at the cursor and the schema still describes them.
func (a *analysis) yamlPath(line, col int) []string {
	var rev []string
	cur := col
	for ln := line - 1; ln >= 1 && cur > 1; ln-- {
		l := splitYAMLLine(a.line(ln))
		if l.content == "" || strings.HasPrefix(l.content, "#") {
			continue
		}
		switch {
		case l.col == cur && l.dash > 0: // the first key of the item holding ours
			rev = append(rev, "[]")
			cur = l.dash
		case l.col == cur:
			// a sibling key
		case l.col < cur && l.key != "":
			rev = append(rev, l.key)
			if l.dash > 0 {
				rev = append(rev, "[]")
				cur = l.dash
			} else {
				cur = l.col
			}
		case l.col < cur && l.dash > 0:
			rev = append(rev, "[]")
			cur = l.dash
		case l.col < cur:
			return nil // a continuation of some scalar: no mapping here
		}
	}
	path := make([]string, len(rev))
	for i, s := range rev {
		path[len(rev)-1-i] = s
	}
	return path
}
