package ir

import (
	"math"
	"sort"
)

// TopKBefore reports whether key a at column ca ranks before key b at
// column cb in the selection's order (TopK): key descending, every NaN
// first and equal, −0 equal to +0, then column ascending. kgenrt.TopK and
// the kernels' kgen_topk_rank order the same way.
func TopKBefore(a float64, ca int, b float64, cb int) bool {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an != bn:
		return an
	case !an && a != b:
		return a > b
	}
	return ca < cb
}

// TopKOrder returns the columns of keys in the selection's order; the
// first k are the selection.
func TopKOrder(keys []float64) []int {
	cols := make([]int, len(keys))
	for j := range cols {
		cols[j] = j
	}
	sort.Slice(cols, func(i, j int) bool { return TopKBefore(keys[cols[i]], cols[i], keys[cols[j]], cols[j]) })
	return cols
}

// EvalTopKKeysAt is the float64 key of every column of a row with its
// running error bound (EvalRowsBoundAt's evaluation, before the
// selection): what parity judges a near tie by.
func (k *Kernel) EvalTopKKeysAt(row, rows int, in [][]float64, params []float64, r Rounding) (keys, bounds []float64) {
	t := k.TopKSelection()
	if t == nil {
		return nil, nil
	}
	vals, bs := k.rowEvalAt(row, rows, nil, nil, in, params, r).outputs()
	return vals[t.Outputs[0].Out], bs[t.Outputs[0].Out]
}

// selectTopK turns the selection outputs of outputs' result, the key at
// every column, into their k slots (TopKSlots) in the selection's order.
func (e *rowEval) selectTopK(vals, bounds [][]float64) ([][]float64, [][]float64) {
	t := e.rows.TopK
	if t == nil {
		return vals, bounds
	}
	keys, kb := vals[t.Outputs[0].Out], bounds[t.Outputs[0].Out]
	sv, sb := t.Slots(keys, kb, TopKOrder(keys), e.env.r)
	for i, o := range t.Outputs {
		vals[o.Out], bounds[o.Out] = sv[i], sb[i]
	}
	return vals, bounds
}

// Slots are the k slots of each selection output (in Outputs order) when
// the row's columns rank in order (TopKOrder, or an order parity accepts
// for near ties): the keys (−inf past a short row), their columns (−1
// there; exact), and topk_norm's key over the sum of the selected keys,
// whose bound adds the sum's (each key's bound, the float sum's k·u·Σ|keys|)
// and the division's rounding; undecided (+Inf) where the sum's bound
// reaches 0.
func (t *TopK) Slots(keys, kb []float64, order []int, r Rounding) (vals, bounds [][]float64) {
	n := min(t.K, len(order))
	var sum, sumErr, sumAbs float64
	for _, j := range order[:n] {
		sum += keys[j]
		sumErr += kb[j]
		sumAbs += math.Abs(keys[j])
	}
	rounds := boolf(r.Unit > 0)
	sumErr += float64(n) * accumUnit * sumAbs * rounds
	for _, o := range t.Outputs {
		v, b := make([]float64, t.K), make([]float64, t.K)
		for s := range t.K {
			if s >= n {
				v[s] = map[TopKWhat]float64{TopKValues: math.Inf(-1), TopKIndex: -1, TopKNorm: 0}[o.What]
				continue
			}
			j := order[s]
			switch o.What {
			case TopKValues:
				v[s], b[s] = keys[j], kb[j]
			case TopKIndex:
				v[s] = float64(j)
			case TopKNorm:
				w := keys[j] / sum
				v[s] = w
				b[s] = (kb[j]+math.Abs(w)*sumErr)/math.Abs(sum) + accumUnit*math.Abs(w)*rounds
				if sumErr > 0 && math.Abs(sum) <= sumErr || math.IsNaN(b[s]) && !math.IsNaN(w) {
					b[s] = math.Inf(1) // the sum may be 0 or change sign within its bound: undecided
				}
			}
		}
		vals, bounds = append(vals, v), append(bounds, b)
	}
	return vals, bounds
}
