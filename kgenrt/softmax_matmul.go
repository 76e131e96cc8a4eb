package kgenrt

import "math"

// SoftmaxBlock is the width of a block of scores in the streaming softmax:
// a simdgroup's 32 lanes take one column each.
const SoftmaxBlock = 32

// SoftmaxMatMulF32 returns softmax(S)·V row by row as m×p float32 sums O
// and m row sums l (the output is O/l),
// in the streaming order of an online-softmax kernel (MLX steel
// attention's): S is m×n scores, row-major; V is logically [n, p] (stored
// [p, n] when vColMajor), widened to float32 on load. Per row, the columns
// are taken SoftmaxBlock at a time; for each block
//
//	mNew = max(mOld, max of the block)      (NaN scores are skipped, as fmax does)
//	f    = exp(mOld - mNew)                 (1 while mNew is -Inf)
//	w_j  = exp(s_j - mNew)                  (0 while mNew is -Inf)
//	l    = l·f + Σ_block w_j
//	O_c  = O_c·f + Σ_block w_j·V[j, c]
//
// and the row is O_c / l (the caller divides). n is unbounded: only one block of weights and
// the row's p accumulators are live. This is the order a streaming kernel
// rounds in, one block's sums aside; ir.SoftmaxMatmulRowBound bounds both
// it and any other order of the sums.
func SoftmaxMatMulF32(s []float32, v *Tensor, vColMajor bool, m, n, p int) (o, l []float32) {
	vt := make([]float32, p*n) // V transposed: column c of V is row c here
	for j := range n {
		for c := range p {
			vt[c*n+j] = v.Float32At(at(j, c, n, p, vColMajor))
		}
	}
	o, l = make([]float32, m*p), make([]float32, m)
	parallelRows(m, func(i0, i1 int) {
		w := make([]float32, SoftmaxBlock)
		for i := i0; i < i1; i++ {
			l[i] = softmaxRow(s[i*n:(i+1)*n], vt, n, w, o[i*p:(i+1)*p])
		}
	})
	return o, l
}

// SoftmaxMatMul64 is SoftmaxMatMulF32 in float64 and in two passes (the
// row max first, then the sums): the exact evaluation Reference64 uses,
// with V given as float64 values in its layout.
func SoftmaxMatMul64(s, v []float64, vColMajor bool, m, n, p int) (o, l []float64) {
	o, l = make([]float64, m*p), make([]float64, m)
	parallelRows(m, func(i0, i1 int) {
		for i := i0; i < i1; i++ {
			row := s[i*n : (i+1)*n]
			mx := math.Inf(-1)
			for _, x := range row {
				if x > mx || mx != mx {
					mx = x
				}
			}
			for j, x := range row {
				w := 0.0
				if !math.IsInf(mx, -1) {
					w = math.Exp(x - mx)
				}
				l[i] += w
				for c := range p {
					o[i*p+c] += w * v[at(j, c, n, p, vColMajor)]
				}
			}
		}
	})
	return o, l
}

// softmaxRow computes one row of SoftmaxMatMulF32 into o (p values) and
// returns the row's sum of weights.
func softmaxRow(row, vt []float32, n int, w, o []float32) float32 {
	clear(o)
	mOld, l := float32(math.Inf(-1)), float32(0)
	for j0 := 0; j0 < n; j0 += SoftmaxBlock {
		blk := row[j0:min(j0+SoftmaxBlock, n)]
		mNew := mOld
		for _, x := range blk {
			if x > mNew || mNew != mNew { // fmax: a NaN operand yields the other
				mNew = x
			}
		}
		f := float32(1)
		if !math.IsInf(float64(mNew), -1) {
			f = float32(math.Exp(float64(mOld - mNew)))
		}
		var sum float32
		for t, x := range blk {
			w[t] = 0
			if !math.IsInf(float64(mNew), -1) {
				w[t] = float32(math.Exp(float64(x - mNew)))
			}
			sum += w[t]
		}
		l = l*f + sum
		mOld = mNew
		for c := range o {
			vc := vt[c*n+j0 : c*n+j0+len(blk)]
			var d float32
			for t := range blk {
				d += w[t] * vc[t]
			}
			o[c] = o[c]*f + d
		}
	}
	return l
}
