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
package parity

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// Options shape the generated test data.
type Options struct {
	Sizes []int   // element counts to run; default covers tails and whole vectors
	Range float64 // inputs are uniform in [-Range, Range]; default 8
	Seed  uint64
}

// Result is the outcome of one variant at one size.
type Result struct {
	HostName string
	N        int
	Checked  int     // elements compared (NaN-for-NaN matches count)
	Failed   int     // elements outside tolerance
	MaxAbs   float64 // largest |got-ref| among finite pairs
	First    string  // the first failure, described, or ""
}

// DefaultSizes cover one element, a partial first vector, whole vectors, a
// tail after whole vectors, and several threadgroups.
var DefaultSizes = []int{1, 3, 8, 9, 1000, 4099}

// Check runs every variant of k at every size.
func Check(ctx context.Context, k *ir.Kernel, source []byte, opts Options) ([]Result, error) {
	if len(opts.Sizes) == 0 {
		opts.Sizes = DefaultSizes
	}
	if opts.Range == 0 {
		opts.Range = 8
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
		inVals[i] = make([]float64, n)
		for j := range inVals[i] {
			inVals[i][j] = dtype.Round((rng.Float64()*2-1)*opts.Range, t)
		}
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
	threads := (n + k.ElemsPerThread - 1) / k.ElemsPerThread
	got, err := mslcpu.Run(ctx, mslcpu.Launch{
		Source: source, HostName: v.HostName, Buffers: buffers,
		Grid: [3]uint32{uint32(threads), 1, 1}, Threadgroup: [3]uint32{uint32(k.Dispatch.Threadgroup[0]), 1, 1},
	})
	if err != nil {
		return Result{}, err
	}
	return compare(k, v, n, inVals, params, got), nil
}

func compare(k *ir.Kernel, v ir.Variant, n int, inVals [][]float64, params []float64, got [][]byte) Result {
	res := Result{HostName: v.HostName, N: n}
	outs := k.BindingsOf(ir.Output)
	rounding := roundingOf(k, v)
	row := make([]float64, len(inVals))
	for j := 0; j < n; j++ {
		for i := range inVals {
			row[i] = inVals[i][j]
		}
		want, bound := k.EvalBound(row, params, rounding)
		for o, b := range outs {
			t := elemType(b, v)
			g := decode(got[b.Index], t, j)
			res.Checked++
			d, ok := within(g, want[o], bound[o], t, v.Tolerance)
			if d > res.MaxAbs {
				res.MaxAbs = d
			}
			if !ok {
				res.Failed++
				if res.First == "" {
					res.First = fmt.Sprintf("%s[%d] = %g, want %g ± %.3g (inputs %v; tolerance abs %g rel %g)",
						b.Name, j, g, want[o], bound[o], row, v.Tolerance.Abs, v.Tolerance.Rel)
				}
			}
		}
	}
	return res
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

// within applies the tolerance widened by the compute-rounding bound. A
// result equal to the correctly rounded reference always passes (that
// covers overflow to infinity in narrow types); NaN matches NaN.
func within(got, want, bound float64, t dtype.DType, tol ir.Tolerance) (float64, bool) {
	switch {
	case math.IsNaN(want) || math.IsNaN(got):
		return 0, math.IsNaN(want) && math.IsNaN(got)
	case got == dtype.Round(want, t):
		return math.Abs(got - want), true
	case math.IsInf(want, 0) || math.IsInf(got, 0):
		return 0, got == want
	}
	d := math.Abs(got - want)
	return d, d <= tol.Abs+tol.Rel*math.Abs(want)+bound
}

func elemType(b ir.Binding, v ir.Variant) dtype.DType {
	if b.DType != dtype.Invalid {
		return b.DType
	}
	return v.DType
}

// paramValues picks fixed, typical values for runtime params: 0.5+index for
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
