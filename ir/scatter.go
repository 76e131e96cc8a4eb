package ir

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/expr"
	"github.com/kgen-dev/kgen/spec"
)

// Positioned writes (scatters) of rowwise kernels, docs/indexing.md.
//
// An output with a shape and at of its own, {name: cache, shape: [heads,
// seq, cols], at: [row / n, pos + row % n, col], formula: k_new}, is
// written in place: element (row, col) of the launch (whose rows and cols
// the kernel's other tensors give) goes to cache[at], every other element
// keeps its value, and a write with any coordinate outside its dimension
// is not performed. The work is the launch's rows × cols, not the output's
// size. Two threads must never write one element, so kgen proves (row,
// col) ↦ at injective by structure, or refuses the spec (injective).

// Scatter is one positioned write.
type Scatter struct {
	Step int     // the output's step
	Out  int     // its index among the outputs
	At   []*Expr // the coordinates, lets inlined
	// NonZero are divisors the proof needs nonzero (row / n and row % n
	// are both 0 for every row at n = 0): the write is skipped unless
	// each is nonzero.
	NonZero []*Expr
	// Row marks the contiguous form (as Gather.Row): the last coordinate
	// is col over a last dimension cols, the others do not use col. The
	// row's place is computed once per row, and CUDA's vector path keeps
	// its 16-byte stores there.
	Row bool
}

// IsScatter reports whether b is an output written at computed
// coordinates.
func (b Binding) IsScatter() bool { return b.Role == Output && b.Indexed }

// ScatterOf is the positioned write of output o (an index among the
// outputs), or nil.
func (r *Rows) ScatterOf(o int) *Scatter {
	for i := range r.Scatters {
		if r.Scatters[i].Out == o {
			return &r.Scatters[i]
		}
	}
	return nil
}

// coordinates checks and converts the at: coordinates of formula i (an
// output's; nil for any other): one integer per dimension of the output's
// shape, of what the loops can compute (gather.go), in a rowwise kernel.
func (c *formulaChecker) coordinates(i int, f spec.Formula) []*Expr {
	if len(f.At) == 0 {
		return nil
	}
	if c.k.Kind != Rowwise {
		c.diags.Addf(f.AtPos, "output %s: a positioned write (at) needs kind: rowwise (this kernel is %s)", f.Name.Name, c.k.Kind)
		return nil
	}
	if len(f.Dims) > 0 && len(f.At) != len(f.Dims) {
		c.diags.Addf(f.AtPos, "output %s has %d dimensions [%s]: at takes %d coordinates, got %d",
			f.Name.Name, len(f.Dims), strings.Join(f.Dims, ", "), len(f.Dims), len(f.At))
		return nil
	}
	var out []*Expr
	for _, a := range f.At {
		tree, err := expr.Parse(a.Text)
		if err != nil {
			c.diags.Addf(a.Map.At(err.Off), "%s", err.Msg)
			return nil
		}
		bad := false
		ck := &expr.Checker{
			Resolve:   func(name string) (expr.Type, string) { return c.resolve(name, i) },
			Rowwise:   true,
			IndexKind: c.k.Kind.String(),
			Indexed:   c.indexed,
			Report:    func(off int, msg string) { bad = true; c.diags.Addf(a.Map.At(off), "%s", msg) },
		}
		t := ck.Check(tree)
		if num, lit := tree.(*expr.Number); lit && strings.Trim(num.Text, "0123456789") == "" { // an integer literal alone
			num.Int, t = true, expr.Int
		}
		switch {
		case bad:
			return nil
		case t != expr.Int:
			c.diags.Addf(a.Map.At(0), "a coordinate of at must be an integer (row, col, an integer param or [rows] input), not %s", t)
			return nil
		}
		if why := c.coordinateUses(tree, map[string]bool{}); why != "" {
			c.diags.Addf(a.Map.At(0), "a coordinate of at may use integer literals, row, col, rows, cols, integer params, integer [rows] inputs and lets of those; not %s", why)
			return nil
		}
		out = append(out, c.convert(tree))
	}
	return out
}

// collectScatters records the kernel's positioned writes in r.Scatters,
// lets inlined, after checking that each is per element, proven injective,
// and that the launch's rows and cols come from other tensors.
func collectScatters(s *spec.Spec, k *Kernel, r *Rows, diags *diag.List) {
	for i, st := range k.Steps {
		if st.At == nil {
			continue
		}
		o := k.OutputIndex(i)
		f := s.Outputs[o]
		sc := Scatter{Step: i, Out: o}
		for _, a := range st.At {
			sc.At = append(sc.At, inlineLets(k, a))
		}
		if !perElement(k, inlineLets(k, st.Expr)) {
			diags.Addf(f.Name.Pos, "output %s: a positioned write stores one value per element of the launch's rows × cols; its formula uses no element (an input of shape [rows, cols] or [cols], a subscript, or col)", f.Name.Name)
			continue
		}
		nonZero, why := injective(k, sc.At)
		if why != "" {
			diags.Addf(f.AtPos, "output %s: kgen cannot prove that distinct elements (row, col) are written to distinct places, so two threads could write one element: %s; accumulating writes (reduce: add) are not offered yet", f.Name.Name, why)
			continue
		}
		sc.NonZero = nonZero
		sc.Row = rowGather(k.SegmentBindings(0, Output)[o].Shape, sc.At)
		r.Scatters = append(r.Scatters, sc)
	}
	if len(r.Scatters) == 0 {
		return
	}
	for _, size := range []string{"rows", "cols"} {
		given := false
		for _, b := range k.Bindings {
			given = given || b.Role != Args && !b.IsScatter() && slices.Contains(b.Shape, size)
		}
		if !given {
			f := s.Outputs[r.Scatters[0].Out]
			diags.Addf(f.AtPos, "output %s: a positioned write runs over the launch's rows × cols, which the kernel's other tensors give; no tensor here has %s (add the [rows, cols] input whose elements are written)", f.Name.Name, size)
			return
		}
	}
}

// injective proves (row, col) ↦ at injective by structure: exactly one
// coordinate uses col, and it is col plus or minus a row-invariant
// integer; of the others, one is row (± row-invariant), or two are
// row / n and row % n (± row-invariant) with the same row-invariant n,
// which must then be nonzero at run time. It returns those divisors, or
// why the proof fails.
func injective(k *Kernel, at []*Expr) (nonZero []*Expr, why string) {
	colAt := -1
	for i, a := range at {
		if !usesCol(a) {
			continue
		}
		if colAt >= 0 {
			return nil, "col appears in more than one coordinate"
		}
		if _, ok := offsetOf(a, func(e *Expr) bool { return isIndex(e, "col") }); !ok {
			return nil, fmt.Sprintf("the coordinate %s is not col plus or minus a value the same in every row", k.FormatExpr(a))
		}
		colAt = i
	}
	if colAt < 0 {
		return nil, "no coordinate is col (each element of a row needs a place of its own)"
	}
	divs, mods := map[string]*Expr{}, map[string]bool{}
	for i, a := range at {
		if i == colAt {
			continue
		}
		if _, ok := offsetOf(a, func(e *Expr) bool { return isIndex(e, "row") }); ok {
			return nil, ""
		}
		if base, ok := offsetOf(a, func(e *Expr) bool { return isRowBy(e, "/") }); ok {
			divs[k.FormatExpr(base.Args[1])] = base.Args[1]
		}
		if base, ok := offsetOf(a, func(e *Expr) bool { return isRowBy(e, "%") }); ok {
			mods[k.FormatExpr(base.Args[1])] = true
		}
	}
	for n, e := range divs {
		if mods[n] {
			return []*Expr{e}, ""
		}
	}
	return nil, "no coordinate is row (± a value the same in every row), nor are two of them row / n and row % n"
}

// offsetOf reports whether e is base, base + c, c + base or base - c
// with c row-invariant, returning base.
func offsetOf(e *Expr, isBase func(*Expr) bool) (*Expr, bool) {
	if isBase(e) {
		return e, true
	}
	if e.Op != OpBinary || (e.Operator != "+" && e.Operator != "-") {
		return nil, false
	}
	x, y := e.Args[0], e.Args[1]
	if isBase(x) && rowInvariant(y) {
		return x, true
	}
	if e.Operator == "+" && isBase(y) && rowInvariant(x) {
		return y, true
	}
	return nil, false
}

// isRowBy reports whether e is row / n or row % n (op) with n row-invariant.
func isRowBy(e *Expr, op string) bool {
	return e.Op == OpBinary && e.Operator == op && isIndex(e.Args[0], "row") && rowInvariant(e.Args[1])
}

// rowInvariant reports whether e has one value for the whole launch:
// literals, params, constants and the sizes, no row, col or per-row input.
func rowInvariant(e *Expr) bool {
	ok := true
	Walk(e, func(x *Expr) {
		if x.Op == OpRef && (x.Ref == RefIndex && (x.Name == "row" || x.Name == "col") || x.Ref == RefInput || x.Ref == RefGather) {
			ok = false
		}
	})
	return ok
}

// SegmentRows is the size field of segment s's rows: the first dimension
// of its ordinary outputs (a positioned write's shape is its own).
func (k *Kernel) SegmentRows(s int) string {
	for _, b := range k.SegmentBindings(s, Output) {
		if !b.IsScatter() {
			return b.Shape[0]
		}
	}
	for _, b := range k.SegmentBindings(s, Input) {
		if !b.IsIndexable() && (b.IsPerRow() || len(b.Shape) == 2) {
			return b.Shape[0]
		}
	}
	return "rows"
}

// ScatterAt is where element (row, col) of a launch of rows rows is
// written by sc: the flat index into the output (shape sh, sizes giving
// its dimensions) and true, or false when the write is not performed. in
// holds the row's input values by input index (a [rows] input's at the
// row), params the params: the kernels' rule (gather.go) in the reference.
func (k *Kernel) ScatterAt(sc *Scatter, sh Shape, row, rows, col int, sizes map[string]int, in, params []float64) (int, bool) {
	env := boundEnv{k: k, inputs: in, params: params,
		ints: map[string]int32{"row": int32(row), "col": int32(col), "rows": int32(rows), "cols": int32(sizes["cols"])}}
	for _, d := range sc.NonZero {
		if v, _ := env.evalInt(d); v == 0 {
			return 0, false
		}
	}
	flat := 0
	for i, c := range sc.At {
		v, _ := env.evalInt(c)
		n := sizes[sh[i]]
		if v < 0 || int(v) >= n {
			return 0, false
		}
		flat = flat*n + int(v)
	}
	return flat, true
}

// Coordinates lists every coordinate the loops compute: the gathers' and
// the positioned writes', their divisors included.
func (r *Rows) Coordinates() []*Expr {
	var out []*Expr
	for _, g := range r.Gathers {
		out = append(out, g.At...)
	}
	for _, s := range r.Scatters {
		out = append(append(out, s.At...), s.NonZero...)
	}
	return out
}

// perElement reports whether e (lets inlined) changes along a row: it
// reads col, a gather, a pair, or an input that is not one value per row.
func perElement(k *Kernel, e *Expr) bool {
	found := false
	Walk(e, func(x *Expr) {
		if x.Op != OpRef {
			return
		}
		switch x.Ref {
		case RefGather, RefPair:
			found = true
		case RefIndex:
			found = found || x.Name == "col"
		case RefInput:
			found = found || !k.SegmentBindings(0, Input)[x.Index].IsPerRow()
		}
	})
	return found
}

// FormatAt writes coordinates as the spec's at lists them.
func (k *Kernel) FormatAt(at []*Expr) string {
	var out []string
	for _, c := range at {
		out = append(out, k.FormatExpr(c))
	}
	return strings.Join(out, ", ")
}
