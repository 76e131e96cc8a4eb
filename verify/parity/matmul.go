package parity

import (
	"math"
	"math/rand/v2"

	"github.com/kgen-dev/kgen/ir"
)

// MatmulShape is one matmul launch: C is M×N, the sum runs over K.
type MatmulShape struct{ M, N, K int }

// DefaultMatmulShapes cover every size of {1, 7, 8, 33, 513} in every
// position (a lone element, a partial fragment, one whole fragment, a
// partial tile, many tiles with a K tail), tessera's test shapes (M, K, N
// written as M, N, K here: (16, 24, 32), (64, 96, 48) ragged,
// (128, 128, 256), (40, 256, 128), (8, 512, 64)), and empty outputs.
var DefaultMatmulShapes = []MatmulShape{
	{1, 1, 1}, {7, 8, 33}, {8, 33, 7}, {33, 7, 8}, {33, 33, 513}, {513, 8, 7}, {7, 513, 1},
	{8, 8, 8}, {0, 7, 8}, {7, 8, 0},
	{16, 24, 32}, {64, 96, 48}, {128, 128, 256}, {40, 256, 128}, {8, 512, 64},
}

// MatmulRange is the magnitude of matmul operands and epilogue inputs:
// uniform in [-2, 2], exact in the storage type.
const MatmulRange = 2

func matmulShapes(k *ir.Kernel, opts Options) []shape {
	shapes := opts.Matmul
	if len(shapes) == 0 {
		shapes = DefaultMatmulShapes
	}
	var out []shape
	for _, s := range shapes {
		out = append(out, shape{sizes: map[string]int{"m": s.M, "n": s.N, "k": s.K},
			seed: uint64(s.M)<<40 | uint64(s.N)<<20 | uint64(s.K), n: s.M * s.N, rows: s.M, cols: s.N})
	}
	return out
}

// matmulInputs draws every input uniformly in [-MatmulRange, MatmulRange];
// with NaNRow, row 1 of A (when there is one) holds a NaN and row 2 an
// infinity, which must reach exactly those rows of the output.
func matmulInputs(r *rand.Rand, k *ir.Kernel, v ir.Variant, sizes map[string]int, opts Options) [][]float64 {
	vals := make([][]float64, len(k.Bindings))
	for _, b := range k.BindingsOf(ir.Input) {
		n := 1
		for _, d := range b.Shape {
			n *= sizes[d]
		}
		vals[b.Index] = Inputs(r, n, elemType(b, v), MatmulRange, false)
	}
	return vals
}

// matmulReference sums every accumulator in float64 (each product of two
// stored values is exact; the sum rounds at 2^-53) with the bound of an
// f32 sum of K products in any order, then evaluates the epilogue with
// running error analysis from there (ir.Kernel.EvalEpilogueBound).
//
// The bound is the classical one for a dot product in floating point
// (Higham, Accuracy and Stability of Numerical Algorithms, §3.1): with
// unit roundoff u = 2^-24 and K terms, |fl(a·b) - a·b| <= γ_K Σ|a_p b_p|,
// γ_K = K u / (1 - K u). It holds for every summation order and with or
// without fused multiply-adds, so it covers the simdgroup products'
// unspecified order on Apple GPUs. It grows linearly with K like the
// worst case of a float accumulation (a typical error grows like √K u).
func matmulReference(c *check, visit visitor) {
	k := c.k
	mm := k.Matmul()
	m, n, kk := c.sizes["m"], c.sizes["n"], c.sizes["k"]
	gamma := float64(kk) * 0x1p-24 / (1 - float64(kk)*0x1p-24)
	a := c.vals[mm.A.Binding]
	ins, outs := k.ElementInputs(0), k.BindingsOf(ir.Output)
	x := make([]float64, len(ins))
	accs, errs := make([]float64, len(mm.B)), make([]float64, len(mm.B))
	for i := range m {
		for j := range n {
			for bi, op := range mm.B {
				b := c.vals[op.Binding]
				var s, sa float64
				for p := range kk {
					prod := a[at(i, p, m, kk, mm.A.ColMajor)] * b[at(p, j, kk, n, op.ColMajor)]
					s += prod
					sa += math.Abs(prod)
				}
				accs[bi], errs[bi] = s, gamma*sa
			}
			for e, b := range ins {
				x[e] = c.vals[b.Index][elemAt(b, i, j, n)]
			}
			want, bound := k.EvalEpilogueBound(x, accs, errs, c.params, c.rounding)
			for o, b := range outs {
				visit(b, i*n+j, i, want[o], bound[o])
			}
		}
	}
}

// at is the storage index of logical (r, col) of a rows×cols operand.
func at(r, col, rows, cols int, colMajor bool) int {
	if colMajor {
		return col*rows + r
	}
	return r*cols + col
}

// elemAt is an epilogue input's index at (i, j) by its shape.
func elemAt(b ir.Binding, i, j, n int) int {
	switch b.Shape.String() {
	case "[n]":
		return j
	case "[m]":
		return i
	}
	return i*n + j
}

// matmulF32Param is 0.5 + the param's index: exact, and typical of scales.
func matmulF32Param(i int) float64 { return 0.5 + float64(i) }
