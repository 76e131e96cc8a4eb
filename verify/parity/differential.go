package parity

import (
	"fmt"
	"math"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/ir"
)

// The differential check compares the generated Go reference (the CPU
// fallback users run off Apple GPUs) with the MSL as the harness runs it,
// on the very inputs parity judged: Check hands every launch of at most
// MaxSampleElems output elements to Options.Sample, GoReference runs the
// generated Go on them, and Differ compares.
//
// The rule: where no formula of the kernel calls a library function (see
// Exact), both sides must give the same bits for every output element (NaN
// payloads aside: NaN must meet NaN). Otherwise each element passes when
// the bits agree, or both are finite and differ by at most DiffUlps units
// in the last place of the storage type plus twice the element's rounding
// bound (each side is within the bound of the float64 value, so within
// twice of each other; the bound carries cancellation after a function).

// DiffUlps is the differential check's allowance in storage-type ulps for
// kernels that call library functions: both sides evaluate them to within
// a few ulps, in different libraries.
const DiffUlps = 4

// MaxSampleElems caps the output elements of a launch Check samples.
const MaxSampleElems = 1 << 17

// Sample is one launch parity ran: the buffers as launched and as the MSL
// left them, with each output element's rounding bound.
type Sample struct {
	Kernel  *ir.Kernel
	Variant ir.Variant
	Sizes   map[string]int
	Params  []float64
	In      [][]byte    // every binding's bytes as launched, by index
	Got     [][]byte    // every binding's bytes after the MSL run
	Bounds  [][]float64 // each output's per-element bound, by index
}

// Shape is binding b's dimensions at this launch, as stored (a quantized
// binding's last dim is its packed width, ir.Binding.StoredWidth).
func (s *Sample) Shape(b ir.Binding) []int {
	dims := make([]int, len(b.Shape))
	for i, d := range b.Shape {
		dims[i] = s.Sizes[d]
	}
	if n := len(dims); n > 0 {
		dims[n-1] = b.StoredWidth(dims[n-1])
	}
	return dims
}

// Exact reports whether every formula of k uses only operations whose
// result both sides must give bit for bit: arithmetic, comparisons, and
// the functions that are exact or choose an operand (abs, floor, min,
// select…). Row reductions count as exact: the Go reference accumulates in
// the kernel's order.
func Exact(k *ir.Kernel) bool {
	var exprs []*ir.Expr
	for _, s := range k.Steps {
		exprs = append(exprs, s.Expr)
	}
	if r := k.Rows(); r != nil {
		// A step refers to a row reduction by reference: its terms
		// (row_sum(cos(acc))) are the reduction's own expression.
		for _, red := range r.Reductions {
			exprs = append(exprs, red.Arg)
		}
	}
	exact := true
	for _, x := range exprs {
		walk(x, func(e *ir.Expr) {
			if e.Op != ir.OpCall {
				return
			}
			f, ok := funcs.Lookup(e.Func)
			if ok && !f.Reduction && f.Bound.Rule == funcs.Library {
				exact = false
			}
		})
	}
	return exact
}

// plainGemv reports whether s ran a plain matmul's matrix-vector phase
// (ir/matmul_gemv.go): its lanes sum slices of k, then simd_sum adds the
// slices, an order the Go reference's one sum over k does not follow, so
// the two agree within the rounding bound, not bit for bit.
func plainGemv(s *Sample) bool {
	mm := s.Kernel.Matmul()
	return mm != nil && mm.Gemv != nil && mm.Gemv.Plain && s.Kernel.PhasesWhen().Holds(s.Sizes)
}

func walk(e *ir.Expr, fn func(*ir.Expr)) {
	if e == nil {
		return
	}
	fn(e)
	for _, a := range e.Args {
		walk(a, fn)
	}
}

// Differ compares the Go reference's output buffers (by binding index)
// with the MSL's in s. It returns the elements compared, those that differ
// beyond the rule, and a description of each of the first few.
func Differ(s *Sample, goOut [][]byte) (checked, bad int, diffs []string) {
	exact := Exact(s.Kernel) && !plainGemv(s)
	for _, b := range s.Kernel.BindingsOf(ir.Output) {
		t := elemType(b, s.Variant)
		n := len(s.Got[b.Index]) / t.Size()
		if b.Index >= len(goOut) || len(goOut[b.Index]) != len(s.Got[b.Index]) {
			return checked, bad + 1, append(diffs, fmt.Sprintf("output %s: the Go reference wrote %d bytes, the kernel %d", b.Name, lenAt(goOut, b.Index), len(s.Got[b.Index])))
		}
		for i := range n {
			checked++
			g, m := decode(goOut[b.Index], t, i), decode(s.Got[b.Index], t, i)
			if agree(g, m, t, exact, s.Bounds[b.Index][i]) {
				continue
			}
			bad++
			if len(diffs) < maxFailures {
				diffs = append(diffs, fmt.Sprintf("%s[%d] at %s: Go reference %s, MSL %s", b.Name, i, sizesText(s), bitsText(g, t), bitsText(m, t)))
			}
		}
	}
	return checked, bad, diffs
}

func lenAt(b [][]byte, i int) int {
	if i < len(b) {
		return len(b[i])
	}
	return 0
}

// agree is the differential rule for one element (see the package note
// above DiffUlps).
func agree(g, m float64, t dtype.DType, exact bool, bound float64) bool {
	switch {
	case math.IsNaN(g) || math.IsNaN(m):
		return math.IsNaN(g) && math.IsNaN(m)
	case g == m && math.Signbit(g) == math.Signbit(m):
		return true
	case exact || math.IsInf(g, 0) || math.IsInf(m, 0):
		return false
	case t.IsInt(): // integers: only a conversion's bound lets them differ
		return !math.IsInf(bound, 0) && math.Abs(g-m) <= 2*bound
	}
	if !(bound >= 0) || math.IsInf(bound, 0) {
		bound = 0
	}
	return math.Abs(g-m) <= DiffUlps*ulpOf(math.Max(math.Abs(g), math.Abs(m)), t)+2*bound
}

// ulpOf is the spacing of type t's values at magnitude x (its smallest
// subnormal below the normal range).
func ulpOf(x float64, t dtype.DType) float64 {
	lim := LimitsOf(t)
	e := math.Max(math.Floor(math.Log2(x)), math.Log2(lim.MinNormal))
	return math.Ldexp(unit(t)*2, int(e))
}

func sizesText(s *Sample) string {
	if r, ok := s.Sizes["rows"]; ok {
		return fmt.Sprintf("%s rows=%d cols=%d", s.Variant.HostName, r, s.Sizes["cols"])
	}
	return fmt.Sprintf("%s n=%d", s.Variant.HostName, s.Sizes["n"])
}

// bitsText shows a value with its bits, since the check is about bits.
func bitsText(v float64, t dtype.DType) string {
	enc := encode([]float64{v}, t)
	bits := uint64(0)
	for i := len(enc) - 1; i >= 0; i-- {
		bits = bits<<8 | uint64(enc[i])
	}
	return fmt.Sprintf("%s (0x%0*x)", num(v), 2*len(enc), bits)
}
