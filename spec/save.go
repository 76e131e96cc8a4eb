package spec

import (
	"slices"

	"github.com/goccy/go-yaml/ast"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/internal/yamlnode"
)

// SavedSuffix names a saved let's output: save: [inv] writes inv_saved.
const SavedSuffix = "_saved"

// save reads `save: [inv, mean]`: per-row lets the forward also writes, as
// f32 [rows] outputs <let>_saved, so that the derived backward reads them
// instead of recomputing their row reductions (docs/backward.md).
func (p *parser) save(n ast.Node) []Name {
	items, ok := p.doc.Seq(n, "save", p.diags)
	if !ok {
		return nil
	}
	var out []Name
	seen := map[string]bool{}
	for _, it := range items {
		name := p.name(it, "let to save")
		if name.Name == "" {
			continue
		}
		if seen[name.Name] {
			p.diags.Addf(name.Pos, "save lists %q twice", name.Name)
			continue
		}
		seen[name.Name] = true
		out = append(out, name)
	}
	return out
}

// applySave checks save against the spec and adds each saved let's output,
// {name: <let>_saved, dtype: f32, formula: <let>}, after the outputs; the
// scheduler makes it [rows] (a per-row value) or refuses a per-element
// let (backward.Derive says so at the name).
func (p *parser) applySave() {
	s := p.spec
	if len(s.Save) == 0 || slices.Contains(s.Damaged, "let") || slices.Contains(s.Damaged, "outputs") {
		return
	}
	if s.Kind != Rowwise {
		p.diags.Addf(s.Save[0].Pos, "save keeps per-row values: it is for rowwise kernels, not %s ones", s.Kind)
		return
	}
	if s.Backward == nil {
		p.diags.Addf(s.Save[0].Pos, "save keeps values for the backward kernel: it needs backward: true or a list")
		return
	}
	lets, taken := map[string]bool{}, map[string]bool{}
	for _, f := range s.Let {
		lets[f.Name.Name] = true
	}
	for _, f := range s.Outputs {
		taken[f.Name.Name] = true
	}
	for _, in := range s.Inputs {
		taken[in.Name.Name] = true
	}
	for _, n := range s.Save {
		switch out := n.Name + SavedSuffix; {
		case !lets[n.Name]:
			p.diags.Addf(n.Pos, "save lists %q, which is not a let", n.Name)
		case taken[out] || lets[out]:
			p.diags.Addf(n.Pos, "saving %s writes an output %s, a name the spec already uses; rename it", n.Name, out)
		default:
			s.Outputs = append(s.Outputs, Formula{Name: Name{Name: out, Pos: n.Pos}, DType: TypeRef{Type: dtype.F32, Pos: n.Pos},
				Text: n.Name, Map: yamlnode.Fixed(n.Pos)})
		}
	}
}

// IsSaved reports whether output name is a saved let's (save:).
func (s *Spec) IsSaved(name string) bool {
	for _, n := range s.Save {
		if n.Name+SavedSuffix == name {
			return true
		}
	}
	return false
}
