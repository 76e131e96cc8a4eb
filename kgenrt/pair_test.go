package kgenrt_test

import (
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgenrt"
)

// TestPairHalfWidthMirrorsTheGenerator holds kgenrt's partner index of
// pair_half(x, w) to the generator's one definition (ir.PairColWidth), and
// the whole-row width to PairHalf, at even and odd widths, widths past the
// row and negative ones.
func TestPairHalfWidthMirrorsTheGenerator(t *testing.T) {
	for cols := 1; cols <= 18; cols++ {
		for w := -3; w <= cols+3; w++ {
			for col := range cols {
				got, want := kgenrt.PairHalfWidth(col, cols, int32(w)), ir.PairColWidth(col, cols, w)
				if got != want {
					t.Fatalf("PairHalfWidth(%d, %d, %d) = %d, ir.PairColWidth says %d", col, cols, w, got, want)
				}
				if got < 0 || got >= cols || kgenrt.PairHalfWidth(got, cols, int32(w)) != col {
					t.Fatalf("PairHalfWidth(%d, %d, %d) = %d: not a pairing inside the row", col, cols, w, got)
				}
				if cols%2 == 0 && w == cols && got != kgenrt.PairHalf(col, cols) {
					t.Fatalf("PairHalfWidth(%d, %d, cols) = %d, PairHalf says %d", col, cols, got, kgenrt.PairHalf(col, cols))
				}
			}
		}
	}
	// A partial width leaves the columns past it alone (rotary_dim 4 of 8).
	for col, want := range []int{2, 3, 0, 1, 4, 5, 6, 7} {
		if got := kgenrt.PairHalfWidth(col, 8, 4); got != want {
			t.Errorf("kgenrt.PairHalfWidth(%d, 8, 4) = %d, want %d", col, got, want)
		}
	}
}
