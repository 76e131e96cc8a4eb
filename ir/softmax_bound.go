package ir

import "math"

// SoftmaxMatmulRowBound is one row of softmax(s)·V in float64 — weights
// w_j = exp(s_j − M), M = max_j s_j, l = Σ w_j, o_c = Σ_j w_j V[j, c] / l —
// with a bound on the error of any f32 evaluation that streams the row in
// blocks of `block` columns with a running max and rescaling (MLX steel
// attention's order, kgenrt.SoftmaxMatMulF32), or evaluates it in two
// passes, or sums in any other order. s are the scores and sErr bounds
// their own errors (|ŝ_j − s_j| ≤ sErr_j, from the first product's γ_K
// bound through the score formula); v(j, c) is V[j, c]; r.Unit is u
// (2^-24) and r.FuncUlps the ulps exp may be off by (c).
//
// Derivation, for a term of block t of B = ceil(n / block):
//
//   - Its weight is ŵ_j = fl(exp(fl(ŝ_j − m_t))) · Π_{r>t} fl(exp(fl(m_{r−1} − m_r))),
//     m_t the running max after block t. The subtractions round with
//     relative error u, an absolute error in the exponent of u·|x| each;
//     since every rescale exponent is ≤ 0 and they telescope, the exponents'
//     errors sum to u·((m_t − ŝ_j) + (M̂ − m_t)) = u·(M̂ − ŝ_j)
//     ≤ u·(M − s_j + 2Δ), Δ = max sErr. The exps add at most B·c·u
//     (relative). The scores' own errors scale w_j by e^{±sErr_j}. So
//     ŵ_j = w_j·e^{−M̂+M}·(1 + η_j), |η_j| ≤ H_j = exp(sErr_j + u(M − s_j + 2Δ)
//   - B·c·u) − 1; the common factor e^{M−M̂} cancels in the ratio. Each
//     rescale is one more rounding of every earlier term: that is the B·c·u
//     of the factors' exps plus the O·f products counted with the sums below.
//   - Perturbed weights move the ratio by
//     |Σ w_j(1+η_j)V_j / Σ w_j(1+η_j) − o| ≤ Σ w_j H_j |V_j − o| / Σ w_j (1 − H_j).
//   - Each term's product w_j·V[j, c] then meets the block's sum (any order
//     of `block` terms) and per block one O·f product and one addition:
//     at most block + 2B roundings, γ_{block+2B} of Σ ŵ_j|V_j| in the
//     numerator; the same count covers l (a 5-level butterfly or a
//     sequential block sum, then l·f + sum). With E_N and E_l so bounded,
//     |N̂/l̂ − N/l| ≤ (E_N + |o|·E_l) / (l̂ − E_l), and the division rounds
//     once more (u|o|).
//
// A row with a NaN or +Inf score, or only −Inf scores, is NaN in every
// order (exact, bound 0). A bound the analysis cannot give (H_j ≥ 1, a
// score error that is infinite) is +Inf: undecided.
func SoftmaxMatmulRowBound(s, sErr []float64, v func(j, c int) float64, p, block int, r Rounding) (vals, bounds []float64) {
	return SoftmaxMatmulRowBoundWeights(s, sErr, v, p, block, 0, r)
}

// SoftmaxMatmulRowBoundWeights is SoftmaxMatmulRowBound for a kernel that
// rounds each weight once more, with unit roundoff wu, before both its
// product with V and the row sum (the CUDA port's tensor cores take the
// weights in the storage type, ir.Kernel.ChainWeightUnit): numerator and
// denominator see the same ŵ_j(1 + δ_j), |δ_j| ≤ wu, so the rounding joins
// η_j: 1 + H_j grows by the factor 1 + wu.
func SoftmaxMatmulRowBoundWeights(s, sErr []float64, v func(j, c int) float64, p, block int, wu float64, r Rounding) (vals, bounds []float64) {
	n := len(s)
	vals, bounds = make([]float64, p), make([]float64, p)
	M, dmax := math.Inf(-1), 0.0
	nonFinite := false
	for j, x := range s {
		switch {
		case math.IsNaN(x) || math.IsInf(x, 1):
			nonFinite = true
		case x > M:
			M = x
		}
		dmax = math.Max(dmax, sErr[j])
	}
	if nonFinite || math.IsInf(M, -1) {
		for c := range vals {
			vals[c] = math.NaN()
		}
		return vals, bounds
	}
	u := r.Unit
	blocks := (n + block - 1) / block
	gamma := gammaN(block+2*blocks, u)
	w, h := make([]float64, n), make([]float64, n)
	var l, lLow float64
	for j, x := range s {
		if math.IsInf(x, -1) { // a masked score: weight exactly 0 in every order
			continue
		}
		w[j] = math.Exp(x - M)
		h[j] = math.Expm1(sErr[j] + u*(M-x+2*dmax) + float64(blocks)*r.FuncUlps*u)
		if wu > 0 {
			h[j] = (1+h[j])*(1+wu) - 1
		}
		l += w[j]
		lLow += w[j] * (1 - h[j])
	}
	for c := range p {
		var num, numAbs float64
		for j := range s {
			num += w[j] * v(j, c)
			numAbs += w[j] * (1 + h[j]) * math.Abs(v(j, c))
		}
		o := num / l
		var perturb float64
		for j := range s {
			perturb += w[j] * h[j] * math.Abs(v(j, c)-o)
		}
		lHat := lLow * (1 - gamma)
		switch {
		case lHat <= 0 || math.IsInf(dmax, 0) || math.IsNaN(dmax):
			bounds[c] = math.Inf(1)
		default:
			bounds[c] = perturb/lLow + gamma*(numAbs+math.Abs(o)*l*(1+maxH(h)))/lHat + u*math.Abs(o)
		}
		vals[c] = o
	}
	return vals, bounds
}

// gammaN is γ_n = n·u / (1 − n·u), the bound of n roundings.
func gammaN(n int, u float64) float64 {
	nu := float64(n) * u
	if nu >= 1 {
		return math.Inf(1)
	}
	return nu / (1 - nu)
}

func maxH(h []float64) float64 {
	m := 0.0
	for _, x := range h {
		m = math.Max(m, x)
	}
	return m
}
