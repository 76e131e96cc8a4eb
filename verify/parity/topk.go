package parity

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// Top-k selections (ir.TopK, docs/topk.md) in parity: the float64 row
// evaluation selects by the float64 keys; the kernel by its own, rounded
// ones. Where two keys are closer than their bounds the kernel may rank
// them either way, so a column the kernel chose that differs from the
// reference's is accepted when the two keys cannot be told apart
// (topkTie); anywhere else the columns must be the reference's exactly.
// Values and weights are judged under their bounds like any element.

// fixedDims adds a baked dimension (a [rows, k] output's k) to sizes, so
// that the buffers and counts read it like a size field.
func fixedDims(k *ir.Kernel, sizes map[string]int) {
	for _, b := range k.Bindings {
		for _, d := range b.Shape {
			if n, err := strconv.Atoi(d); err == nil {
				sizes[d] = n
			}
		}
	}
}

// topkVisit judges row r's selection outputs: the order is the float64
// keys' (ir.TopKOrder) except where the kernel's columns (its topk_index
// output, if any) took a near tie the other way (acceptedOrder); every
// output's slots are then the reference's for that order (ir.TopK.Slots).
func (c *check) topkVisit(outs []ir.Binding, r int, keys, kb []float64, visit visitor) {
	t := c.k.TopKSelection()
	var got []int
	for _, o := range t.Outputs {
		if o.What == ir.TopKIndex && got == nil {
			for s := range t.K {
				got = append(got, int(decode(c.got[outs[o.Out].Index], dtype.I32, r*t.K+s)))
			}
		}
	}
	vals, bounds := t.Slots(keys, kb, acceptedOrder(got, keys, kb), c.rounding)
	for i, o := range t.Outputs {
		for s := range t.K {
			visit(outs[o.Out], r*t.K+s, r, vals[i][s], bounds[i][s])
		}
	}
}

// acceptedOrder is the reference's order of a row's columns, taking the
// kernel's column got[s] at slot s instead of the reference's next when
// every column the reference ranks before it is a near tie (topkTie) with
// it; without the kernel's columns (nil), the reference's order.
func acceptedOrder(got []int, keys, kb []float64) []int {
	ref := ir.TopKOrder(keys)
	used := make([]bool, len(keys))
	var out []int
	for s := range min(len(got), len(keys)) {
		g, pick := got[s], -1
		for _, c := range ref {
			if used[c] {
				continue
			}
			if pick < 0 {
				pick = c
			}
			if c == g {
				pick = g
				break
			}
			if g < 0 || g >= len(keys) || used[g] || !topkTie(keys, kb, c, g) {
				break
			}
		}
		used[pick] = true
		out = append(out, pick)
	}
	for _, c := range ref {
		if !used[c] {
			out = append(out, c)
		}
	}
	return out
}

// topkTie reports whether columns a and b hold different keys within their
// bounds of each other: the kernel's rounding may order them either way.
// Equal keys (both NaN, ±0, the same value) are no such case: the lower
// column must win, in the kernel as in the reference.
func topkTie(keys, bounds []float64, a, b int) bool {
	if a >= len(keys) || b >= len(keys) {
		return false
	}
	ka, kb := keys[a], keys[b]
	if math.IsNaN(ka) || math.IsNaN(kb) || ka == kb {
		return false
	}
	return math.Abs(ka-kb) <= bounds[a]+bounds[b]
}

// topkTies makes a selecting kernel's rows adversarial for the order, not
// only the arithmetic: from 8 rows on, row 7 holds one value repeated (every
// column ties), row 8 a handful of values (ties at the top and below),
// and the NaN and +Inf rows a second NaN and +Inf (ties among them, which
// the lower column wins). Other kernels' inputs are left alone.
func topkTies(r *rand.Rand, k *ir.Kernel, v ir.Variant, sizes map[string]int, vals [][]float64) [][]float64 {
	if k.TopKSelection() == nil {
		return vals
	}
	cols := sizes["cols"]
	for _, b := range k.BindingsOf(ir.Input) {
		t := elemType(b, v)
		if len(b.Shape) != 2 || t.IsInt() {
			continue
		}
		rows := sizes[b.Shape[0]]
		if rows < len(SpecialRows)+2 {
			continue
		}
		row := func(i int) []float64 { return vals[b.Index][i*cols : (i+1)*cols] }
		few := []float64{-1, 0, 0.5, 2, 2}
		for j := range cols {
			row(7)[j] = 1.5
			row(8)[j] = few[r.IntN(len(few))]
		}
		for i, kind := range SpecialRows {
			special := map[RowKind]float64{NaNRow: math.NaN(), PosInfRow: math.Inf(1)}
			if x, ok := special[kind]; ok && cols >= 2 {
				row(i + 1)[r.IntN(cols)] = x
			}
		}
	}
	return vals
}
