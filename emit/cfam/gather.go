package cfam

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// Indexed reads in the C-family kernels (ir/gather.go, docs/indexing.md).
// The loops load each gather's element before the stage call, which takes
// it as kgen_take<g>. Every coordinate is checked against its dimension as
// an unsigned value ((uint)c < dim is false for a negative c): outside, the
// element is 0 and nothing is read. A whole-row gather (ir.Gather.Row)
// computes its row's offset once per row and, on CUDA, keeps the 16-byte
// vector loads, an out-of-range row loading a zero vector.

// gatherRows declares, once per row, each whole-row gather's coordinates,
// whether they are inside the tensor (kgen_tk<g>) and the row's offset
// (kgen_tb<g>).
func (rw *rowWriter) gatherRows() {
	for g, ga := range rw.r.Gathers {
		if !ga.Row {
			continue
		}
		n := ir.GatherName(g)
		dims := rw.k.GatherDims(g)
		rw.P("// ", rw.k.FormatExpr(&ir.Expr{Op: ir.OpRef, Ref: ir.RefGather, Index: g, At: ga.At}), ": its row, once per row (zeros outside the tensor)")
		at := rw.coords(n, ga.At[:len(ga.At)-1], "kgen_j")
		rw.P("const bool kgen_tk", g, " = ", inside(at, dims), ";")
		rw.P("const ", rw.d.Offset, " kgen_tb", g, " = kgen_tk", g, " ? ", rw.flat(at, dims), " * args.cols : 0;")
	}
}

// coords declares the coordinates at of gather n as ints (<n>_<i>), their
// column col, and returns their names.
func (rw *rowWriter) coords(n string, at []*ir.Expr, col string) []string {
	r := renderer{d: rw.d, compute: dtype.F32, math: rw.k.Math} // integers only (ir refuses numbers in coordinates)
	var out []string
	for i, c := range at {
		id := fmt.Sprintf("%s_%d", n, i)
		rw.P("const int ", id, " = ", r.intExpr(ir.SpellRefs(c, rw.spellRef(col))), ";")
		out = append(out, id)
	}
	return out
}

// spellRef spells a coordinate's names in the loops: the indices and sizes
// as ints, an integer param by the local rowGeometry declares, a [rows]
// input by its row's value (kgen_v_<x>).
func (rw *rowWriter) spellRef(col string) func(ir.RefKind, string, int) string {
	return func(ref ir.RefKind, name string, index int) string {
		switch ref {
		case ir.RefIndex:
			return map[string]string{"row": "(int)kgen_row", "col": "(int)(" + col + ")", "rows": "(int)" + rw.rows, "cols": "(int)args.cols"}[name]
		case ir.RefInput:
			return "kgen_v_" + rw.inputName(index)
		}
		return name
	}
}

// inside is the check that coordinates at lie inside dims (unsigned
// comparisons: a negative coordinate is a huge unsigned one).
func inside(at []string, dims ir.Shape) string {
	var terms []string
	for i, c := range at {
		terms = append(terms, "(unsigned int)"+c+" < args."+dims[i])
	}
	if len(terms) == 0 {
		return "true"
	}
	return strings.Join(terms, " && ")
}

// flat is the row-major offset of coordinates at (checked) in dims.
func (rw *rowWriter) flat(at []string, dims ir.Shape) string {
	o := rw.d.Offset
	s := "(" + o + ")" + at[0]
	for i := 1; i < len(at); i++ {
		s = "(" + s + " * args." + dims[i] + " + (" + o + ")" + at[i] + ")"
	}
	return s
}

// gatherLoads declares kgen_take<g> for the gathers pass p reads, at
// column col, with scalar loads; skip lists those already loaded (the
// vector path's whole rows).
func (rw *rowWriter) gatherLoads(p int, col string, skip map[int]bool) {
	ins := rw.k.SegmentBindings(0, ir.Input)
	for _, g := range rw.r.GatherReads(rw.k, p) {
		if skip[g] {
			continue
		}
		ga := rw.r.Gathers[g]
		n, dims, in := ir.GatherName(g), rw.k.GatherDims(g), rw.inputName(ga.Input)
		zero := rw.d.Cvt("C", "0.0f")
		if b := ins[ga.Input]; b.Quant != nil { // a packed input's dequantized value (ir/quant_rows.go)
			at := rw.coords(n, ga.At, col)
			t := packedTensor{q: *b.Quant, name: in, width: "args." + dims[1]}
			if s, bs := rw.k.QuantTables(b.Index); s >= 0 {
				t.scales, t.biases = rw.k.Bindings[s].Name, rw.k.Bindings[bs].Name
			}
			v := quantElem(rw.d, t, "("+rw.d.Offset+")"+at[0], "("+rw.d.Uint+")"+at[1])
			rw.P("const C ", n, " = ", inside(at, dims), " ? ", rw.d.Cvt("C", v), " : ", zero, ";")
			continue
		}
		if ins[ga.Input].DType.IsInt() {
			zero = "0"
		}
		if ga.Row {
			rw.P("const ", rw.valType(ga.Input), " ", n, " = kgen_tk", g, " ? ", rw.loadCvt(ga.Input, rw.d.ReadOnly(in+"[kgen_tb"+fmt.Sprint(g)+" + "+col+"]")), " : ", zero, ";")
			continue
		}
		at := rw.coords(n, ga.At, col)
		rw.P("const ", rw.valType(ga.Input), " ", n, " = ", inside(at, dims), " ? ", rw.loadCvt(ga.Input, rw.d.ReadOnly(in+"["+rw.flat(at, dims)+"]")), " : ", zero, ";")
	}
}

// vecGathers loads, on CUDA's vector path, the 16-byte vector of each
// whole-row gather of the variant's dtype pass p reads (a zero vector
// outside the tensor), and returns them.
func vecGathers(rw *rowWriter, p int) map[int]bool {
	out := map[int]bool{}
	ins := rw.k.SegmentBindings(0, ir.Input)
	for _, g := range rw.r.GatherReads(rw.k, p) {
		ga := rw.r.Gathers[g]
		if !ga.Row || ins[ga.Input].DType != dtype.Invalid {
			continue
		}
		out[g] = true
		vecLoad(rw, strings.TrimPrefix(ir.GatherName(g), "kgen_"), fmt.Sprintf("kgen_tk%d ? *reinterpret_cast<const uint4*>(%s + kgen_tb%d + kgen_j0) : make_uint4(0u, 0u, 0u, 0u)", g, rw.inputName(ga.Input), g))
	}
	return out
}

// vecGatherElems declares kgen_take<g> from the vectors vecGathers loaded.
func vecGatherElems(rw *rowWriter, vec map[int]bool) {
	for g := range len(rw.r.Gathers) {
		if vec[g] {
			n := ir.GatherName(g)
			rw.P("const C ", n, " = kgen_cvt<C>(kgen_w_", strings.TrimPrefix(n, "kgen_"), "[kgen_e]);")
		}
	}
}

// scatterRows declares, once per row, each whole-row positioned write's
// leading coordinates, whether the row is written (kgen_sk<o>: inside the
// tensor, the proof's divisors nonzero) and its offset (kgen_sb<o>).
func (rw *rowWriter) scatterRows() {
	for _, sc := range rw.r.Scatters {
		if !sc.Row {
			continue
		}
		o := rw.k.SegmentBindings(0, ir.Output)[sc.Out]
		n := rw.k.FormulaName(o)
		rw.P("// ", n, " at [", rw.k.FormatAt(sc.At), "]: its row, once per row (not written outside the tensor)")
		at := rw.coords("kgen_at_"+n, sc.At[:len(sc.At)-1], "kgen_j")
		rw.P("const bool kgen_sk", sc.Out, " = ", rw.writeGuard(at, o.Shape, &sc, "kgen_j"), ";")
		rw.P("const ", rw.d.Offset, " kgen_sb", sc.Out, " = kgen_sk", sc.Out, " ? ", rw.flat(at, o.Shape), " * args.cols : 0;")
	}
}

// writeGuard is the condition of a positioned write at coordinates at:
// inside dims, and the proof's divisors nonzero.
func (rw *rowWriter) writeGuard(at []string, dims ir.Shape, sc *ir.Scatter, col string) string {
	cond := inside(at, dims)
	r := renderer{d: rw.d, compute: dtype.F32, math: rw.k.Math}
	for _, d := range sc.NonZero {
		cond += " && " + r.intExpr(ir.SpellRefs(d, rw.spellRef(col))) + " != 0"
	}
	return cond
}

// vecScatters lists the outputs CUDA's vector path stores with 16-byte
// stores: whole-row positioned writes of the variant's dtype.
func vecScatters(rw *rowWriter) []ir.Binding {
	var out []ir.Binding
	for _, sc := range rw.r.Scatters {
		if o := rw.k.SegmentBindings(0, ir.Output)[sc.Out]; sc.Row && o.DType == dtype.Invalid {
			out = append(out, o)
		}
	}
	return out
}

// vecScatterStores stores the vectors of vecScatters' outputs into their
// rows, when the row is written.
func vecScatterStores(rw *rowWriter) {
	for _, sc := range rw.r.Scatters {
		if o := rw.k.SegmentBindings(0, ir.Output)[sc.Out]; sc.Row && o.DType == dtype.Invalid {
			n := rw.k.FormulaName(o)
			rw.Block(fmt.Sprintf("if (kgen_sk%d)", sc.Out), func() {
				rw.P(fmt.Sprintf("*reinterpret_cast<uint4*>(%s + kgen_sb%d + kgen_j0) = *reinterpret_cast<const uint4*>(kgen_y_%s);", n, sc.Out, n))
			})
		}
	}
}

// scatterStore writes v, output o's value at column col, at o's
// coordinates (ir.Scatter): only when each lies inside its dimension and
// the proof's divisors are nonzero, so no write leaves the tensor and no
// two threads write one element. A whole-row write goes to the row found
// once per row; on the vector path (vec), of the variant's dtype, into the
// vector vecScatterStores stores.
func (rw *rowWriter) scatterStore(out int, o ir.Binding, v, col string, vec bool) {
	sc := rw.r.ScatterOf(out)
	n := rw.k.FormulaName(o)
	switch {
	case sc.Row && vec && o.DType == dtype.Invalid:
		rw.P("kgen_y_", n, "[kgen_e] = ", rw.d.Cvt("T", v), ";")
	case sc.Row:
		rw.Block(fmt.Sprintf("if (kgen_sk%d)", out), func() {
			rw.P(n, "[kgen_sb", out, " + ", col, "] = ", storeCvt(rw.d, o, v), ";")
		})
	default:
		at := rw.coords("kgen_at_"+n, sc.At, col)
		rw.Block("if ("+rw.writeGuard(at, o.Shape, sc, col)+")", func() {
			rw.P(n, "[", rw.flat(at, o.Shape), "] = ", storeCvt(rw.d, o, v), ";")
		})
	}
}
