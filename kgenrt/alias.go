package kgenrt

// Aliasing of views, for the launchers' overlap check (checkOverlap).

// mayAlias reports whether a and b may have an element in common: false
// when either is empty, when their reachable byte spans do not intersect,
// or when their elements provably miss each other (latticesMeet); true
// (conservatively) in every case it cannot decide, such as different
// element sizes or first elements not a whole number of elements apart.
func mayAlias(a, b *Tensor) bool {
	if a.Len() == 0 || b.Len() == 0 || !overlaps(a, b) {
		return false
	}
	if a.strides == nil && b.strides == nil {
		return true // dense spans that intersect share elements
	}
	es := a.dtype.Size()
	if b.dtype.Size() != es {
		return true
	}
	alo, _, _ := a.span()
	blo, _, _ := b.span()
	delta := int(blo - alo) // two's complement: negative when b starts first
	if delta%es != 0 {
		return true
	}
	return latticesMeet(a, b, delta/es)
}

// sameElems reports whether out and in hold the same elements in the same
// logical order (in place): the same dtype and first element, and the same
// bytes when both are contiguous, else the same shape and strides.
func sameElems(out, in *Tensor) bool {
	alo, _, adev := out.span()
	blo, _, bdev := in.span()
	if out.dtype != in.dtype || alo != blo || adev != bdev {
		return false
	}
	if out.strides == nil && in.strides == nil {
		return out.Len() == in.Len()
	}
	if len(out.shape) != len(in.shape) {
		return false
	}
	for d := range out.shape {
		if out.shape[d] != in.shape[d] || (out.shape[d] > 1 && out.strideOf(d) != in.strideOf(d)) {
			return false
		}
	}
	return true
}

// latticeTerm is one stride of the equation latticesMeet solves, with the
// range of its coefficient.
type latticeTerm struct{ s, lo, hi int }

// latticesMeet reports whether some element of a (offsets Σ i_d·sa_d from
// its first) equals some element of b (D + Σ j_d·sb_d), i.e. whether
// Σ i_d·sa_d − Σ j_d·sb_d = D has a solution with every index in range. It
// searches the coefficients stride by stride, largest first, keeping only
// those the smaller strides can still complete: exact for the views
// launches meet (equal strides, nested layouts: few candidates per stride),
// and conservatively true when the search grows past a budget.
func latticesMeet(a, b *Tensor, D int) bool {
	var buf [16]latticeTerm
	terms := buf[:0]
	for d, n := range a.shape {
		terms = addTerm(terms, a.strideOf(d), 0, n-1)
	}
	for d, n := range b.shape {
		terms = addTerm(terms, b.strideOf(d), -(n - 1), 0)
	}
	for i := 1; i < len(terms); i++ { // largest stride first
		for j := i; j > 0 && terms[j].s > terms[j-1].s; j-- {
			terms[j], terms[j-1] = terms[j-1], terms[j]
		}
	}
	if len(terms) > 16 {
		return true
	}
	// lo[p], hi[p]: the range the terms from p on can add
	var lbuf, hbuf [17]int
	lo, hi := lbuf[:len(terms)+1], hbuf[:len(terms)+1]
	for p := len(terms) - 1; p >= 0; p-- {
		lo[p] = lo[p+1] + terms[p].lo*terms[p].s
		hi[p] = hi[p+1] + terms[p].hi*terms[p].s
	}
	l := lattice{terms: terms, lo: lo, hi: hi, budget: 4096}
	return l.search(0, D)
}

// addTerm adds coefficient range [lo, hi] to stride s's term.
func addTerm(terms []latticeTerm, s, lo, hi int) []latticeTerm {
	if s == 0 || lo == hi {
		return terms
	}
	for i := range terms {
		if terms[i].s == s {
			terms[i].lo += lo
			terms[i].hi += hi
			return terms
		}
	}
	return append(terms, latticeTerm{s, lo, hi})
}

// lattice is latticesMeet's search state.
type lattice struct {
	terms  []latticeTerm
	lo, hi []int
	budget int
}

// search reports whether r is reachable by the terms from p on.
func (l *lattice) search(p, r int) bool {
	if l.budget--; l.budget < 0 {
		return true // too many candidates: assume they meet
	}
	if p == len(l.terms) {
		return r == 0
	}
	t := l.terms[p]
	// r − c·s must lie in [lo[p+1], hi[p+1]]
	cmin := max(t.lo, ceilDiv(r-l.hi[p+1], t.s))
	cmax := min(t.hi, floorDiv(r-l.lo[p+1], t.s))
	for c := cmin; c <= cmax; c++ {
		if l.search(p+1, r-c*t.s) {
			return true
		}
	}
	return false
}

// floorDiv and ceilDiv round a quotient (b > 0) toward −∞ and +∞.
func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func ceilDiv(a, b int) int { return -floorDiv(-a, b) }
