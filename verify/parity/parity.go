// Package parity runs every variant of a generated kernel on the CPU
// (through verify/mslcpu) and compares each output element with the
// kernel's float64 evaluation under the variant's tolerance: pass when
// |got-ref| <= abs + rel*|ref| + bound, where bound is the first-order
// rounding-error bound of evaluating the formulas in the compute type
// (ir.Kernel.EvalBound, ir.Kernel.EvalRowsBound). The spec's tolerance
// covers the output's storage rounding and implementation differences; the
// bound covers what cancellation in the formula does to compute-type
// rounding, per element. The reference is computed from the inputs as
// stored (already rounded to their dtype), so storage rounding of inputs is
// not counted as error.
//
// One Check serves every kind of kernel. What truly differs per kind — the
// shapes to try, the inputs of each binding's shape, the params, and how
// the float64 reference walks the outputs — is one shapeGen per ir.Kind in
// shapeGens; buffers, the args struct, the launch (ir.Kernel.Launch
// evaluated over the sizes), the lane judgement, races between lane orders
// and the reports are shared.
//
// Inputs are adversarial by default (see Inputs and RowKind): magnitudes to
// ±170, a far-negative tail, ±0, ±subnormals of the storage type, ±Inf and
// NaN, mixed into seeded random values; elementwise sizes cover 0, 1, a
// thread's elements ±1, a vector ±1, a partial last threadgroup and a large
// launch (SizesFor), rowwise shapes every width of DefaultCols at every row
// count of DefaultRows. NaN must come out exactly where the reference is
// NaN, and infinities must match. Summarize folds the per-shape results
// into one lane-level Report per variant; Mutate and Options.Mutate show
// that the check fails when a kernel stores its input, or 0, instead.
package parity

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/launch"
	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// Options shape the generated test data and the runs.
type Options struct {
	// Sizes are the element counts an elementwise kernel runs at; default
	// SizesFor(k).
	Sizes []int
	// Cols and Rows are the row widths and row counts a rowwise kernel runs
	// at, every pair; defaults DefaultCols and DefaultRows. Segment s of a
	// multi-segment kernel gets SegmentRows(rows, s) rows.
	Cols, Rows []int
	// Matmul are the shapes a matmul kernel runs at; default
	// DefaultMatmulShapes.
	Matmul []MatmulShape
	// Chain are the shapes a matmul chain runs at; default
	// DefaultChainShapes.
	Chain []ChainShape
	// MatrixLanes is the simdgroup_matrix lane map of every run
	// (mslcpu.ScrambledLanes: the kernel must not depend on Apple's).
	MatrixLanes mslcpu.MatrixLaneMap
	// Range is the largest finite input magnitude: DefaultRange (170), or 8
	// with Plain.
	Range float64
	Seed  uint64
	// Plain draws inputs uniformly from [-Range, Range] with no special
	// values (no ±0, subnormals, infinities or NaN). Otherwise rowwise
	// inputs are adversarial row by row: every row is finite and mixed (see
	// MixedRow) except the designated rows of RowKindOf, and row vectors
	// are finite and mixed.
	Plain bool
	// Mutate rewrites the kernel's stores before running it (see Mutate):
	// the check must then fail for every variant.
	Mutate Mutation
	// Orders are the lane orders each shape runs in: the first is judged
	// against the reference, every later one must give the same bytes (a
	// kernel whose result depends on the order has a race). Default:
	// forward only, or all three for an elementwise source that
	// synchronises (barriers, simd functions), where a race can hide.
	// Rowwise sources always synchronise; their shuffled run is a test of
	// its own (Orders: []mslcpu.LaneOrder{mslcpu.Shuffled}).
	Orders []mslcpu.LaneOrder
	// Sanitize runs every launch in an instrumented build (mslcpu.Sanitizer).
	Sanitize mslcpu.Sanitizer
	// Params are runtime params by name, replacing paramValues' choice
	// (a causal mask's offset, say, at values that hide or show whole
	// rows).
	Params map[string]float64
	// Flags are extra compiler flags (mslcpu.Launch.Flags).
	Flags []string
	// Backend is whose launch (ir.Kernel.Launch) gives the grid and the
	// derived size fields, with launch.ElemBytes the variant's storage
	// size. The CPU harness runs MSL, so it needs Metal (the zero value); a
	// Run for another backend's port names that backend.
	Backend ir.Backend
	// Run executes one launch and returns every buffer afterwards; nil is
	// the CPU harness (mslcpu.Run). The CUDA parity tests pass a GPU runner
	// so both backends see the same inputs and the same tolerance rule.
	Run func(ctx context.Context, l mslcpu.Launch) ([][]byte, error)
	// Sample, when set, receives every unmutated launch of at most
	// MaxSampleElems output elements, for the differential check (Differ).
	Sample func(*Sample)
}

// Result is the outcome of one variant at one shape.
type Result struct {
	HostName string
	DType    dtype.DType
	// N is the elements of each output (of the first segment): n for an
	// elementwise launch, Rows·Cols for a rowwise one, every batch
	// element's for a batched one.
	N int
	// Rows and Cols name a rowwise launch: the rows of the first segment
	// (segment s has SegmentRows(Rows, s)) and the row width; 0 otherwise.
	Rows, Cols int
	Checked    int // elements compared (NaN-for-NaN matches count)
	Failed     int // elements outside tolerance (or changed by the lane order)
	// Undecided counts elements whose reference sits so close to the
	// compute type's overflow edge (ir.Rounding.Overflow), or a partial
	// function's operand so close to its domain's edge (log of 0 ± its
	// error: NaN or not), that either outcome is accepted.
	Undecided int
	// NaNs and Infs count the lanes whose reference is NaN or ±Inf: for
	// rowwise kernels with adversarial inputs they must stay within the
	// designated rows, or the check would be vacuous.
	NaNs, Infs int
	NaNRows    []int // rowwise: the rows (of any segment) with a NaN reference, in order met
	// FiniteRows: the launch's NaN and ±Inf rows held mixed finite values
	// instead (a column-reducing kernel over more than ColFiniteRows rows).
	FiniteRows bool
	MaxAbs     float64 // largest |got-ref| among finite pairs with |ref| <= 1
	MaxRel     float64 // largest |got-ref|/|ref| where |ref| >= the storage type's smallest normal
	Worst      *Lane   // the lane with the largest Excess; nil when every lane is exact
	Failures   []Lane  // the first few failing lanes
	First      string  // the first failure, described, or ""
}

// DefaultSizes is a fixed list of sizes for runners that want one: one
// element, a partial first vector, whole vectors, a tail after whole
// vectors, and several threadgroups. Check's own default is SizesFor(k).
var DefaultSizes = []int{1, 3, 8, 9, 1000, 4099}

// LargeSize is the large launch of SizesFor: many threadgroups and a tail.
const LargeSize = 1<<16 + 3

// SizesFor returns the element counts parity runs elementwise kernel k at:
// 0 (a launch of no threads), 1, one thread's elements ±1 (a whole
// vectorised slice and its tails), a 16-byte vector of the widest storage
// type ±1, a count that leaves the last threadgroup partial and the last
// thread a tail, and LargeSize.
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

// Check runs every variant of kernel k at every shape its kind's shapeGen
// lists and compares each output element with the bounded float64
// reference.
func Check(ctx context.Context, k *ir.Kernel, source []byte, opts Options) ([]Result, error) {
	gen, ok := shapeGens[k.Kind]
	if !ok {
		return nil, fmt.Errorf("parity: kernel %s: no check for %s kernels", k.Name, k.Kind)
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
		if gen.raceOrders && opts.Run == nil && mslcpu.Synchronises(source) {
			opts.Orders = append(opts.Orders, mslcpu.Reverse, mslcpu.Shuffled)
		}
	}
	var out []Result
	for _, v := range k.Variants {
		for _, sh := range gen.shapes(k, opts) {
			r, err := checkOne(ctx, k, v, gen, source, sh, opts)
			if err != nil {
				return out, err
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// checkOne runs variant v at one shape in every lane order and judges the
// first run against the reference, the others against the first.
func checkOne(ctx context.Context, k *ir.Kernel, v ir.Variant, gen shapeGen, source []byte, sh shape, opts Options) (Result, error) {
	if k.Batched() {
		return checkBatched(ctx, k, v, gen, source, sh, opts)
	}
	l := k.Launch(opts.Backend)
	given := maps.Clone(sh.sizes)
	given[launch.ElemBytes] = v.DType.Size()
	sizes, err := l.Sizes(given)
	if err != nil {
		return Result{}, fmt.Errorf("parity: %s: %w", v.HostName, err)
	}
	grid, err := l.GridSize(sizes)
	if err != nil {
		return Result{}, fmt.Errorf("parity: %s: %w", v.HostName, err)
	}
	c := &check{k: k, v: v, gen: gen, opts: opts, sizes: sizes,
		params: paramValues(k, gen.f32Param, opts.Params), rounding: roundingOf(k, v),
		res: Result{HostName: v.HostName, DType: v.DType, N: sh.n, Rows: sh.rows, Cols: sh.cols, FiniteRows: finiteRows(k, sh.rows)}}
	c.vals = gen.inputs(rand.New(rand.NewPCG(opts.Seed, sh.seed)), k, v, sizes, opts)
	buffers, err := c.buffers()
	if err != nil {
		return Result{}, err
	}
	var first [][]byte
	for i, order := range opts.Orders {
		got, err := runLaunch(ctx, k, v, opts, order, source, sizes, buffers, grid, l.Threadgroup)
		if err != nil {
			return Result{}, err
		}
		if i == 0 {
			first, c.got = got, got
			visit, done := c.sampler(buffers)
			gen.reference(c, visit)
			done()
			continue
		}
		c.orderDiff(first, got, opts.Orders[0], order)
	}
	if len(c.res.Failures) > 0 {
		c.res.First = c.res.Failures[0].String()
	}
	return c.res, nil
}

// runLaunch runs one launch of variant v in lane order order, through
// the split's phases where the kernel's launcher would take them, and
// returns every buffer afterwards.
func runLaunch(ctx context.Context, k *ir.Kernel, v ir.Variant, opts Options, order mslcpu.LaneOrder, source []byte,
	sizes map[string]int, buffers [][]byte, grid, tg [3]int) ([][]byte, error) {
	run := mslcpu.Run
	if opts.Run != nil {
		run = opts.Run
	}
	ml := mslcpu.Launch{
		Source: source, HostName: v.HostName, Buffers: buffers,
		Grid: u32s(grid), Threadgroup: u32s(tg),
		Order: order, Sanitize: opts.Sanitize, Flags: opts.Flags, MatrixLanes: opts.MatrixLanes,
	}
	if splits(k, opts.Backend, sizes) {
		return runSplit(ctx, run, k, v, opts.Backend, sizes, buffers, ml)
	}
	return run(ctx, ml)
}

func u32s(v [3]int) [3]uint32 { return [3]uint32{uint32(v[0]), uint32(v[1]), uint32(v[2])} }

// buffers encodes the inputs, NaN-filled outputs (every element must be
// overwritten) and the args struct, by binding index. Every tensor has the
// elements its Shape names.
func (c *check) buffers() ([][]byte, error) {
	k := c.k
	buffers := make([][]byte, len(k.Bindings))
	for _, b := range k.BindingsOf(ir.Input) {
		if len(c.vals[b.Index]) != c.count(b) {
			return nil, fmt.Errorf("parity: %s: %d values for input %s of shape %s = %d elements", c.v.HostName, len(c.vals[b.Index]), b.Name, b.Shape, c.count(b))
		}
		buffers[b.Index] = encode(c.vals[b.Index], elemType(b, c.v))
	}
	for _, b := range k.BindingsOf(ir.Output) {
		nan := make([]float64, c.count(b))
		for j := range nan {
			nan[j] = math.NaN()
		}
		buffers[b.Index] = encode(nan, elemType(b, c.v))
	}
	args := k.ArgsBinding()
	ab, err := argsBytes(args, c.sizes, c.params)
	if err != nil {
		return nil, fmt.Errorf("parity: %s: %w", c.v.HostName, err)
	}
	buffers[args.Index] = ab
	return buffers, nil
}

// paramValues picks fixed, typical values for runtime params, exact in
// every type: f32 params from the kind's rule (f32Param of their index),
// integers 3, 4, … by index; a value in given (by name) replaces them.
func paramValues(k *ir.Kernel, f32Param func(i int) float64, given map[string]float64) []float64 {
	var out []float64
	for i, p := range k.Params() {
		if v, ok := given[p.Name]; ok {
			if p.Type == dtype.F32 {
				v = float64(float32(v))
			}
			out = append(out, v)
			continue
		}
		if v, err := strconv.ParseFloat(p.Example, 64); p.Example != "" && err == nil {
			if p.Type == dtype.F32 {
				v = float64(float32(v))
			}
			out = append(out, v)
			continue
		}
		switch p.Type {
		case dtype.F32:
			out = append(out, f32Param(i))
		default:
			out = append(out, float64(3+i))
		}
	}
	return out
}

// argsBytes lays out the args struct: each size field from sizes (the
// caller's and the launch's derived ones), then the params in order.
func argsBytes(b ir.Binding, sizes map[string]int, params []float64) ([]byte, error) {
	buf := make([]byte, 4*len(b.Fields))
	p := 0
	for _, f := range b.Fields {
		var word uint32
		switch {
		case f.Size || f.StrideOf != "" || len(f.Aligned) > 0:
			v, ok := sizes[f.Name]
			if !ok {
				return nil, fmt.Errorf("no value for the size field %s", f.Name)
			}
			word = uint32(v)
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
	return buf, nil
}

// funcUlps is how many f32 units of roundoff kgen allows a library or
// prelude function (metal::precise functions and kgen's prelude are within
// a few ulps).
const funcUlps = 4

// literalMemo is dtype.Literal in t, remembered per text: the reference
// asks for a literal's value at every lane, and parsing the decimal each
// time was a fifth of a row sweep's run time. Safe for concurrent use.
func literalMemo(t dtype.DType) func(string) (float64, error) {
	type value struct {
		v   float64
		err error
	}
	var mu sync.RWMutex
	seen := map[string]value{}
	return func(text string) (float64, error) {
		mu.RLock()
		x, ok := seen[text]
		mu.RUnlock()
		if !ok {
			x.v, x.err = dtype.Literal(text, t)
			mu.Lock()
			seen[text] = x
			mu.Unlock()
		}
		return x.v, x.err
	}
}

// roundingOf describes a variant's compute arithmetic for ir.EvalBound.
func roundingOf(k *ir.Kernel, v ir.Variant) ir.Rounding {
	compute := k.Compute
	if compute == dtype.Invalid {
		compute = v.DType
	}
	r := ir.Rounding{Unit: unit(compute), FuncUlps: funcUlps}
	r.Overflow, r.Underflow = rangeOf(compute)
	r.Round = func(v float64) float64 { return dtype.Round(v, compute) }
	r.Literal = literalMemo(compute)
	if compute != dtype.F32 {
		// Functions run in f32 and are rounded to the compute type.
		r.FuncUlps = 1 + funcUlps*unit(dtype.F32)/r.Unit
	}
	for _, b := range k.ElementInputs(0) {
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
	if t.IsInt() { // integers are exact: only a conversion's bound moves them
		allowed = bound
		return allowed, math.IsInf(bound, 1) || math.Abs(got-wrapTo(want, t)) <= bound, ""
	}
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

func elemType(b ir.Binding, v ir.Variant) dtype.DType {
	if b.DType != dtype.Invalid {
		return b.DType
	}
	return v.DType
}

// unwritten is what an integer output is pre-filled with (floats get NaN):
// a value no kgen store of a small row is likely to produce.
const unwritten = 0x5a5a5a5a

func encode(vals []float64, t dtype.DType) []byte {
	buf := make([]byte, len(vals)*t.Size())
	for i, v := range vals {
		if t.IsInt() {
			u := uint32(unwritten)
			if !math.IsNaN(v) {
				u = uint32(int64(v))
			}
			if t.Size() == 1 {
				buf[i] = byte(u)
			} else {
				binary.LittleEndian.PutUint32(buf[4*i:], u)
			}
			continue
		}
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
	case dtype.I8:
		return float64(int8(buf[i]))
	case dtype.U8:
		return float64(buf[i])
	case dtype.I32:
		return float64(int32(binary.LittleEndian.Uint32(buf[4*i:])))
	case dtype.U32:
		return float64(binary.LittleEndian.Uint32(buf[4*i:]))
	case dtype.F16:
		return float64(dtype.F16Value(binary.LittleEndian.Uint16(buf[2*i:])))
	case dtype.BF16:
		return float64(dtype.BF16Value(binary.LittleEndian.Uint16(buf[2*i:])))
	}
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:])))
}

// wrapTo is an integer reference stored in integer type t, as a kernel's
// store keeps the low bits.
func wrapTo(v float64, t dtype.DType) float64 {
	switch t {
	case dtype.I8:
		return float64(int8(int64(v)))
	case dtype.U8:
		return float64(uint8(int64(v)))
	case dtype.U32:
		return float64(uint32(int64(v)))
	}
	return float64(int32(int64(v)))
}
