package parity

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
)

// Lane is one output element of one launch: where it is, the inputs it was
// computed from, and how it compares with the reference.
type Lane struct {
	N      int       // the launch's element count
	Index  int       // the element
	Output string    // the output's name
	Inputs []string  // input names, in binding order
	Values []float64 // the inputs as stored
	Got    float64
	Want   float64 // the float64 reference
	// Allowed is abs + rel·|want| + the rounding bound: how far Got may be
	// from Want.
	Allowed float64
	// Excess is |got − want| as a share of Allowed: up to 1 passes. It is
	// 0 for lanes equal to the correctly rounded reference, and +Inf for
	// NaNs and infinities where the reference differs.
	Excess float64
	// Note explains a failure that is not a distance: a NaN or infinity
	// where the reference has none, or a lane whose value changed with the
	// lane order.
	Note string
	// Rowwise lanes: Cols > 0, the lane is Output[Row, Col] of a launch of
	// N rows (Index is Row·Cols + Col), Values are the inputs at that
	// element (a row vector's at Col), and Kind is what the row holds.
	Row, Col, Cols int
	Kind           RowKind
}

// Where names the lane's output element: "y" for an elementwise lane,
// "y[3, 17]" (row, column) for a rowwise one.
func (l Lane) Where() string {
	if l.Cols == 0 {
		return l.Output
	}
	return fmt.Sprintf("%s[%d, %d]", l.Output, l.Row, l.Col)
}

// shape is the launch the lane belongs to: "n=9" or "rows=11 cols=64, a
// row of subnormals".
func (l Lane) shape() string {
	if l.Cols == 0 {
		return fmt.Sprintf("n=%d", l.N)
	}
	return fmt.Sprintf("rows=%d cols=%d, %s", l.N, l.Cols, l.Kind)
}

// excessOf is |got − want| as a share of allowed: up to 1 passes;
// mismatched NaNs and infinities (a note) are +Inf.
func excessOf(got, want, allowed float64, note string) float64 {
	if note != "" {
		return math.Inf(1)
	}
	d := math.Abs(got - want)
	switch {
	case math.IsNaN(d) || d == 0:
		return 0
	case allowed > 0:
		return d / allowed
	}
	return math.Inf(1)
}

// At names the lane's inputs: "x=-3.21" or "gate=1.5, up=-0.25".
func (l Lane) At() string {
	parts := make([]string, len(l.Values))
	for i, v := range l.Values {
		name := fmt.Sprintf("in%d", i)
		if i < len(l.Inputs) {
			name = l.Inputs[i]
		}
		parts[i] = name + "=" + num(v)
	}
	return strings.Join(parts, ", ")
}

func (l Lane) String() string {
	s := fmt.Sprintf("n=%d %s[%d] at %s: got %s, want %s", l.N, l.Output, l.Index, l.At(), num(l.Got), num(l.Want))
	if l.Cols > 0 {
		s = fmt.Sprintf("%s %s at %s: got %s, want %s", l.shape(), l.Where(), l.At(), num(l.Got), num(l.Want))
	}
	if l.Note != "" {
		return s + " (" + l.Note + ")"
	}
	return s + fmt.Sprintf(" ± %s (|err| %s%% of it)", num(l.Allowed), num(100*l.Excess))
}

// num prints a value briefly: 3 significant digits.
func num(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }

// Report is the lane-level report of one variant over every size it ran
// at: how many lanes differ beyond the tolerance, the largest errors, and
// the lane closest to failing (or failing worst).
type Report struct {
	HostName string
	DType    dtype.DType
	Sizes    []int
	Lanes    int // output elements compared
	Differ   int // lanes beyond the tolerance (or NaN/Inf where the reference differs)
	// Undecided lanes have a reference at an edge the compute type may
	// land on either side of: overflow, or a partial function's domain
	// (accepted either way; see Result.Undecided).
	Undecided int
	// MaxAbs is the largest |got − want| where both are finite and |want|
	// <= 1: above 1 an absolute error only restates the output's magnitude
	// (a matmul's huge rows gave max_abs 1.78e+21), and MaxRel says it.
	MaxAbs float64
	// MaxRel is the largest |got − want| / |want| over lanes whose reference
	// is at least the storage type's smallest normal (below it every
	// relative error is rounding noise of the subnormal or flushed range).
	MaxRel   float64
	Worst    *Lane // the lane with the largest Excess; nil when every lane is exact
	Failures []Lane
	First    string // the first failure, described, or ""
}

// OK reports whether no lane differs beyond the tolerance.
func (r *Report) OK() bool { return r.Differ == 0 }

// String is the one-line report:
//
//	gelu_tanh_bf16: 0/69651 lanes differ beyond tolerance; max_abs 0.0039 max_rel 0.0039; worst y at x=-3.21: got …
func (r *Report) String() string {
	rel := num(r.MaxRel)
	if r.MaxRel < 0 {
		rel = "n/a"
	}
	s := fmt.Sprintf("%s: %d/%d lanes differ beyond tolerance; max_abs %s max_rel %s", r.HostName, r.Differ, r.Lanes, num(r.MaxAbs), rel)
	switch {
	case r.Worst == nil && r.MaxRel < 0:
	case r.Worst == nil && r.Lanes > 0:
		s += "; every lane equals the correctly rounded reference"
	case r.Worst != nil:
		w := r.Worst
		at := ""
		if a := w.At(); a != "" { // a matmul's element has no inputs to show
			at = " at " + a
		}
		if w.Cols > 0 {
			s += fmt.Sprintf("; worst %s (%s)%s: got %s, want %s", w.Where(), w.shape(), at, num(w.Got), num(w.Want))
		} else {
			s += fmt.Sprintf("; worst %s%s: got %s, want %s", w.Output, at, num(w.Got), num(w.Want))
		}
		if w.Note != "" {
			s += " (" + w.Note + ")"
		} else {
			s += fmt.Sprintf(" (|err| %s%% of the allowed %s)", num(100*w.Excess), num(w.Allowed))
		}
	}
	if r.Undecided > 0 {
		s += fmt.Sprintf("; %d undecided (at an overflow or domain edge within the error bound), accepted either way", r.Undecided)
	}
	return s
}

// maxFailures is how many failing lanes a Result keeps.
const maxFailures = 3

// Summarize folds per-shape results into one Report per variant, in the
// order the variants first appear; Sizes are each result's N (n, or
// rows·cols).
func Summarize(results []Result) []*Report {
	var out []*Report
	by := map[string]*Report{}
	for _, res := range results {
		r := by[res.HostName]
		if r == nil {
			r = &Report{HostName: res.HostName, DType: res.DType}
			by[res.HostName] = r
			out = append(out, r)
		}
		r.Sizes = append(r.Sizes, res.N)
		r.Lanes += res.Checked
		r.Differ += res.Failed
		r.Undecided += res.Undecided
		r.MaxAbs = math.Max(r.MaxAbs, res.MaxAbs)
		r.MaxRel = math.Max(r.MaxRel, res.MaxRel)
		if res.Worst != nil && (r.Worst == nil || res.Worst.Excess > r.Worst.Excess) {
			r.Worst = res.Worst
		}
		for _, f := range res.Failures {
			if len(r.Failures) < maxFailures {
				r.Failures = append(r.Failures, f)
			}
		}
		if r.First == "" {
			r.First = res.First
		}
	}
	return out
}
