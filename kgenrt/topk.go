package kgenrt

import (
	"math"
	"sort"
)

// TopK is the CPU references' top-k selection of one row (kgen's topk,
// topk_index and topk_norm; docs/topk.md): the k elements first in the
// order (key descending, column ascending), every NaN ranking above +inf
// and −0 equal to +0. The order is total, so the selection is unique: the
// kernels' k rounds of a team argmax find the same columns whenever their
// keys agree bit for bit, and any sort finds them here.
type TopK struct {
	k    int
	cand []topkCand
}

type topkCand struct {
	key float64 // canonical: NaN as math.NaN(), −0 as +0
	col int32
}

// NewTopK returns a selection of k elements for rows of up to cols.
func NewTopK(k, cols int) *TopK { return &TopK{k: k, cand: make([]topkCand, 0, cols)} }

// Reset starts a new row.
func (t *TopK) Reset() { t.cand = t.cand[:0] }

// Add offers the key of the row's element at col.
func (t *TopK) Add(col int, key float64) {
	switch {
	case math.IsNaN(key):
		key = math.NaN()
	case key == 0:
		key = 0
	}
	t.cand = append(t.cand, topkCand{key: key, col: int32(col)})
}

// before reports whether a ranks before b.
func (a topkCand) before(b topkCand) bool {
	an, bn := math.IsNaN(a.key), math.IsNaN(b.key)
	switch {
	case an != bn:
		return an
	case !an && a.key != b.key:
		return a.key > b.key
	}
	return a.col < b.col
}

// Select orders the row's elements; call it once every key is in.
func (t *TopK) Select() {
	sort.Slice(t.cand, func(i, j int) bool { return t.cand[i].before(t.cand[j]) })
}

// Filled is the slots that hold an element: min(k, cols).
func (t *TopK) Filled() int { return min(t.k, len(t.cand)) }

// Value is slot s's key; −inf past a short row.
func (t *TopK) Value(s int) float64 {
	if s >= t.Filled() {
		return math.Inf(-1)
	}
	return t.cand[s].key
}

// Value32 is Value for the compute-type references.
func (t *TopK) Value32(s int) float32 { return float32(t.Value(s)) }

// Index is slot s's column; −1 past a short row.
func (t *TopK) Index(s int) int32 {
	if s >= t.Filled() {
		return -1
	}
	return t.cand[s].col
}

// Norm32 is topk_norm's slot s as the kernels compute it: the key over the
// float32 sum of the filled slots' keys in slot order; 0 past a short row.
func (t *TopK) Norm32(s int) float32 {
	if s >= t.Filled() {
		return 0
	}
	var sum float32
	for i := range t.Filled() {
		sum += float32(t.cand[i].key)
	}
	return float32(t.cand[s].key) / sum
}

// Norm is topk_norm's slot s in float64 (Reference64).
func (t *TopK) Norm(s int) float64 {
	if s >= t.Filled() {
		return 0
	}
	var sum float64
	for i := range t.Filled() {
		sum += t.cand[i].key
	}
	return t.cand[s].key / sum
}

// fixedDim reads a shape's dimension that is a number (a top-k output's
// baked k), not a size field. By hand: Check allocates nothing, and
// strconv's error for a size field's name would.
func fixedDim(name string) (int, bool) {
	n := 0
	for _, c := range []byte(name) {
		if c < '0' || c > '9' || n > 1<<20 {
			return 0, false
		}
		n = 10*n + int(c-'0')
	}
	return n, name != ""
}
