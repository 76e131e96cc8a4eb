package kgenrt

import (
	"math"
	"testing"
)

// ColAcc sums in the kernels' order (chunks of ColChunk rows, then ways),
// which float32 shows: 2^24 then ones, in row order, loses every one.
func TestColAccOrder(t *testing.T) {
	const rows = 77
	a := NewColAcc(RowSum, rows, 1)
	terms := make([]float32, rows)
	for r := range terms {
		terms[r] = 1
		if r == 0 {
			terms[r] = 1 << 24
		}
		a.Add(r, 0, terms[r])
	}
	// The model: per chunk, a sequential sum; per way, its chunks from 0;
	// then the ways from 0.
	chunks := (rows + ColChunk - 1) / ColChunk
	part := make([]float32, chunks)
	for r, v := range terms {
		if r%ColChunk == 0 {
			part[r/ColChunk] = v
		} else {
			part[r/ColChunk] += v
		}
	}
	var want float32
	for w := range ColWays {
		var p float32
		for c := w; c < chunks; c += ColWays {
			p += part[c]
		}
		want += p
	}
	if got := a.Result(0); got != want {
		t.Fatalf("ColAcc = %v, the kernels' order gives %v", got, want)
	}
	var seq float32
	for _, v := range terms {
		seq += v
	}
	if seq == want {
		t.Fatalf("the test does not tell the orders apart (%v)", seq)
	}
}

// Zero rows leave the identities: 0, NaN for the mean, -inf, +inf.
func TestColAccNoRows(t *testing.T) {
	for op, want := range map[RowOp]float64{RowSum: 0, RowMean: math.NaN(), RowMax: math.Inf(-1), RowMin: math.Inf(1)} {
		got := float64(NewColAcc(op, 0, 3).Result(2))
		if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("op %d over no rows = %v, want %v", op, got, want)
		}
	}
}
