// Package parity runs every variant of a generated kernel on the CPU
// (through verify/mslcpu) and compares each element with the kernel's
// float64 evaluation (ir.Kernel.Eval64) under the variant's tolerance:
// pass when |got-ref| <= abs + rel*|ref| + bound, where bound is the
// first-order rounding-error bound of evaluating the formulas in the compute
// type (ir.Kernel.EvalBound). The spec's tolerance covers the output's
// storage rounding and implementation differences; the bound covers what
// cancellation in the formula does to compute-type rounding, per element.
// The reference is computed from the inputs as stored (already rounded to
// their dtype), so storage rounding of inputs is not counted as error.
//
// Inputs are adversarial by default (see Inputs): magnitudes to ±170, a
// far-negative tail, ±0, ±subnormals of the storage type, ±Inf and NaN,
// mixed into seeded random values; sizes cover 0, 1, a thread's elements
// ±1, a vector ±1, a partial last threadgroup and a large launch
// (SizesFor). NaN must come out exactly where the reference is NaN, and
// infinities must match. Summarize folds the per-size results into one
// lane-level Report per variant; Mutate and Options.Mutate show that the
// check fails when a kernel stores its input, or 0, instead.
package parity

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// Options shape the generated test data and the runs.
type Options struct {
	Sizes []int // element counts to run; default SizesFor(k)
	// Range is the largest finite input magnitude: DefaultRange (170), or 8
	// with Plain.
	Range float64
	Seed  uint64
	// Plain draws inputs uniformly from [-Range, Range] with no special
	// values (no ±0, subnormals, infinities or NaN).
	Plain bool
	// Mutate rewrites the kernel's stores before running it (see Mutate):
	// the check must then fail for every variant.
	Mutate Mutation
	// Orders are the lane orders each size runs in; every order must give
	// the same bytes. Default: forward only, or all three when the source
	// synchronises (barriers, simd functions), where a race can hide.
	Orders []mslcpu.LaneOrder
	// Sanitize runs every launch in an instrumented build (mslcpu.Sanitizer).
	Sanitize mslcpu.Sanitizer
	// Flags are extra compiler flags (mslcpu.Launch.Flags).
	Flags []string
	// Run executes one launch and returns every buffer afterwards; nil is
	// the CPU harness (mslcpu.Run). The CUDA parity test passes a GPU runner
	// so both backends see the same inputs and the same tolerance rule.
	Run func(ctx context.Context, l mslcpu.Launch) ([][]byte, error)
}

// Result is the outcome of one variant at one size.
type Result struct {
	HostName string
	DType    dtype.DType
	N        int
	Checked  int // elements compared (NaN-for-NaN matches count)
	Failed   int // elements outside tolerance (or changed by the lane order)
	// Undecided counts elements whose reference sits so close to the
	// compute type's overflow edge that either outcome is accepted (see
	// ir.Rounding.Overflow).
	Undecided int
	MaxAbs    float64 // largest |got-ref| among finite pairs
	MaxRel    float64 // largest |got-ref|/|ref| where |ref| >= the storage type's smallest normal
	Worst     *Lane   // the lane with the largest Excess; nil when every lane is exact
	Failures  []Lane  // the first few failing lanes
	First     string  // the first failure, described, or ""
}

// DefaultSizes is a fixed list of sizes for runners that want one: one
// element, a partial first vector, whole vectors, a tail after whole
// vectors, and several threadgroups. Check's own default is SizesFor(k).
var DefaultSizes = []int{1, 3, 8, 9, 1000, 4099}

// LargeSize is the large launch of SizesFor: many threadgroups and a tail.
const LargeSize = 1<<16 + 3

// SizesFor returns the element counts parity runs kernel k at: 0 (a launch
// of no threads), 1, one thread's elements ±1 (a whole vectorised slice
// and its tails), a 16-byte vector of the widest storage type ±1, a count
// that leaves the last threadgroup partial and the last thread a tail, and
// LargeSize.
func SizesFor(k *ir.Kernel) []int {
	ept := max(k.Schedule.(*ir.Elems).PerThread, 1)
	tg := max(k.Threadgroup, 1)
	vec := 4 // a float4
	set := map[int]bool{0: true, 1: true, ept - 1: true, ept: true, ept + 1: true,
		vec - 1: true, vec: true, vec + 1: true, tg*ept + tg*ept/2 + ept/2 + 1: true, LargeSize: true}
	var out []int
	for n := range set {
		if n >= 0 {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out
}

// Check runs every variant of the elementwise kernel k at every size.
func Check(ctx context.Context, k *ir.Kernel, source []byte, opts Options) ([]Result, error) {
	if k.Kind == ir.Rowwise {
		return nil, fmt.Errorf("parity: %s is a rowwise kernel: use CheckRows", k.Name)
	}
	if len(opts.Sizes) == 0 {
		opts.Sizes = SizesFor(k)
	}
	if opts.Range == 0 {
		opts.Range = DefaultRange
		if opts.Plain {
			opts.Range = 8
		}
	}
	if opts.Mutate != NoMutation {
		m, err := Mutate(source, k, opts.Mutate)
		if err != nil {
			return nil, err
		}
		source = m
	}
	if len(opts.Orders) == 0 {
		opts.Orders = []mslcpu.LaneOrder{mslcpu.Forward}
		if opts.Run == nil && mslcpu.Synchronises(source) {
			opts.Orders = append(opts.Orders, mslcpu.Reverse, mslcpu.Shuffled)
		}
	}
	var out []Result
	for _, v := range k.Variants {
		for _, n := range opts.Sizes {
			r, err := checkOne(ctx, k, v, source, n, opts)
			if err != nil {
				return out, err
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func checkOne(ctx context.Context, k *ir.Kernel, v ir.Variant, source []byte, n int, opts Options) (Result, error) {
	rng := rand.New(rand.NewPCG(opts.Seed, uint64(n)))
	ins := k.BindingsOf(ir.Input)
	inVals := make([][]float64, len(ins)) // as stored, exactly
	buffers := make([][]byte, len(k.Bindings))
	for i, b := range ins {
		t := elemType(b, v)
		inVals[i] = Inputs(rng, n, t, opts.Range, !opts.Plain)
		buffers[b.Index] = encode(inVals[i], t)
	}
	outs := k.BindingsOf(ir.Output)
	for _, b := range outs {
		nan := make([]float64, n)
		for j := range nan {
			nan[j] = math.NaN() // every element must be overwritten
		}
		buffers[b.Index] = encode(nan, elemType(b, v))
	}
	params := paramValues(k)
	args := k.ArgsBinding()
	buffers[args.Index] = argsBytes(args, uint32(n), params)
	threads := (n + k.Schedule.(*ir.Elems).PerThread - 1) / k.Schedule.(*ir.Elems).PerThread
	run := mslcpu.Run
	if opts.Run != nil {
		run = opts.Run
	}
	var res Result
	var first [][]byte
	for i, order := range opts.Orders {
		got, err := run(ctx, mslcpu.Launch{
			Source: source, HostName: v.HostName, Buffers: buffers,
			Grid: [3]uint32{uint32(threads), 1, 1}, Threadgroup: [3]uint32{uint32(k.Launch(ir.Metal).Threadgroup[0]), 1, 1},
			Order: order, Sanitize: opts.Sanitize, Flags: opts.Flags,
		})
		if err != nil {
			return Result{}, err
		}
		if i == 0 {
			first = got
			res = compare(k, v, n, inVals, params, got)
			continue
		}
		orderDiff(&res, k, v, n, inVals, first, got, opts.Orders[0], order)
	}
	if len(res.Failures) > 0 {
		res.First = res.Failures[0].String()
	}
	return res, nil
}

func compare(k *ir.Kernel, v ir.Variant, n int, inVals [][]float64, params []float64, got [][]byte) Result {
	res := Result{HostName: v.HostName, DType: v.DType, N: n}
	outs := k.BindingsOf(ir.Output)
	names := inputNames(k)
	rounding := roundingOf(k, v)
	row := make([]float64, len(inVals))
	worst := 0.0
	for j := 0; j < n; j++ {
		for i := range inVals {
			row[i] = inVals[i][j]
		}
		want, bound := k.EvalBound(row, params, rounding)
		for o, b := range outs {
			t := elemType(b, v)
			g := decode(got[b.Index], t, j)
			res.Checked++
			if math.IsInf(bound[o], 1) {
				res.Undecided++
			}
			allowed, ok, note := judge(g, want[o], bound[o], t, v.Tolerance)
			d := math.Abs(g - want[o])
			if !math.IsNaN(d) && !math.IsInf(d, 0) {
				res.MaxAbs = math.Max(res.MaxAbs, d)
				if math.Abs(want[o]) >= LimitsOf(t).MinNormal {
					res.MaxRel = math.Max(res.MaxRel, d/math.Abs(want[o]))
				}
			}
			excess := 0.0
			if g != dtype.Round(want[o], t) || !ok {
				excess = excessOf(g, want[o], allowed, note)
			}
			if ok && excess <= worst {
				continue
			}
			lane := Lane{N: n, Index: j, Output: b.Name, Inputs: names, Values: append([]float64(nil), row...),
				Got: g, Want: want[o], Allowed: allowed, Excess: excess, Note: note}
			if excess > worst {
				worst, res.Worst = excess, &lane
			}
			if !ok {
				res.Failed++
				if len(res.Failures) < maxFailures {
					res.Failures = append(res.Failures, lane)
				}
			}
		}
	}
	return res
}

// orderDiff counts the output elements whose bytes changed with the lane
// order: a race between the lanes of a threadgroup.
func orderDiff(res *Result, k *ir.Kernel, v ir.Variant, n int, inVals [][]float64, a, b [][]byte, oa, ob mslcpu.LaneOrder) {
	names := inputNames(k)
	orderName := map[mslcpu.LaneOrder]string{mslcpu.Forward: "forward", mslcpu.Reverse: "reverse", mslcpu.Shuffled: "shuffled"}
	for _, out := range k.BindingsOf(ir.Output) {
		t := elemType(out, v)
		size := t.Size()
		for j := 0; j < n; j++ {
			x, y := a[out.Index][j*size:(j+1)*size], b[out.Index][j*size:(j+1)*size]
			if bytes.Equal(x, y) {
				continue
			}
			res.Failed++
			if len(res.Failures) < maxFailures {
				vals := make([]float64, len(inVals))
				for i := range inVals {
					vals[i] = inVals[i][j]
				}
				res.Failures = append(res.Failures, Lane{N: n, Index: j, Output: out.Name, Inputs: names, Values: vals,
					Got: decode(b[out.Index], t, j), Want: decode(a[out.Index], t, j), Excess: math.Inf(1),
					Note: fmt.Sprintf("%s lane order gives %s, %s order %s: a race between lanes", orderName[ob],
						num(decode(b[out.Index], t, j)), orderName[oa], num(decode(a[out.Index], t, j)))})
			}
		}
	}
}

func inputNames(k *ir.Kernel) []string {
	var names []string
	for _, b := range k.BindingsOf(ir.Input) {
		names = append(names, b.Name)
	}
	return names
}

// funcUlps is how many f32 units of roundoff kgen allows a library or
// prelude function (metal::precise functions and kgen's prelude are within
// a few ulps).
const funcUlps = 4

// roundingOf describes a variant's compute arithmetic for ir.EvalBound.
func roundingOf(k *ir.Kernel, v ir.Variant) ir.Rounding {
	compute := k.Compute
	if compute == dtype.Invalid {
		compute = v.DType
	}
	r := ir.Rounding{Unit: unit(compute), FuncUlps: funcUlps}
	r.Overflow, r.Underflow = rangeOf(compute)
	if compute != dtype.F32 {
		// Functions run in f32 and are rounded to the compute type.
		r.FuncUlps = 1 + funcUlps*unit(dtype.F32)/r.Unit
	}
	for _, b := range k.BindingsOf(ir.Input) {
		in := 0.0
		if unit(elemType(b, v)) < r.Unit {
			in = r.Unit
		}
		r.InputUnits = append(r.InputUnits, in)
	}
	return r
}

// rangeOf returns the magnitudes at which rounding to t overflows to
// infinity (the largest finite value plus half an ulp) and underflows to
// zero (half the smallest subnormal), for ir.Rounding.
func rangeOf(t dtype.DType) (overflow, underflow float64) {
	switch t {
	case dtype.F16:
		return 65520, 0x1p-25
	case dtype.BF16:
		return 0x1.ffp127, 0x1p-134
	}
	return 0x1.ffffffp127, 0x1p-150
}

// unit is the unit roundoff of a float type.
func unit(t dtype.DType) float64 {
	switch t {
	case dtype.F16:
		return 0x1p-11
	case dtype.BF16:
		return 0x1p-8
	}
	return 0x1p-24
}

// judge compares one output element with its reference: allowed is abs +
// rel·|want| + bound. A result equal to the correctly rounded reference
// always passes (that covers overflow to infinity in narrow types); NaN
// must meet NaN, and an infinity the same infinity. A bound the error
// analysis could not give (NaN, from 0·∞) counts as 0: only the spec's
// tolerance applies there.
func judge(got, want, bound float64, t dtype.DType, tol ir.Tolerance) (allowed float64, ok bool, note string) {
	if !(bound >= 0) {
		bound = 0
	}
	allowed = tol.Abs + tol.Rel*math.Abs(want) + bound
	switch {
	case math.IsInf(bound, 1):
		return allowed, true, "" // undecided: see ir.Rounding.Overflow
	case math.IsNaN(want) && math.IsNaN(got):
		return allowed, true, ""
	case math.IsNaN(got):
		return allowed, false, "NaN where the reference is not"
	case math.IsNaN(want):
		return allowed, false, "the reference is NaN"
	case got == dtype.Round(want, t):
		return allowed, true, ""
	case math.IsInf(want, 0) || math.IsInf(got, 0):
		return allowed, got == want, "an infinity where the reference differs"
	}
	return allowed, math.Abs(got-want) <= allowed, ""
}

// within is judge for callers that want the distance and the verdict.
func within(got, want, bound float64, t dtype.DType, tol ir.Tolerance) (float64, bool) {
	_, ok, _ := judge(got, want, bound, t, tol)
	d := math.Abs(got - want)
	if math.IsNaN(d) || math.IsInf(d, 0) {
		d = 0
	}
	return d, ok
}

func elemType(b ir.Binding, v ir.Variant) dtype.DType {
	if b.DType != dtype.Invalid {
		return b.DType
	}
	return v.DType
}

// paramValues picks fixed, typical values for runtime params: 2.5+index for
// f32 and small integers for i32/u32, exact in every type.
func paramValues(k *ir.Kernel) []float64 {
	var out []float64
	for i, p := range k.Params() {
		switch p.Type {
		case dtype.F32:
			out = append(out, 2.5+float64(i))
		default:
			out = append(out, float64(3+i))
		}
	}
	return out
}

func argsBytes(b ir.Binding, n uint32, params []float64) []byte {
	buf := make([]byte, 4*len(b.Fields))
	p := 0
	for _, f := range b.Fields {
		var word uint32
		switch {
		case f.Size:
			word = n
		case f.Type == dtype.F32:
			word = math.Float32bits(float32(params[p]))
			p++
		case f.Type == dtype.I32:
			word = uint32(int32(params[p]))
			p++
		default:
			word = uint32(params[p])
			p++
		}
		binary.LittleEndian.PutUint32(buf[f.Offset:], word)
	}
	return buf
}

func encode(vals []float64, t dtype.DType) []byte {
	buf := make([]byte, len(vals)*t.Size())
	for i, v := range vals {
		switch t {
		case dtype.F16:
			binary.LittleEndian.PutUint16(buf[2*i:], dtype.F16Bits(float32(v)))
		case dtype.BF16:
			binary.LittleEndian.PutUint16(buf[2*i:], dtype.BF16Bits(float32(v)))
		default:
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(float32(v)))
		}
	}
	return buf
}

func decode(buf []byte, t dtype.DType, i int) float64 {
	switch t {
	case dtype.F16:
		return float64(dtype.F16Value(binary.LittleEndian.Uint16(buf[2*i:])))
	case dtype.BF16:
		return float64(dtype.BF16Value(binary.LittleEndian.Uint16(buf[2*i:])))
	}
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:])))
}
