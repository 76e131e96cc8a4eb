package spec

import (
	"github.com/goccy/go-yaml/ast"
	"github.com/kgen-dev/kgen/diag"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/internal/yamlnode"
)

var inputFields = []string{"name", "dtype", "shape", "batch", "quant"}

func (p *parser) inputs(n ast.Node) []Input {
	if yamlnode.IsNull(n) {
		return nil
	}
	items, ok := p.doc.Seq(n, "inputs", p.diags)
	if !ok {
		return nil
	}
	var out []Input
	for _, it := range items {
		if _, isMap := it.(*ast.MappingNode); !isMap {
			out = append(out, Input{Name: p.name(it, "input name")})
			continue
		}
		out = append(out, p.longInput(it))
	}
	return out
}

// longInput reads the {name, dtype, shape} form of an input.
func (p *parser) longInput(n ast.Node) Input {
	in := Input{Name: Name{Pos: p.doc.Pos(n)}}
	fields, _ := p.doc.Fields(n, "an input", p.diags)
	hasName := false
	for _, f := range fields {
		switch f.Key {
		case "name":
			in.Name, hasName = p.name(f.Value, "input name"), true
		case "dtype":
			in.DType = p.dtype(f.Value, "input dtype", dtype.Storage)
		case "shape":
			in.DimsPos = p.doc.Pos(f.Value)
			if _, isSeq := f.Value.(*ast.SequenceNode); isSeq {
				in.Dims = p.dims(f.Value)
				continue
			}
			// `row` is the old spelling of [cols], kept so existing specs load.
			if v, ok := p.str(f.Value, "input shape"); ok && v == "row" {
				in.Dims = []string{"cols"}
			} else if ok {
				p.diags.Addf(in.DimsPos, "unknown input shape %q: write its dimensions as a list, e.g. [rows, cols], [cols] or [rows] (rowwise), [n] (elementwise), [m, n], [n] or [m] (matmul)", v)
			}
		case "batch":
			in.BatchPos = p.doc.Pos(f.Value)
			in.Batch = p.batchDims(f.Value)
		case "quant":
			in.Quant = p.quant(f.Value)
		default:
			p.unknownKey(f, "input field", inputFields)
		}
	}
	if !hasName {
		p.diags.Addf(p.doc.Pos(n), "an input needs a name")
	}
	in.Quant.nameTables(in.Name.Name)
	return in
}

var paramFields = []string{"name", "type", "example"}

func (p *parser) params(n ast.Node) []Param {
	if yamlnode.IsNull(n) {
		return nil
	}
	items, ok := p.doc.Seq(n, "params", p.diags)
	if !ok {
		return nil
	}
	var out []Param
	for _, it := range items {
		fields, ok := p.doc.Fields(it, "a param ({name: eps, type: f32})", p.diags)
		if !ok {
			if name, isStr := it.(*ast.StringNode); isStr {
				// Declare it anyway, so formulas using it get no second error.
				out = append(out, Param{Name: Name{Name: name.Value, Pos: p.doc.Pos(it)}})
			}
			continue
		}
		itemPos := p.doc.Pos(it)
		par := Param{Name: Name{Pos: itemPos}}
		hasName, hasType := false, false
		for _, f := range fields {
			switch f.Key {
			case "name":
				par.Name, hasName = p.name(f.Value, "param name"), true
			case "type":
				par.Type, hasType = p.dtype(f.Value, "param type", dtype.Scalars), true
			case "example":
				if v, text, ok := p.number(f.Value, "param example"); ok {
					par.Example, par.ExampleText = v, text
				}
			default:
				p.unknownKey(f, "param field", paramFields)
			}
		}
		if par.ExampleText != "" && par.Type.Type != dtype.F32 && par.Example != float64(int64(par.Example)) {
			p.diags.Addf(itemPos, "param %s: example %s is not an integer, but the param is %s", par.Name.Name, par.ExampleText, par.Type.Type)
		}
		switch {
		case !hasName && !hasType:
			p.diags.Addf(itemPos, "a param needs a name and a type (f32, i32 or u32)")
		case !hasName:
			p.diags.Addf(itemPos, "a param needs a name")
		case !hasType:
			p.diags.Addf(itemPos, "param %s needs a type (f32, i32 or u32)", par.Name.Name)
		}
		out = append(out, par)
	}
	return out
}

func (p *parser) constants(n ast.Node) []Constant {
	if yamlnode.IsNull(n) {
		return nil
	}
	fields, ok := p.doc.Fields(n, "constants", p.diags)
	if !ok {
		return nil
	}
	var out []Constant
	for _, f := range fields {
		c := Constant{Name: Name{Name: f.Key, Pos: f.KeyPos}}
		if why := CheckName(f.Key); why != "" {
			p.diags.Addf(f.KeyPos, "constant name %q %s", f.Key, why)
		}
		v, text, ok := p.number(f.Value, "constant "+f.Key)
		if ok {
			c.Value, c.Text = v, text
		}
		// Declared even without a value (Text ""), so formulas using it
		// get no second error.
		out = append(out, c)
	}
	return out
}

// formulas reads `let` or `outputs`: a list of one-key maps, name: formula.
func (p *parser) formulas(n ast.Node, what string) []Formula {
	if yamlnode.IsNull(n) {
		return nil
	}
	items, ok := p.doc.Seq(n, what, p.diags)
	if !ok {
		return nil
	}
	var out []Formula
	for _, it := range items {
		fields, ok := p.doc.Fields(it, what+" entries", p.diags)
		if !ok {
			continue
		}
		if what == "outputs" && isLongOutput(fields) {
			if form, ok := p.longOutput(it, fields); ok {
				out = append(out, form)
			}
			continue
		}
		if len(fields) != 1 {
			p.diags.Addf(p.doc.Pos(it), "each %s entry is a one-key map (name: formula); this one has %d keys", what, len(fields))
			continue
		}
		f := fields[0]
		form := Formula{Name: Name{Name: f.Key, Pos: f.KeyPos}}
		if why := CheckName(f.Key); why != "" {
			p.diags.Addf(f.KeyPos, "%s name %q %s", what, f.Key, why)
		}
		text, isScalar := yamlnode.Scalar(f.Value)
		if !isScalar || text == "" {
			pos := p.doc.Pos(f.Value)
			if yamlnode.IsNull(f.Value) { // no value token: point at the name
				pos = f.KeyPos
			}
			p.diags.Addf(pos, "%s %s needs a formula, not %s", what, f.Key, yamlnode.Describe(f.Value))
			continue
		}
		form.Text, form.Map = text, p.doc.MapScalar(f.Value)
		out = append(out, form)
	}
	return out
}

func (p *parser) ports(n ast.Node) [NumBackends]Port {
	var out [NumBackends]Port
	fields, ok := p.doc.Fields(n, "ports", p.diags)
	if !ok {
		return out
	}
	for _, f := range fields {
		b := -1
		for i, name := range BackendNames() {
			if f.Key == name {
				b = i
			}
		}
		if b < 0 {
			p.unknownKey(f, "port backend", BackendNames())
			continue
		}
		out[b].Pos = f.KeyPos
		if yamlnode.IsNull(f.Value) {
			continue
		}
		if v, _ := yamlnode.Scalar(f.Value); v != "generated" {
			p.diags.Addf(p.doc.Pos(f.Value), "port %s must be `generated` or null, not %q", f.Key, v)
			continue
		}
		out[b].Generated = true
	}
	return out
}

var toleranceFields = []string{"abs", "rel"}

func (p *parser) tolerances(n ast.Node) []Tolerance {
	fields, ok := p.doc.Fields(n, "tolerance", p.diags)
	if !ok {
		return nil
	}
	var out []Tolerance
	for _, f := range fields {
		t := Tolerance{DType: TypeRef{Type: dtype.Parse(f.Key), Pos: f.KeyPos}}
		if !t.DType.Type.IsFloat() {
			p.unknownKey(f, "tolerance dtype", dtype.Names(dtype.Floats))
			continue
		}
		inner, ok := p.doc.Fields(f.Value, "tolerance "+f.Key+" ({abs: 1e-2, rel: 1e-2})", p.diags)
		if !ok {
			continue
		}
		for _, g := range inner {
			v, _, ok := p.number(g.Value, "tolerance "+g.Key)
			if ok && v < 0 {
				p.diags.Addf(p.doc.Pos(g.Value), "tolerance %s must not be negative", g.Key)
			}
			switch g.Key {
			case "abs":
				t.Abs = v
			case "rel":
				t.Rel = v
			default:
				p.unknownKey(g, "tolerance field", toleranceFields)
			}
		}
		out = append(out, t)
	}
	return out
}

func (p *parser) unknownKey(f yamlnode.Field, what string, known []string) {
	p.diags.Addf(f.KeyPos, "unknown %s %q: want one of %v%s", what, f.Key, known, diag.Suggest(f.Key, known))
}

var outputFields = []string{"name", "dtype", "shape", "at", "formula"}

// isLongOutput reports whether an outputs entry is the long form
// {name, dtype, formula} rather than the one-key map name: formula.
func isLongOutput(fields []yamlnode.Field) bool {
	for _, f := range fields {
		if f.Key == "formula" {
			return true
		}
	}
	return false
}

// coordinates reads a positioned write's at: [e1, …], one formula per
// dimension.
func (p *parser) coordinates(n ast.Node) []Formula {
	items, ok := p.doc.Seq(n, "at (the coordinates an element is written at, e.g. [row / n, pos + row % n, col])", p.diags)
	if !ok {
		return nil
	}
	var out []Formula
	for _, it := range items {
		text, isScalar := yamlnode.Scalar(it)
		if !isScalar || text == "" {
			p.diags.Addf(p.doc.Pos(it), "a coordinate of at is an integer formula, not %s", yamlnode.Describe(it))
			return nil
		}
		out = append(out, Formula{Name: Name{Pos: p.doc.Pos(it)}, Text: text, Map: p.doc.MapScalar(it)})
	}
	return out
}

// longOutput reads {name: q, dtype: i8, formula: …}: an output stored in a
// pinned dtype, independent of the variant (an integer dtype takes an
// integer formula).
func (p *parser) longOutput(n ast.Node, fields []yamlnode.Field) (Formula, bool) {
	form := Formula{Name: Name{Pos: p.doc.Pos(n)}}
	hasName, hasFormula := false, false
	for _, f := range fields {
		switch f.Key {
		case "name":
			form.Name, hasName = p.name(f.Value, "output name"), true
		case "dtype":
			form.DType = p.dtype(f.Value, "output dtype", dtype.Storage)
		case "formula":
			text, isScalar := yamlnode.Scalar(f.Value)
			if !isScalar || text == "" {
				p.diags.Addf(p.doc.Pos(f.Value), "output formula needs a formula, not %s", yamlnode.Describe(f.Value))
				continue
			}
			form.Text, form.Map, hasFormula = text, p.doc.MapScalar(f.Value), true
		case "shape":
			form.DimsPos = p.doc.Pos(f.Value)
			if _, isSeq := f.Value.(*ast.SequenceNode); !isSeq {
				p.diags.Addf(form.DimsPos, "an output's shape is a list of its dimensions, e.g. [heads, seq, cols]")
				continue
			}
			form.Dims = p.dims(f.Value)
		case "at":
			form.AtPos = p.doc.Pos(f.Value)
			form.At = p.coordinates(f.Value)
		case "quant":
			p.diags.Addf(f.KeyPos, "an output cannot be quantized: kernels write plain elements, and quant is for a rowwise kernel's [rows, cols] inputs and a matmul's b (docs/quant.md)")
		default:
			p.unknownKey(f, "output field", outputFields)
		}
	}
	if form.AtPos.Line > 0 && form.DimsPos.Line == 0 {
		p.diags.Addf(form.AtPos, "output %s: a positioned write needs the output's shape (shape: [heads, seq, cols]) beside at", form.Name.Name)
	}
	if form.DimsPos.Line > 0 && form.AtPos.Line == 0 {
		p.diags.Addf(form.DimsPos, "output %s: an output with a shape of its own is written at computed coordinates: give at (at: [row, col] …), one per dimension", form.Name.Name)
	}
	if !hasName {
		p.diags.Addf(p.doc.Pos(n), "an output needs a name")
	}
	return form, hasName && hasFormula
}
