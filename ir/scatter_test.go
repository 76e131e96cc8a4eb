package ir_test

import (
	"fmt"
	"strings"
	"testing"
)

// scatterSpec is a rowwise spec with one positioned write at `at` into a
// [heads, seq, cols] output.
func scatterSpec(at string) string {
	return fmt.Sprintf(`
kernel: k
kind: rowwise
dtypes: [f32]
inputs: [x, {name: ids, dtype: i32, shape: [rows]}]
params: [{name: p, type: i32}, {name: g, type: i32}]
outputs:
  - {name: cache, shape: [heads, seq, cols], at: %s, formula: "x + f32(ids + p + g)"}
`, at)
}

// TestScatterProof: the structural injectivity rules accept the forms
// docs/indexing.md lists (with the divisor of row / n, row % n recorded
// as needing to be nonzero) and refuse every other, naming why.
func TestScatterProof(t *testing.T) {
	for _, c := range []struct {
		at      string
		why     string // "" when accepted
		nonZero int
	}{
		{"[0, row, col]", "", 0},
		{"[ids, row + 3, col - 1]", "", 0},
		{"[p, p + row, cols - 1 + col]", "", 0},
		{"[row / g, p + row % g, col]", "", 1},
		{"[row % g + 1, row / g - p, col + p]", "", 1},
		{"[row / g, row % p, col]", "no coordinate is row", 0},
		{"[row * 2, 0, col]", "no coordinate is row", 0},
		{"[ids, 0, col]", "no coordinate is row", 0},
		{"[row, ids, 2 * col]", "not col plus or minus", 0},
		{"[row, col, col]", "more than one coordinate", 0},
		{"[row, ids, 0]", "no coordinate is col", 0},
		{"[row, ids, col + ids]", "not col plus or minus", 0},
		{"[row, 0, p - col]", "not col plus or minus", 0},
		{"[row - col, 0, col]", "not col plus or minus", 0},
	} {
		k, diags := build(t, scatterSpec(c.at))
		switch {
		case c.why == "" && k == nil:
			t.Errorf("at %s: refused: %v", c.at, diags)
		case c.why == "" && len(k.Rows().Scatters[0].NonZero) != c.nonZero:
			t.Errorf("at %s: %d divisors to keep nonzero, want %d", c.at, len(k.Rows().Scatters[0].NonZero), c.nonZero)
		case c.why != "" && k != nil:
			t.Errorf("at %s: accepted; want refused (%s)", c.at, c.why)
		case c.why != "" && (len(diags) != 1 || !strings.Contains(diags[0].Msg, "cannot prove") || !strings.Contains(diags[0].Msg, c.why)):
			t.Errorf("at %s: %v; want one refusal saying %q", c.at, diags, c.why)
		}
	}
}
