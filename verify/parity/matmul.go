package parity

import (
	"math"
	"math/rand/v2"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// MatmulShape is one matmul launch: C is M×N, the sum runs over K.
type MatmulShape struct{ M, N, K int }

// ChainShape is one chain launch: the scores are M×N over K, the second
// operand N×P and the output M×P.
type ChainShape struct{ M, N, K, P int }

// DefaultMatmulShapes cover every size of {1, 7, 8, 33, 513} in every
// position (a lone element, a partial fragment, one whole fragment, a
// partial tile, many tiles with a K tail), tessera's test shapes (M, K, N
// written as M, N, K here: (16, 24, 32), (64, 96, 48) ragged,
// (128, 128, 256), (40, 256, 128), (8, 512, 64)), empty outputs, and an n
// of 1000, wider than a row-reducing kernel's strip (928 columns, 416
// gated), where its launcher takes the split form (ir.Split).
var DefaultMatmulShapes = []MatmulShape{
	{1, 1, 1}, {7, 8, 33}, {8, 33, 7}, {33, 7, 8}, {33, 33, 513}, {513, 8, 7}, {7, 513, 1},
	{8, 8, 8}, {0, 7, 8}, {7, 8, 0},
	{16, 24, 32}, {64, 96, 48}, {128, 128, 256}, {40, 256, 128}, {8, 512, 64},
	{9, 1000, 33},
}

// MatmulRange is the magnitude of matmul operands and epilogue inputs:
// uniform in [-2, 2], exact in the storage type.
const MatmulRange = 2

// DefaultChainShapes are a chain's (M, N, K, P): n within one block of 32
// columns, at a block edge, one past it and many blocks (every block
// rescales), p a partial fragment, one fragment, a partial column chunk
// and several chunks, k = 0 (equal scores), empty rows and an empty n.
var DefaultChainShapes = []ChainShape{
	{1, 1, 1, 1}, {7, 8, 33, 7}, {9, 32, 8, 8}, {9, 33, 7, 33}, {16, 100, 16, 40},
	{8, 513, 20, 9}, {33, 64, 33, 64}, {3, 1000, 9, 70}, {5, 40, 0, 9}, {0, 7, 8, 9}, {9, 0, 8, 9},
}

func matmulShapes(k *ir.Kernel, opts Options) []shape {
	if k.Matmul().Chain != nil {
		return chainShapes(opts)
	}
	shapes := opts.Matmul
	g := quantGroup(k)
	if len(shapes) == 0 {
		shapes = DefaultMatmulShapes
		if g > 0 {
			shapes = QuantMatmulShapes(g)
		}
	}
	if g > 0 { // a quantized B's k is whole groups: a shape's K rounds up to one
		shapes = append([]MatmulShape(nil), shapes...)
		for i := range shapes {
			shapes[i].K = (shapes[i].K + g - 1) / g * g
		}
	}
	var out []shape
	for _, s := range shapes {
		out = append(out, shape{sizes: map[string]int{"m": s.M, "n": s.N, "k": s.K},
			seed: uint64(s.M)<<40 | uint64(s.N)<<20 | uint64(s.K), n: s.M * s.N, rows: s.M, cols: s.N})
	}
	return out
}

// chainShapes are a chain's launches: Options.Chain, or DefaultChainShapes.
func chainShapes(opts Options) []shape {
	shapes := opts.Chain
	if len(shapes) == 0 {
		shapes = DefaultChainShapes
	}
	var out []shape
	for _, s := range shapes {
		out = append(out, shape{sizes: map[string]int{"m": s.M, "n": s.N, "k": s.K, "p": s.P},
			seed: uint64(s.M)<<45 | uint64(s.N)<<30 | uint64(s.K)<<15 | uint64(s.P), n: s.M * s.P, rows: s.M, cols: s.P})
	}
	return out
}

// matmulInputs draws every input uniformly in [-MatmulRange, MatmulRange].
// Unless opts.Plain, rows of A are adversarial as a rowwise kernel's are
// (RowKindOf over m rows): row 1 holds a NaN at a seeded column, rows 2 and
// 3 a +Inf and a -Inf, row 4 zeros (an output row of equal values: a
// uniform softmax, a zero variance), row 6 huge values (±MatmulHuge). The
// NaN and the infinities must reach exactly their rows of the output. Row 5
// (subnormals) stays mixed: a product of a subnormal rounds with an
// absolute error the γ_K bound does not cover, and Apple GPUs may flush
// subnormals in the matrix units, which the emulation cannot say.
func matmulInputs(r *rand.Rand, k *ir.Kernel, v ir.Variant, sizes map[string]int, opts Options) [][]float64 {
	vals := make([][]float64, len(k.Bindings))
	for _, b := range k.BindingsOf(ir.Input) {
		if b.Quant == nil {
			vals[b.Index] = Inputs(r, storedCount(b, sizes), elemType(b, v), MatmulRange, false)
		}
	}
	quantInputs(r, k, v, sizes, vals, opts.Plain)
	mm := k.Matmul()
	m, kk := sizes["m"], sizes["k"]
	if opts.Plain || kk == 0 {
		return vals
	}
	a, t := vals[mm.A.Binding], elemType(k.Bindings[mm.A.Binding], v)
	huge := dtype.Round(MatmulHuge(t), t)
	for i := range m {
		col := r.IntN(kk)
		switch RowKindOf(i, m) {
		case NaNRow:
			a[at(i, col, m, kk, mm.A.ColMajor)] = math.NaN()
		case PosInfRow:
			a[at(i, col, m, kk, mm.A.ColMajor)] = math.Inf(1)
		case NegInfRow:
			a[at(i, col, m, kk, mm.A.ColMajor)] = math.Inf(-1)
		case ZeroRow:
			for p := range kk {
				a[at(i, p, m, kk, mm.A.ColMajor)] = 0
			}
		case HugeRow:
			for p := range kk {
				a[at(i, p, m, kk, mm.A.ColMajor)] = huge * float64(1-2*r.IntN(2))
			}
		}
	}
	return vals
}

// MatmulHuge is the magnitude of a huge row of A: 2^40 (2^14 in f16, whose
// largest finite value is 65504). With B in [-2, 2] and K ≤ 1024 an
// accumulator stays below 2^51, its square below 2^102 and a row's sum of
// squares over N ≤ 2^20 below 2^122, far from f32's overflow at 2^128: the
// epilogues' f32 arithmetic (rms_norm's mean of squares) is exercised at
// large magnitudes without an overflow the f64 reference would not see.
// In f16 the accumulators (up to 2^25) still overflow the f16 output, which
// the reference rounds to ±Inf as the kernel's store does.
func MatmulHuge(t dtype.DType) float64 {
	if t == dtype.F16 {
		return 0x1p14
	}
	return 0x1p40
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
	m, n := c.sizes["m"], c.sizes["n"]
	a := c.vals[mm.A.Binding]
	ins, outs := k.ElementInputs(0), k.BindingsOf(ir.Output)
	if mm.Chain != nil {
		chainReference(c, visit)
		return
	}
	if mm.Rows != nil {
		matmulRowReference(c, visit)
		return
	}
	x := make([]float64, len(ins))
	accs, errs := make([]float64, len(mm.B)), make([]float64, len(mm.B))
	bvals, bmags := operandsOf(c)
	for i := range m {
		for j := range n {
			for bi, op := range mm.B {
				accs[bi], errs[bi] = dot(c, a, bvals[bi], bmags[bi], op, i, j)
			}
			for e, b := range ins {
				x[e] = c.vals[b.Index][elemAt(b, i, j, n)]
			}
			want, bound := k.EvalEpilogueBound(ir.MatmulAt{Row: i, Col: j, M: m, N: n}, x, accs, errs, c.params, c.rounding)
			for o, b := range outs {
				visit(b, i*n+j, i, want[o], bound[o])
			}
		}
	}
}

// matmulRowReference is matmulReference for a row-reducing matmul: per row
// the accumulators (with the γ_K bound) and the epilogue inputs along the
// row, then the rowwise passes with running error analysis
// (ir.Kernel.EvalMatmulRowBound).
func matmulRowReference(c *check, visit visitor) {
	k := c.k
	mm := k.Matmul()
	m, n := c.sizes["m"], c.sizes["n"]
	a := c.vals[mm.A.Binding]
	ins, outs := k.ElementInputs(0), k.BindingsOf(ir.Output)
	in := make([][]float64, len(ins))
	accs, errs := make([][]float64, len(mm.B)), make([][]float64, len(mm.B))
	for e := range in {
		in[e] = make([]float64, n)
	}
	for bi := range mm.B {
		accs[bi], errs[bi] = make([]float64, n), make([]float64, n)
	}
	bvals, bmags := operandsOf(c)
	for i := range m {
		for j := range n {
			for bi, op := range mm.B {
				accs[bi][j], errs[bi][j] = dot(c, a, bvals[bi], bmags[bi], op, i, j)
			}
			for e, b := range ins {
				in[e][j] = c.vals[b.Index][elemAt(b, i, j, n)]
			}
		}
		want, bound := k.EvalMatmulRowBound(ir.MatmulAt{Row: i, M: m, N: n}, in, accs, errs, c.params, c.rounding)
		for o, b := range outs {
			for j := range n {
				visit(b, i*n+j, i, want[o][j], bound[o][j])
			}
		}
	}
}

// operandsOf are every B's values and bound magnitudes (operandValues).
func operandsOf(c *check) (vals, mags [][]float64) {
	for _, op := range c.k.Matmul().B {
		v, g := operandValues(c, op)
		vals, mags = append(vals, v), append(mags, g)
	}
	return vals, mags
}

// dot is accumulator (i, j) of B op in float64 (each product of two
// stored values is exact; the sum rounds at 2^-53) and its γ bound
// (gammaOf) over the products' magnitudes. A NaN or infinite product makes
// the sum NaN or that infinity in every order and precision: exact, no
// bound.
func dot(c *check, a, b, mag []float64, op ir.Operand, i, j int) (sum, bound float64) {
	mm := c.k.Matmul()
	m, n, kk := c.sizes["m"], c.sizes["n"], c.sizes["k"]
	var sa, suma float64
	for p := range kk {
		av, bi := a[at(i, p, m, kk, mm.A.ColMajor)], at(p, j, kk, n, op.ColMajor)
		prod := av * b[bi]
		sum += prod
		if !math.IsInf(prod, 0) && !math.IsNaN(prod) {
			sa += math.Abs(av * mag[bi])
			suma += math.Abs(av)
		}
	}
	if math.IsInf(sum, 0) || math.IsNaN(sum) {
		return sum, 0
	}
	if unit, abs := c.k.QuantWeightRounding(c.opts.Backend, c.v.DType); op.Quant != nil && unit > 0 {
		return sum, roundedWeightsBound(kk, unit, abs, sa, suma)
	}
	return sum, gammaOf(kk, op) * sa
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

// chainReference is matmulReference for a chain: per row the scores from
// the accumulators (with the γ_K bound, through the score formula,
// ir.Kernel.EvalChainScoreBound), then softmax(scores)·V with the bound of
// the streaming f32 evaluation (ir.SoftmaxMatmulRowBoundWeights, blocks of
// the backend's keys per step, weights rounded as its port rounds them).
func chainReference(c *check, visit visitor) {
	k := c.k
	mm := k.Matmul()
	ch := mm.Chain
	m, n, p := c.sizes["m"], c.sizes["n"], c.sizes["p"]
	a, v := c.vals[mm.A.Binding], c.vals[ch.Then.Binding]
	bvals, bmags := operandsOf(c)
	out := k.BindingsOf(ir.Output)[0]
	s, serr := make([]float64, n), make([]float64, n)
	vAt := func(j, col int) float64 { return v[at(j, col, n, p, ch.Then.ColMajor)] }
	for i := range m {
		for j := range n {
			sum, e := dot(c, a, bvals[0], bmags[0], mm.B[0], i, j)
			s[j], serr[j] = k.EvalChainScoreBound(ir.MatmulAt{Row: i, Col: j, M: m, N: n}, sum, e, c.params, c.rounding)
		}
		want, bound := ir.SoftmaxMatmulRowBoundWeights(s, serr, vAt, p, k.ChainBlock(c.opts.Backend, c.v.DType),
			k.ChainWeightUnit(c.opts.Backend, c.v.DType), c.rounding)
		for col := range p {
			visit(out, i*p+col, i, want[col], bound[col])
		}
	}
}
