package spec

import (
	"github.com/goccy/go-yaml/ast"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/internal/yamlnode"
)

// Backward is the spec's `backward:` field: kgen derives a second kernel,
// <kernel>_backward, that writes the gradients of the forward's inputs
// from its inputs and its outputs' gradients (package backward).
type Backward struct {
	// Pos is where the field is written: every position in the derived
	// kernel points here.
	Pos diag.Pos
	// Of names the inputs and float params to differentiate (`backward:
	// [x, w, scale]`); nil for `backward: true`, every input of a
	// floating-point dtype (params only when listed).
	Of []Name
}

func (p *parser) backward(key diag.Pos, n ast.Node) *Backward {
	if b, ok := n.(*ast.BoolNode); ok {
		if !b.Value {
			return nil
		}
		return &Backward{Pos: key}
	}
	if yamlnode.IsNull(n) {
		return nil
	}
	if _, isSeq := n.(*ast.SequenceNode); !isSeq {
		p.diags.Addf(p.doc.Pos(n), "backward must be true, false or a list of inputs and params, not %s", yamlnode.Describe(n))
		return nil
	}
	items, ok := p.doc.Seq(n, "backward", p.diags)
	if !ok {
		return nil
	}
	bw := &Backward{Pos: key}
	seen := map[string]bool{}
	for _, it := range items {
		name := p.name(it, "input to differentiate")
		if name.Name == "" {
			continue
		}
		if seen[name.Name] {
			p.diags.Addf(name.Pos, "backward lists %q twice", name.Name)
			continue
		}
		seen[name.Name] = true
		bw.Of = append(bw.Of, name)
	}
	if len(bw.Of) == 0 {
		p.diags.Addf(p.doc.Pos(n), "backward lists no input or param; write backward: true for every input")
		return nil
	}
	return bw
}
