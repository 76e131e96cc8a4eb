package parity

import (
	"math"
	"math/rand/v2"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// RowKind is what one row of a rowwise kernel's [rows, cols] inputs holds.
// A NaN anywhere in a row makes every output of that row NaN, in kernel and
// reference alike, and an infinity usually does too, so special values are
// confined to a few designated rows (SpecialRows) and the other rows stay
// informative.
type RowKind int

const (
	// MixedRow holds finite adversarial values: the bands of Inputs
	// (magnitudes to ±Range, a far-negative tail, tiny values down to the
	// storage type's smallest subnormal) with ±0, ±subnormals, the smallest
	// ±normal, ±1 and ±Range mixed in; no infinity and no NaN.
	MixedRow RowKind = iota
	// NaNRow is a mixed row with one NaN at a seeded column.
	NaNRow
	// PosInfRow is a mixed row with one +Inf at a seeded column.
	PosInfRow
	// NegInfRow is a mixed row with one -Inf at a seeded column.
	NegInfRow
	// ZeroRow holds ±0 only.
	ZeroRow
	// SubnormalRow holds ±subnormals of the storage type only.
	SubnormalRow
	// HugeRow holds magnitudes in [Range/2, Range] only, ±Range included.
	HugeRow
)

func (k RowKind) String() string {
	switch k {
	case NaNRow:
		return "a row with a NaN"
	case PosInfRow:
		return "a row with a +Inf"
	case NegInfRow:
		return "a row with a -Inf"
	case ZeroRow:
		return "a row of ±0"
	case SubnormalRow:
		return "a row of subnormals"
	case HugeRow:
		return "a row of huge values"
	}
	return "a mixed row"
}

// SpecialRows are the designated rows' kinds, in row order from row 1 (row
// 0 and the rows after them are mixed).
var SpecialRows = []RowKind{NaNRow, PosInfRow, NegInfRow, ZeroRow, SubnormalRow, HugeRow}

// RowKindOf returns the kind of row r of rows. With fewer rows than the
// designated ones plus two mixed rows, every row is mixed (one row, or a
// handful, then checks the finite arithmetic only).
func RowKindOf(r, rows int) RowKind {
	if rows < len(SpecialRows)+2 || r < 1 || r > len(SpecialRows) {
		return MixedRow
	}
	return SpecialRows[r-1]
}

// ColFiniteRows is the most rows at which a kernel with column reductions
// (ir.Cols) still meets the NaN row: a NaN in any row reaches every
// column's sum, so longer launches (DefaultColRows' 77) keep that row mixed
// and finite, and the [cols] outputs informative. Its ±Inf rows are mixed
// at every row count: an infinity leaves terms that are exact zeros with
// no error bound (rsqrt(∞)·x), which then spread to every column's sum,
// where parity and the differential check could judge nothing.
const ColFiniteRows = 16

// rowKindFor is RowKindOf for kernel k: RowKindOf, except the ±Inf rows
// of a column-reducing kernel, and its NaN row above ColFiniteRows rows,
// which are mixed.
func rowKindFor(k *ir.Kernel, r, rows int) RowKind {
	kind := RowKindOf(r, rows)
	switch {
	case k.ColReductions() == nil:
	case kind == PosInfRow || kind == NegInfRow, kind == NaNRow && finiteRows(k, rows):
		return MixedRow
	}
	return kind
}

// finiteRows reports whether a launch of kernel k over rows rows keeps
// every row finite (Result.FiniteRows).
func finiteRows(k *ir.Kernel, rows int) bool {
	return k.ColReductions() != nil && rows > ColFiniteRows
}

// inDomain replaces every non-finite input by a finite special when the
// spec says `domain: finite`: its author means the kernel for finite
// inputs, so parity does not judge it on ±Inf and NaN.
func inDomain(r *rand.Rand, k *ir.Kernel, v ir.Variant, vals [][]float64, opts Options) [][]float64 {
	if k.Domain != "finite" {
		return vals
	}
	for _, b := range k.BindingsOf(ir.Input) {
		t := elemType(b, v)
		if t.IsInt() {
			continue
		}
		finite := finiteSpecials(t, opts.Range)
		for j, x := range vals[b.Index] {
			if math.IsInf(x, 0) || math.IsNaN(x) {
				vals[b.Index][j] = finite[r.IntN(len(finite))]
			}
		}
	}
	return vals
}

func finiteSpecials(t dtype.DType, rng float64) []float64 {
	var finite []float64
	for _, v := range Specials(t, rng) {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			finite = append(finite, v)
		}
	}
	return finite
}

// finiteInputs is Inputs with adversarial values but no infinity or NaN:
// each non-finite draw is replaced by a finite special.
func finiteInputs(r *rand.Rand, n int, t dtype.DType, rng float64) []float64 {
	out := Inputs(r, n, t, rng, true)
	var finite []float64
	for _, v := range Specials(t, rng) {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			finite = append(finite, v)
		}
	}
	for j, v := range out {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			out[j] = finite[r.IntN(len(finite))]
		}
	}
	return out
}

// rowValues returns one row of cols values of type t for a [rows, cols]
// input of the given kind. carrier says whether this input carries the
// row's special value (NaN and ±Inf rows put it in one input only; the
// zero, subnormal and huge rows fill every input).
func rowValues(r *rand.Rand, kind RowKind, cols int, t dtype.DType, rng float64, carrier bool) []float64 {
	lim := LimitsOf(t)
	out := make([]float64, cols)
	switch kind {
	case ZeroRow:
		for j := range out {
			out[j] = signed(r, 0)
		}
		return out
	case SubnormalRow:
		for j := range out {
			out[j] = dtype.Round(signed(r, logUniform(r, lim.MinSub, lim.MaxSub)), t)
		}
		if cols >= 2 {
			out[0], out[cols-1] = lim.MinSub, -lim.MaxSub
		}
		return out
	case HugeRow:
		for j := range out {
			out[j] = dtype.Round(signed(r, uniform(r, rng/2, rng)), t)
		}
		if cols >= 2 {
			out[0], out[cols-1] = dtype.Round(rng, t), dtype.Round(-rng, t)
		}
		return out
	}
	out = finiteInputs(r, cols, t, rng)
	if !carrier {
		return out
	}
	switch kind {
	case NaNRow:
		out[r.IntN(cols)] = math.NaN()
	case PosInfRow:
		out[r.IntN(cols)] = math.Inf(1)
	case NegInfRow:
		out[r.IntN(cols)] = math.Inf(-1)
	}
	return out
}

// rowInputs draws the inputs of a rowwise kernel at the launch's sizes, by
// binding index, each value exact in its storage type: plain values uniform
// in [-Range, Range], or adversarial rows (RowKindOf) for [rows, cols]
// inputs and finite mixed values for [cols] row vectors.
func rowInputs(r *rand.Rand, k *ir.Kernel, v ir.Variant, sizes map[string]int, opts Options) [][]float64 {
	vals := make([][]float64, len(k.Bindings))
	carrierOf := carriers(k)
	cols := sizes["cols"]
	for _, b := range k.BindingsOf(ir.Input) {
		t := elemType(b, v)
		switch {
		case b.IsPacked(): // packedInputs
		case indexInput(k, b):
			vals[b.Index] = IndexInputs(r, sizes[b.Shape[0]], IndexDim)
		case b.IsIndexable():
			vals[b.Index] = Inputs(r, tensorLen(b, sizes), t, opts.Range, !opts.Plain && !t.IsInt())
			if t.IsInt() {
				vals[b.Index] = IntInputs(r, tensorLen(b, sizes), t)
			}
		case t.IsInt():
			n := cols
			switch {
			case b.IsPerRow():
				n = sizes[b.Shape[0]]
			case !b.IsRowVector():
				n = sizes[b.Shape[0]] * cols
			}
			vals[b.Index] = IntInputs(r, n, t)
		case opts.Plain:
			n := cols
			switch {
			case b.IsPerRow():
				n = sizes[b.Shape[0]]
			case !b.IsRowVector():
				n = sizes[b.Shape[0]] * cols
			}
			vals[b.Index] = Inputs(r, n, t, opts.Range, false)
		case b.IsRowVector():
			vals[b.Index] = finiteInputs(r, cols, t, opts.Range)
		case b.IsPerRow():
			vals[b.Index] = finiteInputs(r, sizes[b.Shape[0]], t, opts.Range)
		default:
			rows := sizes[b.Shape[0]]
			vals[b.Index] = make([]float64, 0, rows*cols)
			for row := 0; row < rows; row++ {
				kind := rowKindFor(k, row, rows)
				vals[b.Index] = append(vals[b.Index], rowValues(r, kind, cols, t, opts.Range, carrierOf(b, kind))...)
			}
		}
	}
	packedInputs(r, k, v, sizes, vals, opts.Plain)
	return inDomain(r, k, v, topkTies(r, k, v, sizes, vals), opts)
}

// carriers returns which [rows, cols] input carries a designated row's
// special value: the NaN row's goes to the segment's first such input, the
// +Inf row's to the second (the first when there is one), and so on, so a
// kernel with several row inputs (add_rms_norm's x and residual) meets
// specials in each.
func carriers(k *ir.Kernel) func(b ir.Binding, kind RowKind) bool {
	pos := map[int]int{}   // binding index → position among its segment's [rows, cols] inputs
	count := map[int]int{} // segment → how many
	for _, b := range k.BindingsOf(ir.Input) {
		if len(b.Shape) == 2 {
			pos[b.Index] = count[b.Segment]
			count[b.Segment]++
		}
	}
	return func(b ir.Binding, kind RowKind) bool {
		return pos[b.Index] == int(kind-NaNRow)%count[b.Segment]
	}
}
