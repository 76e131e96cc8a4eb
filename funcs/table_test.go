package funcs

import (
	"math"
	"sort"
	"strings"
	"testing"
	"text/template"

	"github.com/kgen-dev/kgen/templates"
)

// TestRowsComplete: every function that is a call (not a row reduction) has
// every column a consumer reads, so that a new row cannot be half written.
func TestRowsComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Table {
		if seen[f.Name] {
			t.Errorf("%s: two rows", f.Name)
		}
		seen[f.Name] = true
		if f.Arity() == 0 || f.Result != Num && f.Name != "topk_index" {
			t.Errorf("%s: arity %d, result %s; want arguments and a number", f.Name, f.Arity(), f.Result)
		}
		if f.Reduction {
			checkReduction(t, f)
			continue
		}
		checkCall(t, f)
	}
}

func checkReduction(t *testing.T, f Func) {
	t.Helper()
	if strings.HasPrefix(f.Name, "topk") { // topk(key, k): a key and an integer literal
		if f.Arity() != 2 || f.Args[0] != Num || f.Args[1] != Int || f.Eval != nil || f.MSL != (Modes{}) || f.CUDA != (Modes{}) || f.Go != (GoRef{}) {
			t.Errorf("%s: a selection takes a number and an integer and has no call columns", f.Name)
		}
		return
	}
	if f.Arity() != 1 || f.Eval != nil || f.MSL != (Modes{}) || f.CUDA != (Modes{}) || f.Go != (GoRef{}) {
		t.Errorf("%s: a reduction has one argument and no call columns (the rowwise schedule computes it)", f.Name)
	}
	if !strings.HasPrefix(f.Name, "row_") && !strings.HasPrefix(f.Name, "col_") && f.Name != "total_sum" {
		t.Errorf("%s: reductions are named row_*, col_* or total_sum", f.Name)
	}
}

func checkCall(t *testing.T, f Func) {
	t.Helper()
	if f.Eval == nil {
		t.Errorf("%s: no float64 evaluation", f.Name)
	}
	needDeriv := f.Bound.Rule == Library || f.Bound.Rule == Rounded
	if needDeriv != (f.Bound.Deriv != nil) {
		t.Errorf("%s: bound rule %d with Deriv set = %v", f.Name, f.Bound.Rule, f.Bound.Deriv != nil)
	}
	for backend, m := range map[string]Modes{"MSL": f.MSL, "CUDA": f.CUDA} {
		for mode, sp := range map[string]Spelling{"precise": m.Precise, "fast": m.Fast} {
			if sp.Name == "" {
				t.Errorf("%s: no %s spelling for math: %s", f.Name, backend, mode)
			}
			if sp.Prelude != "" && !strings.HasPrefix(sp.Prelude, "prelude_") {
				t.Errorf("%s: %s prelude block %q is not named prelude_*", f.Name, backend, sp.Prelude)
			}
		}
	}
	if f.Go.Float64 == (Qual{}) {
		t.Errorf("%s: no Go reference", f.Name)
	}
	choice := f.Bound.Rule == Choice || f.Bound.Rule == Select
	if f.Go.Choice != choice {
		t.Errorf("%s: Go choice %v but bound rule %d: a function that picks an operand never rounds, in both", f.Name, f.Go.Choice, f.Bound.Rule)
	}
	if f.Go.Float64.Path != "math" && f.Go.Float64.Path != Runtime {
		t.Errorf("%s: Go reference %v is neither in math nor in kgenrt (generated code imports only those)", f.Name, f.Go.Float64)
	}
}

// TestPreludeBlocksExist: every prelude block a row names is defined in
// its backend's prelude template.
func TestPreludeBlocksExist(t *testing.T) {
	for backend, dir := range map[string]string{"MSL": "msl", "CUDA": "cuda"} {
		tmpl, err := template.ParseFS(templates.FS, dir+"/prelude.tmpl")
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range Table {
			m := f.MSL
			if backend == "CUDA" {
				m = f.CUDA
			}
			for _, sp := range []Spelling{m.Precise, m.Fast} {
				if sp.Prelude != "" && tmpl.Lookup(sp.Prelude) == nil {
					t.Errorf("%s: %s/prelude.tmpl has no block %s", f.Name, dir, sp.Prelude)
				}
			}
		}
	}
}

// TestArities pins the function set of the contract.
func TestArities(t *testing.T) {
	want := map[int][]string{
		1: {"abs", "ceil", "col_max", "col_mean", "col_min", "col_sum", "cos", "erf", "exp", "exp2", "expm1", "floor", "log", "log1p", "log2", "rint", "round", "row_max", "row_mean", "row_min", "row_sum", "rsqrt", "sigmoid", "sin", "sqrt", "tanh", "total_sum", "trunc"},
		2: {"max", "min", "pow", "topk", "topk_index", "topk_norm"},
		3: {"clamp", "fma", "select"},
	}
	got := map[int][]string{}
	names := Names()
	if !sort.StringsAreSorted(names) {
		t.Errorf("Names() is not sorted: %v", names)
	}
	for _, name := range names {
		f, ok := Lookup(name)
		if !ok {
			t.Fatalf("Lookup(%s) failed", name)
		}
		got[f.Arity()] = append(got[f.Arity()], name)
	}
	for arity, names := range want {
		if strings.Join(got[arity], " ") != strings.Join(names, " ") {
			t.Errorf("arity %d: %v; want %v", arity, got[arity], names)
		}
	}
}

// TestDerivatives holds each row's Deriv to a central difference of its
// Eval, in magnitude (the bound uses only |f'|).
func TestDerivatives(t *testing.T) {
	points := [][]float64{{0.3, 1.7, -0.4}, {0.8, 0.6, 2.5}, {1.9, -1.1, 0.7}}
	for _, f := range Table {
		if f.Bound.Deriv == nil {
			continue
		}
		for _, p := range points {
			a := p[:f.Arity()]
			v := f.Eval(a)
			for i := range a {
				num := centralDifference(f.Eval, a, i)
				got := math.Abs(f.Bound.Deriv(a, v, i))
				if math.Abs(got-num) > 1e-6*math.Max(1, num) {
					t.Errorf("%s at %v: |∂/∂a[%d]| = %g, numerically %g", f.Name, a, i, got, num)
				}
			}
		}
	}
}

func centralDifference(eval func([]float64) float64, a []float64, i int) float64 {
	const h = 1e-6
	lo, hi := append([]float64(nil), a...), append([]float64(nil), a...)
	lo[i] -= h
	hi[i] += h
	return math.Abs(eval(hi)-eval(lo)) / (2 * h)
}

// TestChoiceEval: min and max are IEEE minNum and maxNum (a NaN operand
// yields the other), as MSL fmin/fmax, CUDA fminf/fmaxf and kgenrt.MinNum.
func TestChoiceEval(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		fn   string
		a    []float64
		want float64
	}{
		{"min", []float64{nan, 2}, 2},
		{"min", []float64{1, nan}, 1},
		{"max", []float64{nan, 2}, 2},
		{"max", []float64{-1, 3}, 3},
		{"clamp", []float64{nan, 0, 1}, 0},
		{"clamp", []float64{5, 0, 1}, 1},
		{"select", []float64{1, 2, 3}, 2},
		{"select", []float64{0, 2, 3}, 3},
	} {
		f, _ := Lookup(c.fn)
		if got := f.Eval(c.a); got != c.want {
			t.Errorf("%s%v = %g; want %g", c.fn, c.a, got, c.want)
		}
	}
}
