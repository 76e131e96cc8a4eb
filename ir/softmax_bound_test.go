package ir_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgenrt"
)

// softmaxRows are adversarial score rows of width n for the streaming
// softmax: uniform, a max that rises in every block (every block
// rescales), a first block far above the rest (a rescale factor of e^-100,
// and an overflow for a kernel that forgets the running max), equal
// scores, masked (−Inf) columns, huge magnitudes, a NaN and a +Inf.
func softmaxRows(r *rand.Rand, n int) map[string][]float32 {
	rows := map[string][]float32{}
	gen := func(name string, f func(j int) float64) {
		row := make([]float32, n)
		for j := range row {
			row[j] = float32(f(j))
		}
		rows[name] = row
	}
	uni := func(lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }
	gen("uniform", func(int) float64 { return uni(-4, 4) })
	gen("rising", func(j int) float64 { return 0.25*float64(j) + uni(-1, 1) })
	gen("first block high", func(j int) float64 {
		if j < kgenrt.SoftmaxBlock {
			return 100 + uni(-1, 1)
		}
		return uni(-1, 1)
	})
	gen("equal", func(int) float64 { return 0.75 })
	gen("masked", func(j int) float64 {
		if j%3 == 1 {
			return math.Inf(-1)
		}
		return uni(-8, 8)
	})
	gen("huge", func(int) float64 { return uni(-1, 1) * 0x1p20 })
	if n > 2 {
		gen("nan", func(j int) float64 {
			if j == n/2 {
				return math.NaN()
			}
			return uni(-1, 1)
		})
		gen("inf", func(j int) float64 {
			if j == n-1 {
				return math.Inf(1)
			}
			return uni(-1, 1)
		})
	}
	return rows
}

// mutant is a streaming softmax·V row as a kernel might get it wrong.
type mutant int

const (
	faithful       mutant = iota
	missingRescale        // O is not multiplied by exp(mOld − mNew)
	forgetsMax            // the running max becomes the block's max alone
	keepsBlockMax         // the new max is used for the block, the block's own max kept for the next
)

// streamRow is kgenrt.SoftmaxMatMulF32's row order, with a mutation.
func streamRow(row []float32, v [][]float32, p int, mu mutant) []float32 {
	n := len(row)
	o := make([]float32, p)
	mOld, l := float32(math.Inf(-1)), float32(0)
	for j0 := 0; j0 < n; j0 += kgenrt.SoftmaxBlock {
		blk := row[j0:min(j0+kgenrt.SoftmaxBlock, n)]
		mNew := mOld
		if mu == forgetsMax {
			mNew = float32(math.Inf(-1))
		}
		blkMax := float32(math.Inf(-1))
		for _, x := range blk {
			if x > mNew || mNew != mNew {
				mNew = x
			}
			if x > blkMax || blkMax != blkMax {
				blkMax = x
			}
		}
		f := float32(1)
		if !math.IsInf(float64(mNew), -1) {
			f = float32(math.Exp(float64(mOld - mNew)))
		}
		w := make([]float32, len(blk))
		var sum float32
		for t, x := range blk {
			if !math.IsInf(float64(mNew), -1) {
				w[t] = float32(math.Exp(float64(x - mNew)))
			}
			sum += w[t]
		}
		l = l*f + sum
		mOld = mNew
		if mu == keepsBlockMax {
			mOld = blkMax
		}
		for c := range o {
			var d float32
			for t := range blk {
				d += w[t] * v[j0+t][c]
			}
			if mu == missingRescale {
				o[c] += d
			} else {
				o[c] = o[c]*f + d
			}
		}
	}
	for c := range o {
		o[c] /= l
	}
	return o
}

// TestSoftmaxMatmulBoundHolds: kgenrt.SoftmaxMatMulF32 (the streaming
// order) stays within ir.SoftmaxMatmulRowBound on every adversarial row at
// widths around the block and far above it, NaN exactly where the
// reference is NaN; the bound is tight enough to be a test (under 1e-4
// on uniform rows, |V| ≤ 2), and it fails a kernel that drops the
// rescale, forgets the running max or keeps the block's max (mutants of the same loop, which is
// first shown to give kgenrt's bytes unmutated).
func TestSoftmaxMatmulBoundHolds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	rounding := ir.Rounding{Unit: 0x1p-24, FuncUlps: 4}
	caught := map[mutant]bool{}
	for _, n := range []int{1, 7, 32, 33, 100, 1000, 2055} {
		for _, p := range []int{1, 8, 40} {
			v := make([][]float32, n)
			vflat := make([]float32, n*p)
			for j := range v {
				v[j] = make([]float32, p)
				for c := range v[j] {
					v[j][c] = float32(math.Round((r.Float64()*4-2)*256) / 256)
					vflat[j*p+c] = v[j][c]
				}
			}
			vt, err := kgenrt.FromFloat32(kgenrt.F32, vflat, n, p)
			if err != nil {
				t.Fatal(err)
			}
			for name, row := range softmaxRows(r, n) {
				s := make([]float64, n)
				for j, x := range row {
					s[j] = float64(x)
				}
				want, bound := ir.SoftmaxMatmulRowBound(s, make([]float64, n), func(j, c int) float64 { return float64(v[j][c]) }, p, kgenrt.SoftmaxBlock, rounding)
				got := normalized(kgenrt.SoftmaxMatMulF32(row, vt, false, 1, n, p))
				where := fmt.Sprintf("n=%d p=%d %s", n, p, name)
				if local := streamRow(row, v, p, faithful); fmt.Sprint(local) != fmt.Sprint(got) {
					t.Fatalf("%s: the test's loop gives %v, kgenrt %v", where, local, got)
				}
				for c := range p {
					if msg := judge(float64(got[c]), want[c], bound[c]); msg != "" {
						t.Errorf("%s c=%d: %s", where, c, msg)
					}
					if name == "uniform" && bound[c] > 1e-4 { // |V| ≤ 2: the bound is small beside the values
						t.Errorf("%s c=%d: bound %g is loose", where, c, bound[c])
					}
				}
				for _, mu := range []mutant{missingRescale, forgetsMax, keepsBlockMax} {
					bad := streamRow(row, v, p, mu)
					for c := range p {
						if judge(float64(bad[c]), want[c], bound[c]) != "" {
							caught[mu] = true
						}
					}
				}
			}
		}
	}
	for mu, name := range map[mutant]string{missingRescale: "a missing rescale", forgetsMax: "a running max that forgets the old max",
		keepsBlockMax: "a running max that keeps the block's max"} {
		if !caught[mu] {
			t.Errorf("the bound passes a streaming softmax with %s", name)
		}
	}
}

// normalized is one row's O / l.
func normalized(o, l []float32) []float32 {
	for c := range o {
		o[c] /= l[0]
	}
	return o
}

// judge is parity's rule for one value: NaN meets NaN, otherwise
// |got − want| within the bound (+Inf: undecided).
func judge(got, want, bound float64) string {
	switch {
	case math.IsNaN(want) != math.IsNaN(got):
		return fmt.Sprintf("got %g, want %g", got, want)
	case math.IsNaN(want), math.IsInf(bound, 1):
		return ""
	case math.Abs(got-want) > bound:
		return fmt.Sprintf("got %g, want %g: |err| %g over the bound %g", got, want, math.Abs(got-want), bound)
	}
	return ""
}

// TestSoftmaxMatmulBoundCoversScoreErrors: scores off by up to their
// stated error (as the first product's γ_K bound allows) still land within
// the bound of the exact scores.
func TestSoftmaxMatmulBoundCoversScoreErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	rounding := ir.Rounding{Unit: 0x1p-24, FuncUlps: 4}
	const n, p, rel = 300, 4, 1e-4
	vflat := make([]float32, n*p)
	for i := range vflat {
		vflat[i] = float32(r.Float64()*4 - 2)
	}
	vt, err := kgenrt.FromFloat32(kgenrt.F32, vflat, n, p)
	if err != nil {
		t.Fatal(err)
	}
	for trial := range 20 {
		s, serr := make([]float64, n), make([]float64, n)
		row := make([]float32, n)
		for j := range s {
			s[j] = r.Float64()*16 - 8
			serr[j] = rel * math.Abs(s[j])
			row[j] = float32(s[j] * (1 + rel*(2*r.Float64()-1)))
		}
		want, bound := ir.SoftmaxMatmulRowBound(s, serr, func(j, c int) float64 { return float64(vflat[j*p+c]) }, p, kgenrt.SoftmaxBlock, rounding)
		got := normalized(kgenrt.SoftmaxMatMulF32(row, vt, false, 1, n, p))
		for c := range p {
			if msg := judge(float64(got[c]), want[c], bound[c]); msg != "" {
				t.Errorf("trial %d c=%d: %s", trial, c, msg)
			}
		}
	}
}
