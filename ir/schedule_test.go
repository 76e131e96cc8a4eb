package ir_test

import (
	"reflect"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// Specs shared by the ir tests: the built-in softmax and layer_norm, a
// norm with a per-row let of the params alone, a kernel whose inputs are
// each read by one pass, and an elementwise kernel with a param.
const (
	softmaxSpec = `
kernel: softmax
kind: rowwise
dtypes: [f32, f16, bf16]
compute: f32
inputs: [x]
let:
  - e: exp(x - row_max(x))
outputs:
  - y: e / row_sum(e)
`
	layerNormSpec = `
kernel: layer_norm
kind: rowwise
dtypes: [f32, f16, bf16]
compute: f32
inputs: [x, {name: w, shape: row}, {name: b, shape: row}]
params:
  - {name: eps, type: f32}
let:
  - d: x - row_mean(x)
  - inv: rsqrt(row_mean(d * d) + eps)
outputs:
  - y: d * inv * w + b
`
	scaledNormSpec = `
kernel: scaled
kind: rowwise
dtypes: [f32]
inputs: [x, z]
params:
  - {name: eps, type: f32}
let:
  - e2: eps * 2
  - inv: rsqrt(row_sum(x * x) + e2)
outputs:
  - y: x * inv
  - u: z * inv
`
	onceSpec = `
kernel: once
kind: rowwise
dtypes: [f32]
inputs: [x, z]
outputs:
  - y: z * row_max(x)
`
	centerSpec = `
kernel: center
kind: rowwise
segments: [a, b]
dtypes: [f32]
inputs: [x]
outputs:
  - y: x - row_mean(x)
`
	elemSpec = `
kernel: ew
dtypes: [f32, f16]
inputs: [x, g]
params:
  - {name: slope, type: f32}
outputs:
  - y: x * slope + g
  - s: x * x
`
)

// TestRowSchedule pins the pass structure of rowwise kernels: each
// reduction's pass, each step's class (per row or per element) and level,
// the inputs each pass reads (the write pass last) and the inputs cached
// between passes.
func TestRowSchedule(t *testing.T) {
	type red struct {
		op    ir.ReduceOp
		level int
	}
	cases := []struct {
		name   string
		spec   string
		passes int
		reds   []red
		info   []ir.StepInfo // lets then outputs, in spec order
		reads  [][]int
		cached []int
	}{
		{"softmax", softmaxSpec, 2, []red{{ir.ReduceMax, 1}, {ir.ReduceSum, 2}},
			[]ir.StepInfo{{PerRow: false, Level: 1}, {PerRow: false, Level: 2}},
			[][]int{{0}, {0}, {0}}, []int{0}},
		{"layer_norm", layerNormSpec, 2, []red{{ir.ReduceMean, 1}, {ir.ReduceMean, 2}},
			[]ir.StepInfo{{PerRow: false, Level: 1}, {PerRow: true, Level: 2}, {PerRow: false, Level: 2}},
			[][]int{{0}, {0}, {0, 1, 2}}, []int{0}},
		{"per-row lets at levels 0 and 1", scaledNormSpec, 1, []red{{ir.ReduceSum, 1}},
			[]ir.StepInfo{{PerRow: true, Level: 0}, {PerRow: true, Level: 1}, {PerRow: false, Level: 1}, {PerRow: false, Level: 1}},
			[][]int{{0}, {0, 1}}, []int{0}},
		{"each input read by one pass", onceSpec, 1, []red{{ir.ReduceMax, 1}},
			[]ir.StepInfo{{PerRow: false, Level: 1}},
			[][]int{{0}, {1}}, nil},
		{"segments", centerSpec, 1, []red{{ir.ReduceMean, 1}},
			[]ir.StepInfo{{PerRow: false, Level: 1}},
			[][]int{{0}, {0}}, []int{0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := mustBuild(t, c.spec)
			r := k.Rows()
			if r == nil || k.Kind != ir.Rowwise || k.Schedule.Kind() != ir.Rowwise {
				t.Fatalf("kind %s, schedule %T: want a rowwise *ir.Rows", k.Kind, k.Schedule)
			}
			if r.Passes != c.passes {
				t.Errorf("Passes = %d, want %d", r.Passes, c.passes)
			}
			var reds []red
			for _, x := range r.Reductions {
				reds = append(reds, red{x.Op, x.Level})
			}
			if !reflect.DeepEqual(reds, c.reds) {
				t.Errorf("reductions (op, pass) = %v, want %v", reds, c.reds)
			}
			if !reflect.DeepEqual(r.Info, c.info) {
				t.Errorf("Info = %+v, want %+v", r.Info, c.info)
			}
			if !reflect.DeepEqual(r.Reads, c.reads) {
				t.Errorf("Reads = %v, want %v", r.Reads, c.reads)
			}
			if !reflect.DeepEqual(r.Cached, c.cached) {
				t.Errorf("Cached = %v, want %v", r.Cached, c.cached)
			}
		})
	}
}

// TestCachePerLane pins the register cache: 32 values per thread at 256
// threads, shared by the cached inputs and scaled inversely with the group
// size, rounded down to a power of two; nothing when no input is cached.
func TestCachePerLane(t *testing.T) {
	twoCached := `
kernel: two
kind: rowwise
dtypes: [f32]
inputs: [x, z]
outputs:
  - y: (x + z) / row_sum(x * z)
`
	threeCached := `
kernel: three
kind: rowwise
dtypes: [f32]
inputs: [x, z, q]
outputs:
  - y: (x + z + q) / row_sum(x * z * q)
`
	cases := []struct {
		name   string
		spec   string
		tg     int
		cached int
		want   int
	}{
		{"one input at 256", softmaxSpec, 256, 1, 32},
		{"one input at 1024", softmaxSpec, 1024, 1, 8},
		{"one input at 64", softmaxSpec, 64, 1, 128},
		{"two inputs at 256", twoCached, 256, 2, 16},
		{"two inputs at 1024", twoCached, 1024, 2, 4},
		{"three inputs at 256 (32·256/768 = 10, down to 8)", threeCached, 256, 3, 8},
		{"three inputs at 128 (21, down to 16)", threeCached, 128, 3, 16},
		{"nothing cached", onceSpec, 256, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := mustBuild(t, withThreadgroup(c.spec, c.tg)).Rows()
			if len(r.Cached) != c.cached {
				t.Fatalf("Cached = %v, want %d inputs", r.Cached, c.cached)
			}
			if r.CachePerLane != c.want {
				t.Errorf("CachePerLane = %d, want %d", r.CachePerLane, c.want)
			}
			if want := 8 * c.tg / 32; r.ThreadgroupBytes != want {
				t.Errorf("ThreadgroupBytes = %d, want %d (two floats per simdgroup: the team fold's slots)", r.ThreadgroupBytes, want)
			}
		})
	}
}
