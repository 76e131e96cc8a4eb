package parity

import (
	"math"
	"math/rand/v2"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// Indexed reads (ir/gather.go, docs/indexing.md) in parity: every
// indexable input's own dimension is IndexDim long, and the integer [rows]
// inputs a subscript reads are drawn by IndexInputs, so every launch meets
// in-range rows, negative ones, ones at and past the end, and i32's
// extremes, and the kernels must agree with the Go reference bit for bit.

// IndexDim is the size parity gives each indexable input's own dimension:
// odd, and not a multiple of a vector width.
const IndexDim = 13

// IndexInputs draws n coordinates for a dimension of dim: mostly in [0,
// dim), with -1, dim, dim + 1, i32's minimum and maximum placed first when
// n holds them twice over, and one in eight drawn past either end.
func IndexInputs(r *rand.Rand, n, dim int) []float64 {
	edges := []float64{-1 << 31, 1<<31 - 1, -1, float64(dim), float64(dim + 1)}
	out := make([]float64, n)
	for i := range out {
		switch {
		case i < len(edges) && n >= 2*len(edges):
			out[i] = edges[i]
		case r.IntN(8) == 0:
			out[i] = float64(r.IntN(4*dim+1) - 2*dim)
		default:
			out[i] = float64(r.IntN(dim))
		}
	}
	r.Shuffle(n, func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// indexInput reports whether input b (an integer [rows] input) is read by
// a gather's coordinates.
func indexInput(k *ir.Kernel, b ir.Binding) bool {
	if k.Kind != ir.Rowwise || !b.IsPerRow() {
		return false
	}
	found := false
	for _, ga := range k.Rows().Gathers {
		for _, c := range ga.At {
			ir.Walk(c, func(e *ir.Expr) {
				found = found || e.Op == ir.OpRef && e.Ref == ir.RefInput && k.SegmentBindings(0, ir.Input)[e.Index].Index == b.Index
			})
		}
	}
	return found
}

// indexSizes gives every indexable dimension of k its parity size.
func indexSizes(k *ir.Kernel, sizes map[string]int) {
	for _, f := range k.ArgsBinding().Fields {
		if f.Dim {
			sizes[f.Name] = IndexDim
		}
	}
}

// tensorLen is the number of values of binding b at sizes.
func tensorLen(b ir.Binding, sizes map[string]int) int {
	n := 1
	for _, s := range b.Shape {
		n *= sizes[s]
	}
	return n
}

// scatterVisit visits row r of positioned write o (binding b): each
// element the kernel writes, at its place, recorded in written.
func scatterVisit(c *check, o int, b ir.Binding, r, rows int, row [][]float64, want, bound []float64, written map[int]map[int]bool, visit visitor) {
	k := c.k
	in := make([]float64, len(row))
	for i, ib := range k.SegmentBindings(0, ir.Input) {
		if ib.IsPerRow() {
			in[i] = row[i][0]
		}
	}
	if written[b.Index] == nil {
		written[b.Index] = map[int]bool{}
	}
	for j := range want {
		if at, ok := k.ScatterAt(k.Rows().ScatterOf(o), b.Shape, r, rows, j, c.sizes, in, c.params); ok {
			written[b.Index][at] = true
			visit(b, at, r, want[j], bound[j])
		}
	}
}

// scatterUnwritten visits every element of the positioned writes the
// kernel does not write: parity fills outputs with NaN, which they must
// keep (the write is in place).
func scatterUnwritten(c *check, written map[int]map[int]bool, visit visitor) {
	for _, b := range c.k.BindingsOf(ir.Output) {
		if !b.IsScatter() {
			continue
		}
		for j := range tensorLen(b, c.sizes) {
			if !written[b.Index][j] {
				visit(b, j, -1, math.NaN(), 0)
			}
		}
	}
}

// nanFilled is the bytes of a tensor of shape and type t holding NaN
// everywhere: how parity's buffers start a positioned write's output, so
// the Go reference, which writes it in place too, starts the same.
func nanFilled(shape []int, t dtype.DType) []byte {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = math.NaN()
	}
	return encode(v, t)
}
