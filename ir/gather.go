package ir

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/expr"
	"github.com/kgen-dev/kgen/spec"
)

// Indexed reads (gathers) of rowwise kernels, docs/indexing.md.
//
// A formula reads an input at computed coordinates with name[e1, …, eN],
// one integer per dimension. A coordinate outside [0, dim) — negative,
// past the end, i32's extremes — makes the read yield 0, on every backend
// and in the Go reference: no access ever leaves the tensor. The
// coordinates are computed where the element's inputs are loaded, not in
// the stage functions, so they may use only what the loops hold: integer
// literals, row, col, rows, cols, integer params, integer [rows] inputs
// (ids, or ids[row]) and integer lets of those, which the IR inlines.

// Gather is one distinct indexed read of a kernel (one input at one set of
// coordinates); every formula reading the same input at the same
// coordinates shares it.
type Gather struct {
	Input int     // index among the spec's inputs
	At    []*Expr // the coordinates, one per dimension of the input, lets inlined
	// Row marks the contiguous form: the last coordinate is col over a last
	// dimension cols, the others do not use col. The row's base is computed
	// once per row and the loads keep the row loops' vectors; an
	// out-of-range row reads zeros.
	Row bool
}

// GatherName is the stage parameter (and loop local) holding gather g's
// element.
func GatherName(g int) string { return fmt.Sprintf("kgen_take%d", g) }

// isIndexable reports whether an input's shape makes it indexable: it
// names a dimension other than rows and cols, so its size is independent
// of the launch's and formulas read it only by subscript.
func isIndexable(dims []string) bool {
	for _, d := range dims {
		// n and m are other kinds' sizes: refused as such; <segment>_rows
		// is a segment's row count (a kernel with segments has no own
		// dimensions, and no own dimension is named so: nameTaken).
		if !slices.Contains(spec.Dims, d) && !strings.HasSuffix(d, "_rows") {
			return true
		}
	}
	return false
}

// IsIndexable reports whether input binding b is indexable (isIndexable).
func (b Binding) IsIndexable() bool { return b.Role == Input && isIndexable(b.Shape) }

// indexDimFields lists the size fields of the indexable inputs' own
// dimensions, in order of first use, refusing a dimension named like a
// param or the launch's derived field, and indexable inputs in a kernel
// with segments.
func indexDimFields(s *spec.Spec, diags *diag.List) []Field {
	var out []Field
	seen := map[string]bool{"rows": true, "cols": true}
	tensors := append([]spec.Input(nil), s.Inputs...)
	for _, o := range s.Outputs { // positioned writes' shapes (scatter.go)
		tensors = append(tensors, spec.Input{Name: o.Name, Dims: o.Dims, DimsPos: o.DimsPos})
	}
	for _, in := range tensors {
		if !isIndexable(in.Dims) {
			continue
		}
		if len(s.Segments) > 0 {
			diags.Addf(in.DimsPos, "input %s: indexable inputs (a dimension other than rows and cols) are not offered with segments", in.Name.Name)
			return nil
		}
		for _, d := range in.Dims {
			if seen[d] {
				continue
			}
			seen[d] = true
			if what := nameTaken(s, d); what != "" {
				diags.Addf(in.DimsPos, "%s: dimension %s is already the name of %s; a dimension is a size field of its own (the Go launcher's local too): give it another name", in.Name.Name, d, what)
				continue
			}
			out = append(out, Field{Name: d, Type: dtype.U32, Size: true, Dim: true})
		}
	}
	return out
}

// nameTaken says what in spec s is already named n (a param, tensor,
// constant, let or the derived size field), or "".
func nameTaken(s *spec.Spec, n string) string {
	if n == "rows_per_group" {
		return "the derived size field"
	}
	if strings.HasSuffix(n, "_rows") {
		return "a segment's row count (names ending in _rows are kept for them)"
	}
	for _, p := range s.Params {
		if p.Name.Name == n {
			return "a param"
		}
	}
	for _, in := range s.Inputs {
		if in.Name.Name == n {
			return "an input"
		}
	}
	for _, c := range s.Constants {
		if c.Name.Name == n {
			return "a constant"
		}
	}
	for _, f := range append(append([]spec.Formula(nil), s.Let...), s.Outputs...) {
		if f.Name.Name == n {
			return "a let or output"
		}
	}
	return ""
}

// indexed resolves the tensor a subscript names: an input (any shape).
func (c *formulaChecker) indexed(name string) (expr.Type, string) {
	sym, ok := c.symbols[name]
	if c.k.Kind != Rowwise {
		c.used[name] = true
		return expr.Unknown, expr.IndexKindMessage(name, c.k.Kind.String())
	}
	if !ok || sym.kind != RefInput {
		if ok {
			c.used[name] = true
			return expr.Unknown, fmt.Sprintf("%s[…] subscripts a %s; only inputs are read by subscript", name, sym.what)
		}
		return c.resolve(name, 0) // undefined: the usual message
	}
	c.used[name] = true
	return sym.typ, ""
}

// bareIndexable explains a plain use of an indexable input's name.
func (c *formulaChecker) bareIndexable(name string) string {
	sym, ok := c.symbols[name]
	if !ok || sym.kind != RefInput || c.k.Kind != Rowwise {
		return ""
	}
	in := c.s.Inputs[sym.index]
	if !isIndexable(in.Dims) {
		return ""
	}
	eg := make([]string, len(in.Dims))
	for i := range eg {
		eg[i] = "i" + fmt.Sprint(i)
	}
	if in.Dims[len(in.Dims)-1] == "cols" {
		eg[len(eg)-1] = "col"
	}
	return fmt.Sprintf("%s is indexable (shape [%s], independent of the launch's rows and cols): read it by subscript, one integer per dimension, e.g. %s[%s]",
		name, strings.Join(in.Dims, ", "), name, strings.Join(eg, ", "))
}

// checkSubscripts checks every name[…] of formula f: one coordinate per
// dimension of the input, and coordinates the loops can compute (see the
// package comment). false when one was refused (reported).
func (c *formulaChecker) checkSubscripts(f spec.Formula, tree expr.Node) bool {
	ok := true
	expr.Walk(tree, func(n expr.Node) {
		ix, isIndex := n.(*expr.Index)
		if !isIndex {
			return
		}
		sym := c.symbols[ix.Name]
		if sym == nil || sym.kind != RefInput || c.k.Kind != Rowwise {
			ok = false // reported by the checker
			return
		}
		in := c.s.Inputs[sym.index]
		dims := in.Dims
		if dims == nil {
			dims = []string{"rows", "cols"}
		}
		if len(ix.Args) != len(dims) {
			c.diags.Addf(f.Map.At(ix.Off), "%s has %d dimension%s [%s]: its subscript takes %d coordinate%s, got %d",
				ix.Name, len(dims), pluralS(len(dims)), strings.Join(dims, ", "), len(dims), pluralS(len(dims)), len(ix.Args))
			ok = false
			return
		}
		for _, a := range ix.Args {
			if !c.convert(a).Int {
				ok = false // not an integer: reported by the checker
				return
			}
			if why := c.coordinateUses(a, map[string]bool{}); why != "" {
				c.diags.Addf(f.Map.At(a.Offset()), "a coordinate of %s[…] may use integer literals, row, col, rows, cols, integer params, integer [rows] inputs and lets of those; not %s", ix.Name, why)
				ok = false
				return
			}
		}
	})
	return ok
}

// coordinateUses says what in coordinate n the loops cannot compute,
// following lets; "" when nothing.
func (c *formulaChecker) coordinateUses(n expr.Node, seen map[string]bool) string {
	why := ""
	expr.Walk(n, func(n expr.Node) {
		if why != "" {
			return
		}
		switch v := n.(type) {
		case *expr.Number:
			if !v.Int {
				why = "the number " + v.Text
			}
		case *expr.Index:
			if !c.rowsIdentity(v) {
				why = "another subscript (" + expr.String(v) + ")"
			}
		case *expr.Call:
			if _, isConv := expr.IntConversions[v.Fn]; !isConv && v.Fn != "select" {
				why = v.Fn + "(…)"
			}
		case *expr.Ident:
			sym := c.symbols[v.Name]
			switch {
			case sym == nil:
			case sym.kind == RefInput:
				if in := c.s.Inputs[sym.index]; !(len(in.Dims) == 1 && in.Dims[0] == "rows" && in.DType.Type.IsInt()) {
					why = "input " + v.Name + " (only integer [rows] inputs, one value per row)"
				}
			case sym.kind == RefConstant:
				why = "constant " + v.Name + " (a number)"
			case sym.kind == RefLet && sym.index >= 0 && !seen[v.Name]:
				seen[v.Name] = true
				if t := c.trees[sym.index]; t != nil {
					if inner := c.coordinateUses(t, seen); inner != "" {
						why = "let " + v.Name + ", which uses " + inner
					}
				}
			}
		}
	})
	return why
}

// rowsIdentity reports whether ix is x[row] of a [rows] input: the row's
// own value, the same as x.
func (c *formulaChecker) rowsIdentity(ix *expr.Index) bool {
	sym := c.symbols[ix.Name]
	if sym == nil || sym.kind != RefInput || len(ix.Args) != 1 {
		return false
	}
	in := c.s.Inputs[sym.index]
	id, isIdent := ix.Args[0].(*expr.Ident)
	return len(in.Dims) == 1 && in.Dims[0] == "rows" && isIdent && id.Name == "row" && c.symbols["row"] != nil && c.symbols["row"].kind == RefIndex
}

// convertIndex converts a checked subscript: x[row] of a [rows] input is
// x; any other is a RefGather whose Index the schedule assigns
// (collectGathers).
func (c *formulaChecker) convertIndex(v *expr.Index) *Expr {
	sym := c.symbols[v.Name]
	if c.rowsIdentity(v) {
		return &Expr{Op: OpRef, Ref: RefInput, Name: v.Name, Index: sym.index, Int: sym.typ == expr.Int}
	}
	e := &Expr{Op: OpRef, Ref: RefGather, Name: v.Name, Index: -1, Int: sym.typ == expr.Int, Text: fmt.Sprint(sym.index)}
	for _, a := range v.Args {
		e.At = append(e.At, c.convert(a))
	}
	return e
}

// collectGathers gives each distinct (input, coordinates) read of the
// kernel's steps its index and stage name, inlining lets in the
// coordinates, and records them in r.Gathers.
func collectGathers(k *Kernel, r *Rows) {
	keys := map[string]int{}
	for _, st := range k.Steps {
		Walk(st.Expr, func(e *Expr) {
			if e.Op != OpRef || e.Ref != RefGather || e.Index >= 0 {
				return
			}
			var in int
			fmt.Sscan(e.Text, &in)
			at := make([]*Expr, len(e.At))
			for i, a := range e.At {
				at[i] = inlineLets(k, a)
			}
			key := fmt.Sprint(in)
			for _, a := range at {
				key += "," + k.FormatExpr(a)
			}
			g, ok := keys[key]
			if !ok {
				g = len(r.Gathers)
				keys[key] = g
				// A packed input's element is a scalar read (quant_rows.go).
				r.Gathers = append(r.Gathers, Gather{Input: in, At: at, Row: rowGather(k.Bindings[in].Shape, at) && k.Bindings[in].Quant == nil})
				k.Bindings[in].Indexed = true
			}
			e.Index, e.At, e.Name = g, at, GatherName(g)
		})
	}
}

// rowGather reports whether coordinates at of a tensor of shape sh take
// whole rows (Gather.Row).
func rowGather(sh Shape, at []*Expr) bool {
	last := at[len(at)-1]
	if sh[len(sh)-1] != "cols" || last.Op != OpRef || last.Ref != RefIndex || last.Name != "col" {
		return false
	}
	for _, a := range at[:len(at)-1] {
		if usesCol(a) {
			return false
		}
	}
	return true
}

// usesCol reports whether e reads col.
func usesCol(e *Expr) bool {
	found := false
	Walk(e, func(x *Expr) { found = found || x.Op == OpRef && x.Ref == RefIndex && x.Name == "col" })
	return found
}

// inlineLets copies e with every let replaced by its own (inlined) formula.
func inlineLets(k *Kernel, e *Expr) *Expr {
	if e.Op == OpRef && e.Ref == RefLet && e.Index >= 0 && e.Index < len(k.Steps) {
		return inlineLets(k, k.Steps[e.Index].Expr)
	}
	c := *e
	c.Args = nil
	for _, a := range e.Args {
		c.Args = append(c.Args, inlineLets(k, a))
	}
	return &c
}

// GatherReads lists the gathers pass p (1..Passes+1) reads.
func (r *Rows) GatherReads(k *Kernel, p int) []int {
	var targets []*Expr
	if p <= r.Passes {
		for _, red := range r.Reductions {
			if red.Level == p {
				targets = append(targets, red.Arg)
			}
		}
	} else {
		for i, st := range k.Steps {
			if st.Output && !r.Info[i].PerRow {
				targets = append(targets, st.Expr)
			}
		}
	}
	d := k.ElementDeps(targets)
	var out []int
	for g := range r.Gathers {
		if d.Gathers[g] {
			out = append(out, g)
		}
	}
	return out
}

// GatherDims is the shape of gather g's tensor: its size fields.
func (k *Kernel) GatherDims(g int) Shape {
	return k.SegmentBindings(0, Input)[k.Rows().Gathers[g].Input].Shape
}

// formatIndex writes a gather as its source form, name[c1, …].
func (k *Kernel) formatIndex(e *Expr) string {
	var at []string
	for _, a := range e.At {
		at = append(at, k.FormatExpr(a))
	}
	name := e.Name
	if r, ok := k.Schedule.(*Rows); ok && e.Index >= 0 && e.Index < len(r.Gathers) {
		name = k.FormulaName(k.SegmentBindings(0, Input)[r.Gathers[e.Index].Input])
	}
	return name + "[" + strings.Join(at, ", ") + "]"
}

// pluralS is "s" unless n is 1.
func pluralS(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// SpellRefs copies coordinate e with every name replaced by spell's
// spelling of it in the emitter's loop scope (the loops, not the stage
// functions, compute coordinates): RefIndex by name, RefParam and RefInput
// (an integer [rows] input) by index. The copy is for rendering only.
func SpellRefs(e *Expr, spell func(ref RefKind, name string, index int) string) *Expr {
	c := *e
	if c.Op == OpRef {
		c.Name = spell(c.Ref, c.Name, c.Index)
	}
	c.Args = nil
	for _, a := range e.Args {
		c.Args = append(c.Args, SpellRefs(a, spell))
	}
	return &c
}

// setGathers reads each gather's element at the current column into the
// bound environment: the input's value at the coordinates, or 0 outside
// the tensor (an integer input held exactly, like its direct reads).
func (e *rowEval) setGathers() {
	if e.rows == nil || len(e.rows.Gathers) == 0 {
		return
	}
	if e.env.gathers == nil {
		e.env.gathers = make([]float64, len(e.rows.Gathers))
	}
	if e.env.gatherErrs == nil {
		e.env.gatherErrs = make([]float64, len(e.rows.Gathers))
	}
	ins := e.k.SegmentBindings(0, Input)
	for g, ga := range e.rows.Gathers {
		t := e.in[ga.Input]
		if ga.Input < len(e.whole) && e.whole[ga.Input] != nil {
			t = e.whole[ga.Input]
		}
		dims := make([]int, len(ins[ga.Input].Shape))
		known := 1
		for i, d := range ins[ga.Input].Shape {
			dims[i] = e.dimSize(d)
			known *= max(dims[i], 1)
		}
		for i := range dims { // one dimension the sizes do not give: from the length
			if dims[i] < 0 {
				dims[i] = len(t) / known
			}
		}
		flat := 0
		inside := true
		for i, c := range ga.At {
			v, _ := e.env.evalInt(c)
			if v < 0 || int(v) >= dims[i] {
				inside = false
				break
			}
			flat = flat*dims[i] + int(v)
		}
		e.env.gathers[g], e.env.gatherErrs[g] = 0, 0
		switch {
		case inside && ins[ga.Input].Quant != nil: // a packed input (quant_rows.go)
			e.env.gathers[g], e.env.gatherErrs[g] = e.quantGather(ga.Input, flat/dims[1], flat%dims[1])
		case inside && flat < len(t):
			e.env.gathers[g] = t[flat]
		}
	}
}

// dimSize is size field d at this row: given, or rows/cols, or -1.
func (e *rowEval) dimSize(d string) int {
	if v, ok := e.sizes[d]; ok {
		return v
	}
	switch d {
	case "cols":
		return e.cols
	case "rows":
		return int(e.env.ints["rows"])
	}
	return -1
}

// describeGathers lists, for the schedule in words, the gathers pass p
// reads and how.
func (r *Rows) describeGathers(k *Kernel, p int) []string {
	var out []string
	for _, g := range r.GatherReads(k, p) {
		how := "device memory, per element; 0 outside the tensor"
		if q := k.Bindings[r.Gathers[g].Input].Quant; q != nil {
			how = "packed " + q.String() + ", per element: its code and its scale read and dequantized in f32 (quant_rows.go); 0 outside the tensor"
		}
		if r.Gathers[g].Row {
			how = "device memory, the row found once per row; zeros outside the tensor"
		}
		out = append(out, fmt.Sprintf("%s (%s)", k.FormatExpr(&Expr{Op: OpRef, Ref: RefGather, Index: g, At: r.Gathers[g].At}), how))
	}
	return out
}
