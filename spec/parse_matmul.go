package spec

import (
	"regexp"
	"slices"
	"strconv"

	"github.com/goccy/go-yaml/ast"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/kgenrt"
)

// Dims are every dimension name a tensor shape may use, across the kinds.
var Dims = []string{"n", "rows", "cols", "m"}

// MatmulDims are the dimensions a matmul epilogue input may have, as they
// are spelled in `shape: [m, n]`.
var MatmulDims = []string{"m", "n"}

var matmulFields = []string{"a", "b", "then", "batch"}

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
		case "batch":
			m.BatchPos = p.doc.Pos(f.Value)
			m.Batch = p.batchNames(f.Value, "matmul batch")
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
	if m.Then != nil && len(m.B) > 1 {
		// Said here, before the formulas: the root cause of any message
		// about the second b's accumulator.
		p.diags.Addf(m.B[1].Pos, "a chain (then) takes one b: the scores are one product, acc = a·b; a gated pair cannot feed a softmax chain")
		m.B = m.B[:1]
	}
	if m.Then != nil && m.Then.Acc.Name == "" {
		m.Then.Acc = Name{Name: "acc" + strconv.Itoa(len(m.B)+1), Pos: m.Then.Pos}
	}
	return m
}

var operandFields = map[bool][]string{false: {"name", "dtype", "layout", "batch"}, true: {"name", "dtype", "layout", "acc", "batch", "quant"}}

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
			op.LayoutPos = p.doc.Pos(f.Value)
		case f.Key == "acc" && isB:
			op.Acc = p.name(f.Value, "accumulator name")
		case f.Key == "batch":
			op.BatchPos = p.doc.Pos(f.Value)
			op.Batch = p.batchDims(f.Value)
		case f.Key == "quant" && isB:
			op.Quant = p.quant(f.Value)
		default:
			p.unknownKey(f, "matmul "+what+" field", operandFields[isB])
		}
	}
	if !hasName {
		p.diags.Addf(op.Pos, "a matmul operand needs a name")
	}
	if hasName {
		op.Quant.nameTables(op.Name.Name)
	}
	return op
}

// nameTables names an affine tensor's tables <name>_scales and
// <name>_biases (mx.quantize's outputs) unless the spec names them; nil q
// or an empty name: nothing.
func (q *Quant) nameTables(name string) {
	if q == nil || name == "" {
		return
	}
	if q.Scales.Name == "" {
		q.Scales = Name{Name: name + "_scales", Pos: q.Pos}
	}
	if q.Biases.Name == "" {
		q.Biases = Name{Name: name + "_biases", Pos: q.Pos}
	}
}

var quantFields = []string{"format", "bits", "group", "scales", "biases"}

// quant reads a B's `quant:`: a ggml block format by name (q4_0, q8_0), or
// {format: affine, bits: 4, group: 64} (MLX's; mlx-lm's defaults are 4 and
// 64, which a bare `affine` means).
func (p *parser) quant(n ast.Node) *Quant {
	q := &Quant{Pos: p.doc.Pos(n)}
	if _, isMap := n.(*ast.MappingNode); !isMap {
		q.Quant = p.quantFormat(n)
		return q
	}
	fields, _ := p.doc.Fields(n, "quant ({format: affine, bits: 4, group: 64})", p.diags)
	seen := map[string]diag.Pos{}
	for _, f := range fields {
		seen[f.Key] = f.KeyPos
		switch f.Key {
		case "format":
			q.Quant = p.quantFormat(f.Value)
		case "bits":
			q.Bits = p.posInt(f.Value, "quant bits", 8)
		case "group":
			q.Group = p.posInt(f.Value, "quant group", 1024)
		case "scales":
			q.Scales = p.name(f.Value, "quant scales name")
		case "biases":
			q.Biases = p.name(f.Value, "quant biases name")
		default:
			p.unknownKey(f, "quant field", quantFields)
		}
	}
	if _, ok := seen["format"]; !ok {
		p.diags.Addf(q.Pos, "quant needs a format: one of %v", kgenrt.QuantFormats)
		return q
	}
	def := p.quantDefaults(q.Format)
	if q.Format != kgenrt.Affine {
		for _, key := range quantFields[1:] {
			if pos, ok := seen[key]; ok {
				p.diags.Addf(pos, "quant %s: a %s block fixes its layout (%d-bit codes, blocks of 32, d in the block); %s is for format affine", key, q.Format, def.Bits, key)
			}
		}
		q.Bits, q.Group = def.Bits, def.Group
		return q
	}
	if q.Bits == 0 {
		q.Bits = def.Bits
	}
	if q.Group == 0 {
		q.Group = def.Group
	}
	if err := q.Check(); err != nil {
		pos := seen["bits"]
		if slices.Contains(kgenrt.AffineBits, q.Bits) {
			pos = seen["group"]
		}
		p.diags.Addf(pos, "quant %v", err)
	}
	return q
}

// quantFormat reads a format name with its default bits and group.
func (p *parser) quantFormat(n ast.Node) kgenrt.Quant {
	f := kgenrt.ParseQuantFormat(p.enum(n, "quant format", kgenrt.QuantFormats, ""))
	return p.quantDefaults(f)
}

// quantDefaults are format f's bits and group unless the spec gives them.
func (p *parser) quantDefaults(f kgenrt.QuantFormat) kgenrt.Quant {
	if f == kgenrt.Affine {
		return kgenrt.Quant{Format: f, Bits: 4, Group: 64}
	}
	if f == kgenrt.NotQuantized {
		return kgenrt.Quant{}
	}
	return kgenrt.GGMLQuant(f)
}

// batchNames reads a matmul's or a rowwise kernel's `batch: [b, h]` (what
// names which): the launch's leading dimensions, each a size field name.
func (p *parser) batchNames(n ast.Node, what string) []Name {
	items, _ := p.doc.Seq(n, what, p.diags)
	var out []Name
	for _, it := range items {
		out = append(out, p.name(it, "batch dimension"))
	}
	if len(out) == 0 || len(out) > MaxBatchDims {
		p.diags.Addf(p.doc.Pos(n), "%s has %d dimensions: want 1 to %d (e.g. [b, h]: batch and heads)", what, len(out), MaxBatchDims)
		return nil
	}
	return out
}

// MaxIndexDims is the most dimensions an indexable input of a rowwise
// kernel takes (docs/indexing.md).
const MaxIndexDims = 4

// MaxBatchDims is the most leading dimensions a batched matmul or rowwise
// kernel takes.
const MaxBatchDims = 3

// batchDimRE is one entry of a tensor's `batch:`: a name, or a name over a
// group (a size field name or a positive integer).
var batchDimRE = regexp.MustCompile(`^\s*([a-z][a-z0-9_]*)\s*(?:/\s*(?:([a-z][a-z0-9_]*)|([1-9][0-9]{0,5})))?\s*$`)

// batchDims reads a tensor's `batch: [b, h / group]`: which of the launch's
// leading dimensions it has, each whole or grouped; [] is none (the tensor
// is shared by every batch element). ir checks the names against the
// matmul's batch.
func (p *parser) batchDims(n ast.Node) []BatchDim {
	items, ok := p.doc.Seq(n, "tensor batch", p.diags)
	if !ok {
		return nil
	}
	out := []BatchDim{}
	for _, it := range items {
		v, ok := p.str(it, "batch dimension")
		if !ok {
			continue
		}
		pos := p.doc.Pos(it)
		m := batchDimRE.FindStringSubmatch(v)
		if m == nil {
			p.diags.Addf(pos, "batch dimension %q: write a batch size (h) or a grouped one (h / group, h / 4)", v)
			continue
		}
		d := BatchDim{Size: Name{Name: m[1], Pos: pos}, Group: m[2]}
		if m[3] != "" {
			d.GroupConst, _ = strconv.Atoi(m[3])
		}
		for _, name := range []string{m[1], m[2]} {
			if why := CheckName(name); name != "" && why != "" {
				p.diags.Addf(pos, "batch dimension %q: %q %s", v, name, why)
			}
		}
		out = append(out, d)
	}
	return out
}

// dims reads an input's shape as a list of dimension names; ir checks
// which of them the kernel's kind takes.
func (p *parser) dims(n ast.Node) []string {
	items, _ := p.doc.Seq(n, "input shape", p.diags)
	var out []string
	names := Dims // a name of another kind's is the IR's to explain
	switch p.kind {
	case Matmul:
		names = MatmulDims
	case Rowwise:
		names = []string{"rows", "cols"}
	}
	for _, it := range items {
		v, ok := p.str(it, "dimension")
		if !ok {
			return nil
		}
		if p.kind == Rowwise && !slices.Contains(Dims, v) {
			// An indexable input's own dimension (docs/indexing.md): a
			// size field of the args struct, named like a value.
			if why := CheckName(v); why != "" {
				p.diags.Addf(p.doc.Pos(it), "dimension %q %s", v, why)
				return nil
			}
			out = append(out, v)
			continue
		}
		if !slices.Contains(Dims, v) {
			p.diags.Addf(p.doc.Pos(it), "unknown dimension %q: want one of %v%s", v, names, diag.Suggest(v, names))
			return nil
		}
		out = append(out, v)
	}
	if p.kind == Rowwise && len(out) > 2 && len(out) <= MaxIndexDims {
		return out // an indexable input ([heads, seq, cols]); ir checks it
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
