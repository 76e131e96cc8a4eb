package ir

import "math"

// accumUnit is the unit roundoff of the row accumulators: kgen's kernels
// accumulate row_sum and row_mean in float whatever the compute type.
const accumUnit = 0x1p-24

// EvalRows evaluates one row of a rowwise kernel in float64 with no rounding:
// in[i] is input i's row (cols values; for a `shape: row` input, the
// vector), params are in order; the outputs come back in order, cols values
// each.
func (k *Kernel) EvalRows(in [][]float64, params []float64) [][]float64 {
	vals, _ := k.EvalRowsBound(in, params, Rounding{})
	return vals
}

// EvalRowsBound is EvalRows with EvalBound's running error analysis. A
// reduction's bound is the sum of its terms' bounds (max for row_max and
// row_min) plus D·u·Σ|terms| for the float accumulation, where D is the
// depth of the summation as the kernel runs it: each lane's strided chain
// (ceil(cols/lanes)), one simdgroup (32) and the simdgroups of a row; any
// order with a shallower tree, Apple's simd_sum included, is within it.
func (k *Kernel) EvalRowsBound(in [][]float64, params []float64, r Rounding) (vals, bounds [][]float64) {
	cols := 0
	for i, b := range k.SegmentBindings(0, Input) {
		if !b.Row {
			cols = len(in[i])
			break
		}
	}
	rows := k.Rows
	env := boundEnv{k: k, params: params, r: r,
		lets: make([]dual, len(k.Steps)), reds: make([]dual, len(rows.Reductions))}
	elem := make([]float64, len(in))
	setElem := func(j int) {
		for i := range in {
			elem[i] = in[i][j]
		}
		env.inputs = elem
	}
	// elemLets evaluates the per-element lets available by pass p.
	elemLets := func(p int) {
		for i, st := range k.Steps {
			if !st.Output && !rows.Info[i].PerRow && rows.Info[i].Level < p {
				env.lets[i] = env.eval(st.Expr)
			}
		}
	}
	rowLets := func(level int) {
		for i, st := range k.Steps {
			if !st.Output && rows.Info[i].PerRow && rows.Info[i].Level == level {
				env.lets[i] = env.eval(st.Expr)
			}
		}
	}
	lanes := LanesPerRow(cols, k.Threadgroup)
	depth := float64((cols+lanes-1)/lanes + SimdWidth + lanes/SimdWidth)
	for p := 1; p <= rows.Passes; p++ {
		rowLets(p - 1)
		type acc struct{ v, e, abs float64 }
		accs := make([]acc, len(rows.Reductions))
		for ri, red := range rows.Reductions {
			if red.Level == p && (red.Func == "row_max" || red.Func == "row_min") {
				accs[ri].v = math.Inf(1)
				if red.Func == "row_max" {
					accs[ri].v = math.Inf(-1)
				}
			}
		}
		for j := 0; j < cols; j++ {
			setElem(j)
			elemLets(p)
			for ri, red := range rows.Reductions {
				if red.Level != p {
					continue
				}
				d := env.eval(red.Arg)
				a := &accs[ri]
				switch red.Func {
				case "row_sum", "row_mean":
					a.v += d.v
					a.e += d.e
					a.abs += math.Abs(d.v)
				case "row_max":
					if d.v > a.v || math.IsNaN(a.v) {
						a.v = d.v
					}
					a.e = math.Max(a.e, d.e)
				case "row_min":
					if d.v < a.v || math.IsNaN(a.v) {
						a.v = d.v
					}
					a.e = math.Max(a.e, d.e)
				}
			}
		}
		for ri, red := range rows.Reductions {
			if red.Level != p {
				continue
			}
			a := accs[ri]
			switch red.Func {
			case "row_sum":
				env.reds[ri] = env.round(a.v, a.e+depth*accumUnit*a.abs*boolf(r.Unit > 0))
			case "row_mean":
				n := float64(cols)
				e := (a.e + depth*accumUnit*a.abs*boolf(r.Unit > 0)) / n
				v := a.v / n
				env.reds[ri] = env.round(v, e+accumUnit*math.Abs(v)*boolf(r.Unit > 0))
			default:
				env.reds[ri] = dual{a.v, a.e}
			}
		}
	}
	rowLets(rows.Passes)
	outs := 0
	for _, st := range k.Steps {
		if st.Output {
			outs++
		}
	}
	vals, bounds = make([][]float64, outs), make([][]float64, outs)
	for o := range vals {
		vals[o], bounds[o] = make([]float64, cols), make([]float64, cols)
	}
	for j := 0; j < cols; j++ {
		setElem(j)
		elemLets(rows.Passes + 1)
		o := 0
		for _, st := range k.Steps {
			if st.Output {
				d := env.eval(st.Expr)
				vals[o][j], bounds[o][j] = d.v, d.e
				o++
			}
		}
	}
	return vals, bounds
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
