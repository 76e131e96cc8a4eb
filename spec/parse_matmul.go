package spec

import (
	"strconv"

	"github.com/goccy/go-yaml/ast"

	"github.com/kgen-dev/kgen/dtype"
)

// Dims are every dimension name a tensor shape may use, across the kinds.
var Dims = []string{"n", "rows", "cols", "m"}

// MatmulDims are the dimensions a matmul epilogue input may have, as they
// are spelled in `shape: [m, n]`.
var MatmulDims = []string{"m", "n"}

var matmulFields = []string{"a", "b", "then"}

// matmul reads the `matmul:` field: {a: x, b: w} or long operand forms,
// b a list of two for a gated matmul.
func (p *parser) matmul(n ast.Node) *MatmulSpec {
	m := &MatmulSpec{Pos: p.doc.Pos(n)}
	fields, ok := p.doc.Fields(n, "matmul ({a: x, b: w})", p.diags)
	if !ok {
		return m
	}
	seen := map[string]bool{}
	for _, f := range fields {
		seen[f.Key] = true
		switch f.Key {
		case "a":
			m.A = p.operand(f.Value, "a", false)
		case "b":
			if items, isSeq := f.Value.(*ast.SequenceNode); isSeq {
				if len(items.Values) < 1 || len(items.Values) > 2 {
					p.diags.Addf(p.doc.Pos(f.Value), "matmul b takes one operand, or two for a gated matmul (acc and acc2 over the same a); got %d", len(items.Values))
				}
				for i, it := range items.Values {
					if i < 2 { // the rest were reported
						m.B = append(m.B, p.operand(it, "b", true))
					}
				}
				continue
			}
			m.B = []Operand{p.operand(f.Value, "b", true)}
		case "then":
			then := p.operand(f.Value, "then", true)
			m.Then = &then
		default:
			p.unknownKey(f, "matmul field", matmulFields)
		}
	}
	for _, req := range matmulFields[:2] {
		if !seen[req] {
			p.diags.Addf(m.Pos, "matmul needs %q (the %s operand)", req, map[string]string{"a": "[m, k]", "b": "[k, n]"}[req])
		}
	}
	defaults := []string{"acc", "acc2"}
	for i := range m.B {
		if m.B[i].Acc.Name == "" && i < len(defaults) {
			m.B[i].Acc = Name{Name: defaults[i], Pos: m.B[i].Pos}
		}
	}
	if m.Then != nil && m.Then.Acc.Name == "" { // acc2 after one b, acc3 after a gated pair
		m.Then.Acc = Name{Name: "acc" + strconv.Itoa(len(m.B)+1), Pos: m.Then.Pos}
	}
	return m
}

var operandFields = map[bool][]string{false: {"name", "dtype", "layout"}, true: {"name", "dtype", "layout", "acc"}}

// operand reads `x` or {name: x, dtype: f32, layout: col_major[, acc: g]}.
func (p *parser) operand(n ast.Node, what string, isB bool) Operand {
	if _, isMap := n.(*ast.MappingNode); !isMap {
		return Operand{Name: p.name(n, "matmul "+what+" name")}
	}
	op := Operand{Name: Name{Pos: p.doc.Pos(n)}}
	fields, _ := p.doc.Fields(n, "a matmul operand", p.diags)
	hasName := false
	for _, f := range fields {
		switch {
		case f.Key == "name":
			op.Name, hasName = p.name(f.Value, "matmul "+what+" name"), true
		case f.Key == "dtype":
			op.DType = p.dtype(f.Value, "operand dtype", dtype.Floats)
		case f.Key == "layout":
			op.ColMajor = p.enum(f.Value, "layout", []string{"row_major", "col_major"}, "row_major") == "col_major"
		case f.Key == "acc" && isB:
			op.Acc = p.name(f.Value, "accumulator name")
		default:
			p.unknownKey(f, "matmul "+what+" field", operandFields[isB])
		}
	}
	if !hasName {
		p.diags.Addf(op.Pos, "a matmul operand needs a name")
	}
	return op
}

// dims reads an input's shape as a list of dimension names; ir checks
// which of them the kernel's kind takes.
func (p *parser) dims(n ast.Node) []string {
	items, _ := p.doc.Seq(n, "input shape", p.diags)
	var out []string
	for _, it := range items {
		v := p.enum(it, "dimension", Dims, "")
		if v == "" {
			return nil
		}
		out = append(out, v)
	}
	if len(out) == 0 || len(out) > 2 {
		p.diags.Addf(p.doc.Pos(n), "input shape has %d dimensions: want one or two (e.g. [rows, cols], [cols], [rows]; matmul [m, n], [n], [m])", len(out))
		return nil
	}
	return out
}

var tileFields = []string{"bm", "bn", "bk", "wm", "wn"}

// tile reads {bm: 32, bn: 32, bk: 16, wm: 2, wn: 2}; the IR checks that
// the numbers fit together.
func (p *parser) tile(n ast.Node) *Tile {
	t := &Tile{Pos: p.doc.Pos(n)}
	fields, ok := p.doc.Fields(n, "tile ({bm: 32, bn: 32, bk: 16, wm: 2, wn: 2})", p.diags)
	if !ok {
		return t
	}
	for _, f := range fields {
		v := p.posInt(f.Value, "tile "+f.Key, 256)
		if v == 0 {
			continue
		}
		switch f.Key {
		case "bm":
			t.BM = v
		case "bn":
			t.BN = v
		case "bk":
			t.BK = v
		case "wm":
			t.WM = v
		case "wn":
			t.WN = v
		default:
			p.unknownKey(f, "tile field", tileFields)
		}
	}
	return t
}
