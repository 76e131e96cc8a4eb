package ir_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// maskSpec is a chain whose score is score (a formula of acc, row, col, m,
// n and the i32 params offset and window).
func maskSpec(score string) string {
	params := "params: []\n"
	for _, p := range []string{"offset", "window"} {
		if strings.Contains(score, p) {
			params += "  - {name: " + p + ", type: i32}\n"
		}
	}
	params = strings.Replace(params, "params: []\n  -", "params:\n  -", 1)
	return `kernel: attn
kind: matmul
dtypes: [f32]
matmul: {a: q, b: {name: kc, layout: col_major}, then: v}
` + params + `let:
  - s: ` + score + `
  - e: exp(s - row_max(s))
outputs:
  - o: acc2 / row_sum(e)
`
}

// TestBlockSkipIsSound: for mask formulas of every form the proof takes
// (causal, a sliding window's two-sided mask, negations, a swapped select,
// a mask through lets), BlockSkip.Skips says a block is masked only when
// the formula's condition, evaluated as the kernel does (int32, wrapping),
// masks every element of it; on random blocks and params, near the int32
// edges too. For the causal mask it is exact (no block that could be
// skipped is computed), and formulas it cannot prove get no BlockSkip.
func TestBlockSkipIsSound(t *testing.T) {
	wrap := func(x int64) int64 { return int64(int32(x)) }
	cases := []struct {
		score  string
		masked func(row, col, m, n, offset, window int64) bool // the condition under which s = -inf
		exact  bool
	}{
		{"select(col > row + offset, -inf, acc)", func(r, c, m, n, o, w int64) bool { return c > wrap(r+o) }, true},
		{"select(col > row + offset || col + window <= row + offset, -inf, acc)",
			func(r, c, m, n, o, w int64) bool { return c > wrap(r+o) || wrap(c+w) <= wrap(r+o) }, false},
		{"select(col + window <= row + offset, -inf, acc)", func(r, c, m, n, o, w int64) bool { return wrap(c+w) <= wrap(r+o) }, false},
		{"select(!(col <= row + offset), -inf, acc)", func(r, c, m, n, o, w int64) bool { return !(c <= wrap(r+o)) }, true},
		{"select(col - row <= offset, acc, -inf)", func(r, c, m, n, o, w int64) bool { return !(wrap(c-r) <= o) }, true},
		{"select(row >= n - col && col > 3, -inf, acc)", func(r, c, m, n, o, w int64) bool { return r >= wrap(n-c) && c > 3 }, false},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	edge := []int64{0, 1, -1, 5, -7, 1000, math.MaxInt32, math.MinInt32, math.MaxInt32 - 3, math.MinInt32 + 2}
	for _, c := range cases {
		k := mustBuild(t, maskSpec(c.score))
		sk := k.Matmul().Chain.Skip
		if sk == nil {
			t.Errorf("%s: no BlockSkip", c.score)
			continue
		}
		skipped := 0
		for range 4000 {
			m, n := int64(1+rng.IntN(200)), int64(1+rng.IntN(300))
			rlo := int64(rng.IntN(int(m)))
			rhi := min(m-1, rlo+int64(rng.IntN(8)))
			clo := int64(rng.IntN(int(n)))
			chi := min(n-1, clo+int64(rng.IntN(32)))
			o, w := edge[rng.IntN(len(edge))], edge[rng.IntN(len(edge))]
			if rng.IntN(2) == 0 {
				o, w = int64(rng.IntN(400)-200), int64(rng.IntN(64))
			}
			val := func(u ir.UniformTerm) int64 {
				switch u.Name {
				case "":
					return u.Value
				case "offset":
					return o
				case "window":
					return w
				case "m":
					return m
				}
				return n
			}
			all := true
			for r := rlo; r <= rhi; r++ {
				for col := clo; col <= chi; col++ {
					all = all && c.masked(r, col, m, n, o, w)
				}
			}
			got := sk.Skips(rlo, rhi, clo, chi, val)
			if got && !all {
				t.Fatalf("%s: skips rows %d..%d cols %d..%d (m %d n %d offset %d window %d), which the mask does not hide", c.score, rlo, rhi, clo, chi, m, n, o, w)
			}
			if got {
				skipped++
			}
			if c.exact && all && !got && o > -1<<20 && o < 1<<20 {
				t.Fatalf("%s: computes rows %d..%d cols %d..%d (offset %d), which the mask hides", c.score, rlo, rhi, clo, chi, o)
			}
		}
		if skipped == 0 {
			t.Errorf("%s: no block skipped in 4000", c.score)
		}
	}
	for _, score := range []string{"acc * 2", "select(col * col > row, -inf, acc)", "select(col > row + offset, acc, 0)", "select(acc > 0, -inf, acc)"} {
		if k := mustBuild(t, maskSpec(score)); k.Matmul().Chain.Skip != nil {
			t.Errorf("%s: a BlockSkip for a score it cannot prove", score)
		}
	}
}
