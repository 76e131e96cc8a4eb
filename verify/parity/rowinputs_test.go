package parity

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kgen-dev/kgen/dtype"
)

// TestRowInputsAdversarial: at 11 rows, rows 1-6 are the designated rows
// (a NaN, +Inf, -Inf, ±0, subnormals, huge values) and the rest are mixed
// and finite; every value is exact in its type and within ±DefaultRange;
// the special value of a NaN or ±Inf row sits in its carrier only; a wide
// mixed row meets ±0, subnormals and ±DefaultRange; fewer than 8 rows are
// all mixed.
func TestRowInputsAdversarial(t *testing.T) {
	for _, typ := range dtype.Floats {
		lim := LimitsOf(typ)
		for _, cols := range []int{1, 7, 64, 4304} {
			r := rand.New(rand.NewPCG(1, uint64(cols)))
			const rows = 11
			for row := 0; row < rows; row++ {
				kind := RowKindOf(row, rows)
				if want := MixedRow; (row == 0 || row > len(SpecialRows)) && kind != want {
					t.Fatalf("row %d of %d is %s, want mixed", row, rows, kind)
				}
				for _, carrier := range []bool{true, false} {
					vals := rowValues(r, kind, cols, typ, DefaultRange, carrier)
					var nan, pinf, ninf, zero, sub, edge, huge int
					for _, v := range vals {
						a := math.Abs(v)
						switch {
						case math.IsNaN(v):
							nan++
							continue
						case math.IsInf(v, 1):
							pinf++
							continue
						case math.IsInf(v, -1):
							ninf++
							continue
						case v == 0:
							zero++
						case a < lim.MinNormal:
							sub++
						}
						if v != dtype.Round(v, typ) || a > DefaultRange {
							t.Fatalf("%s %s: %g is not exact in the type or beyond ±%d", typ, kind, v, DefaultRange)
						}
						if a == DefaultRange {
							edge++
						}
						if a >= DefaultRange/2 {
							huge++
						}
					}
					special := map[RowKind]int{NaNRow: nan, PosInfRow: pinf, NegInfRow: ninf}
					for k, n := range special {
						want := 0
						if k == kind && carrier {
							want = 1
						}
						if n != want {
							t.Errorf("%s cols=%d %s (carrier %v): %d special values of %s, want %d", typ, cols, kind, carrier, n, k, want)
						}
					}
					switch kind {
					case ZeroRow:
						if zero != cols {
							t.Errorf("%s cols=%d: %d zeros in a zero row", typ, cols, zero)
						}
					case SubnormalRow:
						if sub != cols {
							t.Errorf("%s cols=%d: %d subnormals in a subnormal row", typ, cols, sub)
						}
					case HugeRow:
						if huge != cols || (cols >= 2 && edge < 2) {
							t.Errorf("%s cols=%d: %d huge values, %d at ±%d, in a huge row", typ, cols, huge, edge, DefaultRange)
						}
					case MixedRow:
						if cols >= 4304 && (zero == 0 || sub < 4 || edge < 2) {
							t.Errorf("%s cols=%d: a mixed row with %d zeros, %d subnormals, %d at ±%d", typ, cols, zero, sub, edge, DefaultRange)
						}
					}
				}
			}
		}
	}
	for rows := 0; rows < len(SpecialRows)+2; rows++ {
		for row := 0; row < rows; row++ {
			if k := RowKindOf(row, rows); k != MixedRow {
				t.Errorf("row %d of %d is %s, want mixed", row, rows, k)
			}
		}
	}
}

// TestRowLaneString pins how a rowwise lane is named in reports.
func TestRowLaneString(t *testing.T) {
	l := Lane{N: 11, Index: 3*64 + 17, Output: "y", Inputs: []string{"x", "w"}, Values: []float64{1.5, -2},
		Got: 0.5, Want: 0.25, Allowed: 0.01, Excess: 25, Row: 3, Col: 17, Cols: 64, Kind: SubnormalRow}
	want := "rows=11 cols=64, a row of subnormals y[3, 17] at x=1.5, w=-2: got 0.5, want 0.25 ± 0.01 (|err| 2.5e+03% of it)"
	if got := l.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	r := Report{HostName: "rms_norm_f32", Lanes: 704, Differ: 1, MaxAbs: 0.25, MaxRel: 1, Worst: &l}
	want = "rms_norm_f32: 1/704 lanes differ beyond tolerance; max_abs 0.25 max_rel 1; worst y[3, 17] (rows=11 cols=64, a row of subnormals) at x=1.5, w=-2: got 0.5, want 0.25 (|err| 2.5e+03% of the allowed 0.01)"
	if got := r.String(); got != want {
		t.Errorf("Report.String() = %q, want %q", got, want)
	}
}
