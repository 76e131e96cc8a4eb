package spec

import (
	"github.com/goccy/go-yaml/ast"

	"github.com/kgen-dev/kgen/internal/yamlnode"
)

// segments reads `segments: [q, k]`: the names of the independent row
// problems one launch of a rowwise kernel covers. Each segment gets its own
// copy of every input and output (named <segment>_<name>) and its own row
// count; the columns, params, constants and formulas are shared.
func (p *parser) segments(n ast.Node) []Name {
	if yamlnode.IsNull(n) {
		return nil
	}
	items, ok := p.doc.Seq(n, "segments", p.diags)
	if !ok {
		return nil
	}
	var out []Name
	seen := map[string]bool{}
	for _, it := range items {
		name := p.name(it, "segment name")
		if name.Name != "" && seen[name.Name] {
			p.diags.Addf(name.Pos, "segment %q is listed twice", name.Name)
			continue
		}
		seen[name.Name] = true
		out = append(out, name)
	}
	if len(out) == 1 {
		p.diags.Addf(p.doc.Pos(n), "segments lists one segment; a single-segment kernel needs no segments field")
	}
	return out
}
