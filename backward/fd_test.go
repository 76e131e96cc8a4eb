package backward

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/spec"
)

// build derives src's backward kernel and builds both; a matmul's forward
// is its epilogue as a rowwise kernel over the accumulators (epilogue),
// which the float64 evaluation can run row by row.
func build(t testing.TB, src string) (fwd, bwd *ir.Kernel) {
	t.Helper()
	var diags diag.List
	s := spec.Parse("specs/k.yaml", []byte(src), &diags)
	specs := Derive([]*spec.Spec{s}, &diags)
	if s.Kind == spec.Matmul && diags.Len() == 0 {
		e := epilogue(s, &diags)
		e.Backward = nil
		specs[0] = e
	}
	ks := ir.Build(specs, &diags)
	if diags.Len() > 0 {
		t.Fatalf("%v", diags.Err())
	}
	if len(ks) != 2 {
		t.Fatalf("built %d kernels, want the forward and its backward", len(ks))
	}
	return ks[0], ks[1]
}

// tensors holds one row-major value slice per binding name.
type tensors map[string][]float64

// problem is a forward kernel's inputs at rows × cols (n elements for an
// elementwise kernel: rows 1), random in [-2, 2), and random gradients g
// for its floating-point outputs.
type problem struct {
	fwd, bwd   *ir.Kernel
	rows, cols int
	params     []float64
	in, g      tensors
}

func newProblem(fwd, bwd *ir.Kernel, rows, cols int, params []float64, seed uint64) *problem {
	r := rand.New(rand.NewPCG(seed, 1))
	p := &problem{fwd: fwd, bwd: bwd, rows: rows, cols: cols, params: params, in: tensors{}, g: tensors{}}
	for _, b := range fwd.Bindings {
		if b.Role == ir.Args {
			continue
		}
		v := make([]float64, p.size(b))
		for i := range v {
			v[i] = r.Float64()*4 - 2
		}
		switch {
		case b.Role == ir.Input:
			p.in[b.Name] = v
		case !strings.HasSuffix(b.Name, spec.SavedSuffix): // a saved value (save:) has no gradient
			p.g[b.Name+GradSuffix] = v
		}
	}
	return p
}

func (p *problem) size(b ir.Binding) int {
	switch {
	case b.IsTotal():
		return 1
	case b.IsRowVector():
		return p.cols
	case b.IsPerRow():
		return p.rows
	}
	return p.rows * p.cols
}

// rowOf is binding b's values for row r, as EvalRows takes them.
func (p *problem) rowOf(b ir.Binding, v []float64, r int) []float64 {
	switch {
	case b.IsRowVector():
		return v
	case b.IsPerRow():
		return v[r : r+1]
	}
	return v[r*p.cols : (r+1)*p.cols]
}

// run evaluates k over every row (every element) in float64 from the
// named tensors and returns its outputs by name, [cols] outputs summed
// over the rows.
func (p *problem) run(k *ir.Kernel, vals tensors) tensors {
	out := tensors{}
	var outs []ir.Binding
	for _, b := range k.Bindings {
		if b.Role == ir.Output {
			outs = append(outs, b)
			out[b.Name] = make([]float64, p.size(b))
		}
	}
	folds := k.NewColFolds(p.cols) // [cols] outputs fold as the kernel says
	for r := 0; r < p.rows; r++ {
		var in [][]float64
		for _, b := range k.Bindings {
			if b.Role == ir.Input {
				in = append(in, p.rowOf(b, vals[b.Name], r))
			}
		}
		var res, bounds [][]float64
		if k.Kind == ir.Rowwise {
			res, bounds = k.EvalRowsBoundAt(r, p.rows, in, p.paramsOf(k), ir.Rounding{})
		} else {
			res = p.elementwise(k, in)
		}
		f := 0
		for i, b := range outs {
			if b.IsColOutput() {
				folds[f].Add(res[i], bounds[i])
				f++
				continue
			}
			copy(p.rowOf(b, out[b.Name], r), res[i])
		}
	}
	f := 0
	for _, b := range outs {
		if b.IsColOutput() {
			if folds[f].Whole() {
				v, _ := folds[f].Total(ir.Rounding{})
				out[b.Name] = []float64{v}
			} else {
				out[b.Name], _ = folds[f].Result(ir.Rounding{})
			}
			f++
		}
	}
	return out
}

// paramsOf is k's params by name from the forward's values (a backward
// kernel reads only the params its formulas use).
func (p *problem) paramsOf(k *ir.Kernel) []float64 {
	byName := map[string]float64{}
	for i, f := range p.fwd.Params() {
		if i < len(p.params) {
			byName[f.Name] = p.params[i]
		}
	}
	var out []float64
	for _, f := range k.Params() {
		out = append(out, byName[f.Name])
	}
	return out
}

func (p *problem) elementwise(k *ir.Kernel, in [][]float64) [][]float64 {
	res := make([][]float64, 0)
	for j := 0; j < p.cols; j++ {
		el := make([]float64, len(in))
		for i := range in {
			el[i] = in[i][j]
		}
		for o, y := range k.Eval64(el, p.paramsOf(k)) {
			if j == 0 {
				res = append(res, make([]float64, p.cols))
			}
			res[o][j] = y
		}
	}
	return res
}

// loss is Σ g·y over the forward's outputs at inputs vals.
func (p *problem) loss(vals tensors) float64 {
	sum := 0.0
	for name, y := range p.run(p.fwd, vals) {
		g, ok := p.g[name+GradSuffix]
		if !ok {
			continue
		}
		for i := range y {
			sum += g[i] * y[i]
		}
	}
	return sum
}

// check compares the backward kernel's gradients with central differences
// of the float64 forward, element by element.
func (p *problem) check(t *testing.T) {
	t.Helper()
	all := tensors{}
	for n, v := range p.in {
		all[n] = v
	}
	for n, v := range p.g {
		all[n] = v
	}
	for n, v := range p.run(p.fwd, p.in) { // the saved values (save:) the backward reads
		if strings.HasSuffix(n, spec.SavedSuffix) {
			all[n] = v
		}
	}
	grads := p.run(p.bwd, all)
	checked := 0
	for name, x := range p.in {
		got, ok := grads[name+GradSuffix]
		if !ok {
			continue
		}
		for i := range x {
			keep := x[i]
			h := 1e-5 * math.Max(1, math.Abs(keep))
			x[i] = keep + h
			up := p.loss(p.in)
			x[i] = keep - h
			down := p.loss(p.in)
			x[i] = keep
			fd := (up - down) / (2 * h)
			if math.Abs(fd-got[i]) > 1e-6*(1+math.Abs(fd)) {
				t.Errorf("%s_grad[%d] = %.12g, central difference %.12g", name, i, got[i], fd)
				return
			}
			checked++
		}
	}
	for i, f := range p.fwd.Params() {
		got, ok := grads[f.Name+GradSuffix]
		if !ok {
			continue
		}
		keep := p.params[i]
		h := 1e-5 * math.Max(1, math.Abs(keep))
		p.params[i] = keep + h
		up := p.loss(p.in)
		p.params[i] = keep - h
		down := p.loss(p.in)
		p.params[i] = keep
		fd := (up - down) / (2 * h)
		if math.Abs(fd-got[0]) > 1e-6*(1+math.Abs(fd)) {
			t.Errorf("%s_grad = %.12g, central difference %.12g", f.Name, got[0], fd)
			return
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no gradient checked")
	}
}

const ports = "\nports: {metal: generated}\nbackward: true\n"

var fdCases = []struct {
	name, src string
	params    []float64
	even      bool // pair reads: even cols only
}{
	{"rms_norm", `kernel: rms_norm
kind: rowwise
dtypes: [f32]
inputs: [x, {name: w, shape: [cols]}]
params: [{name: eps, type: f32}]
let:
  - inv: rsqrt(row_mean(x * x) + eps)
outputs:
  - y: x * inv * w`, []float64{1e-5}, false},
	{"layer_norm", `kernel: layer_norm
kind: rowwise
dtypes: [f32]
inputs: [x, {name: w, shape: [cols]}, {name: b, shape: [cols]}]
params: [{name: eps, type: f32}]
let:
  - d: x - row_mean(x)
  - inv: rsqrt(row_mean(d * d) + eps)
outputs:
  - y: d * inv * w + b`, []float64{1e-5}, false},
	{"softmax", `kernel: softmax
kind: rowwise
dtypes: [f32]
inputs: [x]
let:
  - e: exp(x - row_max(x))
outputs:
  - y: e / row_sum(e)`, nil, false},
	{"softmax_detached_shift", `kernel: softmax
kind: rowwise
dtypes: [f32]
inputs: [x]
let:
  - e: exp(x - detach(row_max(x)))
outputs:
  - y: e / row_sum(e)`, nil, false},
	{"log_softmax_two_outputs", `kernel: lsm
kind: rowwise
dtypes: [f32]
inputs: [x, {name: s, shape: [rows]}]
let:
  - m: row_max(x) * s
  - z: x * s - m
outputs:
  - y: z - log(row_sum(exp(z)))
  - top: row_max(x * x) + m`, nil, false},
	{"cross_entropy_style", `kernel: xent
kind: rowwise
dtypes: [f32]
inputs: [logits, {name: target, dtype: i32, shape: [rows]}]
let:
  - m: row_max(logits)
  - lse: m + log(row_sum(exp(logits - m)))
outputs:
  - loss: row_sum(select(col == target, lse - logits, 0)) / f32(cols)`, nil, false},
	{"gelu_tanh", `kernel: gelu_tanh
dtypes: [f32]
constants: {k0: 0.7978845608028654}
inputs: [x]
let:
  - inner: k0 * (x + 0.044715 * x * x * x)
outputs:
  - y: 0.5 * x * (1 + tanh(inner))`, nil, false},
	{"swiglu", `kernel: swiglu
dtypes: [f32]
inputs: [gate, up]
outputs:
  - y: gate * sigmoid(gate) * up`, nil, false},
	{"matmul_bias_gelu", `kernel: mbg
kind: matmul
dtypes: [f32]
matmul: {a: x, b: w}
inputs: [{name: bias, shape: [n]}, {name: s, shape: [m]}]
constants: {k0: 0.7978845608028654}
let:
  - h: acc * s + bias + f32(n - col) / f32(n)
outputs:
  - y: 0.5 * h * (1 + tanh(k0 * (h + 0.044715 * h * h * h)))`, nil, false},
	{"matmul_gated_rms", `kernel: mgr
kind: matmul
dtypes: [f32]
matmul:
  a: x
  b:
    - {name: wg, acc: gate}
    - {name: wu, acc: up}
inputs: [{name: g, shape: [n]}]
params: [{name: eps, type: f32}]
let:
  - z: gate * sigmoid(gate) * up
outputs:
  - y: z * rsqrt(row_mean(z * z) + eps) * g`, []float64{1e-5}, false},
	{"rope", `kernel: rope
kind: rowwise
dtypes: [f32]
inputs: [x, {name: pos, dtype: i32, shape: [rows]}]
params: [{name: theta, type: f32}]
let:
  - h: cols / 2
  - angle: f32(pos + row) * pow(theta, -2 * f32(col % h) / f32(cols))
outputs:
  - y: x * cos(angle) + select(col < h, -1, 1) * pair_half(x) * sin(angle)`, []float64{10000}, true},
	{"rope_interleaved_scaled", `kernel: ropei
kind: rowwise
dtypes: [f32]
inputs: [x, {name: s, shape: [rows]}]
let:
  - angle: f32(row + 1) * pow(10000, -f32(col / 2 * 2) / f32(cols))
  - r: x * cos(angle) + select(col % 2 == 0, -1, 1) * pair_interleaved(x) * sin(angle)
outputs:
  - y: r * s * rsqrt(row_mean(r * r) + 1e-5) + pair_interleaved(x) * x`, nil, true},
	{"rope_partial", `kernel: ropep
kind: rowwise
dtypes: [f32]
inputs: [x, {name: pos, dtype: i32, shape: [rows]}]
params: [{name: rotary_dim, type: i32}]
let:
  - h: select(rotary_dim < cols, rotary_dim, cols) / 2
  - max_h: select(h > 0, h, 1)
  - angle: f32(pos + 3) * pow(10000, -2 * f32(col % max_h) / f32(2 * max_h))
  - rotated: x * cos(angle) + select(col < h, -1, 1) * pair_half(x, 2 * h) * sin(angle)
outputs:
  - y: select(col < 2 * h, rotated, x * x)`, []float64{6}, true},
	{"every_function", `kernel: funcs_all
dtypes: [f32]
inputs: [a, b]
params: [{name: p, type: f32}]
let:
  - pa: abs(a) + 0.5
  - u: exp(a) + exp2(b) + expm1(a) + log(pa) + log2(pa) + log1p(pa) + sqrt(pa) + rsqrt(pa)
  - v: tanh(a) + sigmoid(b) + erf(a) + sin(b) + cos(a) + pow(pa, b) + fma(a, b, p)
  - w: min(a, b) * max(a, b) + clamp(a, -1, b) + abs(b) * floor(a)
outputs:
  - y: u * v + w / (1 + b * b)
  - z: select(a > b, a * b, -a)`, []float64{0.75}, false},
}

func TestBackwardMatchesFiniteDifferences(t *testing.T) {
	for _, c := range fdCases {
		t.Run(c.name, func(t *testing.T) {
			fwd, bwd := build(t, c.src+ports)
			rows := 5
			if fwd.Kind != ir.Rowwise {
				rows = 1
			}
			widths := []int{1, 7, 33}
			if c.even {
				widths = []int{2, 8, 34}
			}
			for _, cols := range widths {
				t.Run(fmt.Sprint(cols), func(t *testing.T) {
					newProblem(fwd, bwd, rows, cols, c.params, uint64(cols)).check(t)
				})
			}
		})
	}
}

// TestDroppedBranchGivesNoNaN: a let used only in a select's branch gets
// the gradient where the branch is taken; where it is not, its partial may
// be NaN (sqrt' at -1) and must not reach the input (0 · NaN): the gradient
// of select(x > 0, sqrt(x), 3x) at x = -1 is 3.
func TestDroppedBranchGivesNoNaN(t *testing.T) {
	_, bwd := build(t, `kernel: k
dtypes: [f32]
inputs: [x]
let:
  - r: sqrt(x)
outputs:
  - y: select(x > 0, r, 3 * x)`+ports)
	for _, c := range [][2]float64{{-1, 3}, {4, 0.25}} {
		if got := bwd.Eval64([]float64{c[0], 1}, nil)[0]; got != c[1] {
			t.Errorf("x_grad at x = %g: %g, want %g", c[0], got, c[1])
		}
	}
}
