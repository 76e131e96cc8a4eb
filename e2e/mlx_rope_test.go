package e2e

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgenrt"
	"github.com/kgen-dev/kgen/launch"
	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// An outside referee: MLX (pip install "mlx[cpu]", which runs on Linux
// CPUs) implements rotary embeddings (mx.fast.rope, partial and full, both
// layouts) and RMSNorm (mx.fast.rms_norm) on its own. The same inputs go
// through kgen's kernels — the generated Go CPU reference (kgenrt's RunCPU)
// and, where clang++ >= 17 exists, the generated MSL on the CPU harness
// (verify/mslcpu) — and through MLX; each must land within the kernel's
// parity rule (tolerance plus the float64 evaluation's rounding bound) of
// the float64 evaluation of the spec, and so within twice that of each
// other (MLX, which rounds a 16-bit rope's products in the storage type,
// gets two units of it at the row's largest input more). Data goes to
// Python as raw little-endian float32 files.

// mlxScript runs every case of cases.json on the files beside it and writes
// <case>.out (float32). A rope case's x is kgen's [tokens * heads, head_dim]
// (row t * heads + h at position offset + t); MLX takes [B, heads, tokens,
// head_dim] with one offset for the sequence.
const mlxScript = `
import json, sys, numpy as np, mlx.core as mx
d = sys.argv[1]
dt = {"f32": mx.float32, "f16": mx.float16, "bf16": mx.bfloat16}
for c in json.load(open(d + "/cases.json")):
    x = mx.array(np.fromfile(d + "/" + c["x"], dtype=np.float32)).astype(dt[c["dtype"]])
    if c["op"] == "rope":
        T, H, D = c["tokens"], c["heads"], c["head_dim"]
        x = x.reshape(1, T, H, D).transpose(0, 2, 1, 3)
        y = mx.fast.rope(x, c["dims"], traditional=c["traditional"], base=c["theta"], scale=1.0, offset=c["offset"])
        y = y.transpose(0, 2, 1, 3).reshape(T * H, D)
    else:
        w = mx.array(np.fromfile(d + "/" + c["w"], dtype=np.float32)).astype(dt[c["dtype"]])
        y = mx.fast.rms_norm(x.reshape(c["rows"], c["cols"]), w, c["eps"])
    np.array(y.astype(mx.float32)).astype("<f4").tofile(d + "/" + c["name"] + ".out")
`

// mlxCase is one comparison: a kgen kernel and the MLX call that computes
// the same function (the JSON fields are the script's).
type mlxCase struct {
	Name        string  `json:"name"`
	Op          string  `json:"op"` // rope or rms_norm
	DType       string  `json:"dtype"`
	X           string  `json:"x"`
	W           string  `json:"w,omitempty"`
	Tokens      int     `json:"tokens,omitempty"`
	Heads       int     `json:"heads,omitempty"`
	HeadDim     int     `json:"head_dim,omitempty"`
	Dims        int     `json:"dims,omitempty"`
	Traditional bool    `json:"traditional"`
	Theta       float64 `json:"theta,omitempty"`
	Offset      int     `json:"offset,omitempty"`
	Rows        int     `json:"rows,omitempty"`
	Cols        int     `json:"cols,omitempty"`
	Eps         float64 `json:"eps,omitempty"`

	kernel  string
	ins     []*kgenrt.Tensor // the kernel's inputs, in order
	params  []float64
	rows    int
	cols    int
	variant dtype.DType
}

// haveMLX says why MLX cannot referee here, or "".
func haveMLX() string {
	py, err := exec.LookPath("python3")
	if err != nil {
		return "no python3"
	}
	if out, err := exec.Command(py, "-c", "import mlx.core, numpy").CombinedOutput(); err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return fmt.Sprintf("MLX is not importable (%s); pip could not install mlx[cpu] here (scripts/test-deps tries: pip install --user \"mlx[cpu]\")", lines[len(lines)-1])
	}
	return ""
}

func TestMLXReferee(t *testing.T) {
	if why := haveMLX(); why != "" {
		t.Skip(why)
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(23, 5))
	var cases []*mlxCase
	const tokens, heads, headDim, offset, theta = 6, 3, 128, 5, 10000.0
	for _, dt := range []dtype.DType{dtype.F32, dtype.F16, dtype.BF16} {
		ropes := []struct {
			kernel      string
			dims        int // MLX's rotated width; kgen's rotary_dim where it has one
			traditional bool
		}{
			{"rope_partial", 64, false}, {"rope_partial", 32, false}, {"rope_partial", headDim, false},
			{"rope_partial_interleaved", 64, true}, {"rope_partial_interleaved", 32, true},
			{"rope", headDim, false}, {"rope_interleaved", headDim, true},
		}
		for _, r := range ropes {
			c := &mlxCase{Name: fmt.Sprintf("%s_%d_%s", r.kernel, r.dims, dt), Op: "rope", DType: dt.String(),
				Tokens: tokens, Heads: heads, HeadDim: headDim, Dims: r.dims, Traditional: r.traditional,
				Theta: theta, Offset: offset, kernel: r.kernel, rows: tokens * heads, cols: headDim, variant: dt}
			x := randomIn(t, dt, rng, c.rows*headDim, 3)
			pos, _ := kgenrt.New(kgenrt.I32, c.rows)
			for row := range c.rows {
				pos.SetInt32(row, int32(offset+row/heads))
			}
			c.ins, c.params = []*kgenrt.Tensor{x, pos}, []float64{theta}
			if strings.HasPrefix(r.kernel, "rope_partial") {
				c.params = append(c.params, float64(r.dims))
			}
			c.X = writeF32(t, dir, c.Name+".x", x)
			cases = append(cases, c)
		}
		const rows, cols, eps = 5, 384, 1e-5
		c := &mlxCase{Name: "rms_norm_" + dt.String(), Op: "rms_norm", DType: dt.String(), Rows: rows, Cols: cols,
			Eps: float64(float32(eps)), kernel: "rms_norm", rows: rows, cols: cols, variant: dt, params: []float64{float64(float32(eps))}}
		x, w := randomIn(t, dt, rng, rows*cols, 4), randomIn(t, dt, rng, cols, 2)
		c.ins = []*kgenrt.Tensor{x, w}
		c.X, c.W = writeF32(t, dir, c.Name+".x", x), writeF32(t, dir, c.Name+".w", w)
		cases = append(cases, c)
	}
	manifest, _ := json.Marshal(cases)
	if err := os.WriteFile(filepath.Join(dir, "cases.json"), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("python3", "-c", mlxScript, dir).CombinedOutput(); err != nil {
		t.Fatalf("MLX: %v\n%s", err, out)
	}
	irk := repoKernels(t)
	_, noMSL := mslcpu.Compiler()
	if noMSL != nil {
		t.Logf("the generated MSL is not run on the CPU (%v); the Go CPU reference alone is compared", noMSL)
	}
	for _, c := range cases {
		mlx := readF32(t, filepath.Join(dir, c.Name+".out"), c.rows*c.cols)
		ik, d := irk[c.kernel], kernelNamed(t, c.kernel)
		got := map[string][]float64{"reference": runReference(t, d, c)}
		if noMSL == nil {
			got["msl"] = runMSL(t, ik, c)
		}
		judge(t, ik, c, mlx, got)
	}
}

// judge compares MLX's output and kgen's (by path) with the float64
// evaluation of the spec, within the parity rule, and with each other
// within twice it; it logs the largest differences.
func judge(t *testing.T, ik *ir.Kernel, c *mlxCase, mlx []float64, got map[string][]float64) {
	t.Helper()
	v := variantOf(t, ik, c.variant)
	ins := make([][]float64, len(c.ins))
	for i, tn := range c.ins {
		ins[i] = tn.Float64s()
	}
	r := ir.Rounding{Unit: 0x1p-24, FuncUlps: 4}
	maxMLX, maxKgen, failed := 0.0, map[string]float64{}, 0
	fail := func(format string, args ...any) { // the first few of a case
		if failed++; failed <= 5 {
			t.Errorf(format, args...)
		}
	}
	for row := range c.rows {
		in := make([][]float64, len(ins))
		for i, b := range ik.SegmentBindings(0, ir.Input) {
			switch {
			case b.IsRowVector():
				in[i] = ins[i]
			case b.IsPerRow():
				in[i] = ins[i][row : row+1]
			default:
				in[i] = ins[i][row*c.cols : (row+1)*c.cols]
			}
		}
		ref, bound := ik.EvalRowsBoundAt(row, c.rows, in, c.params, r)
		// MLX computes a 16-bit rope in the storage type (x·cos and p·sin
		// rounded there), kgen in f32: the referee gets two units of the
		// storage type at the row's largest input more than kgen's rule.
		slack := 0.0
		if u := map[dtype.DType]float64{dtype.F16: 0x1p-11, dtype.BF16: 0x1p-8}[c.variant]; u > 0 {
			for _, x := range in[0] {
				slack = max(slack, 2*u*math.Abs(x))
			}
		}
		for j := range c.cols {
			at, want := row*c.cols+j, ref[0][j]
			lim := v.Tolerance.Abs + v.Tolerance.Rel*math.Abs(want) + bound[0][j]
			if d := math.Abs(mlx[at] - want); !(d <= lim+slack) {
				fail("%s [%d, %d]: MLX %g, kgen's float64 evaluation %g ± %g: the referee disagrees with the spec", c.Name, row, j, mlx[at], want, lim+slack)
			}
			maxMLX = max(maxMLX, math.Abs(mlx[at]-want))
			for path, g := range got {
				if d := math.Abs(g[at] - mlx[at]); !(d <= 2*lim+slack) {
					fail("%s [%d, %d]: kgen (%s) %g, MLX %g (float64 %g; allowed ±%g)", c.Name, row, j, path, g[at], mlx[at], want, 2*lim+slack)
				}
				maxKgen[path] = max(maxKgen[path], math.Abs(g[at]-mlx[at]))
			}
		}
	}
	if failed > 5 {
		t.Errorf("%s: %d elements out of bounds in all", c.Name, failed)
	}
	t.Logf("%s: max |MLX - float64| %.3g; max |kgen - MLX| %v (tolerance abs %g rel %g)", c.Name, maxMLX, maxKgen, v.Tolerance.Abs, v.Tolerance.Rel)
}

// randomIn is n values uniform in [-scale, scale), rounded to dt (so both
// sides read the same numbers).
func randomIn(t *testing.T, dt dtype.DType, rng *rand.Rand, n int, scale float64) *kgenrt.Tensor {
	t.Helper()
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((rng.Float64()*2 - 1) * scale)
	}
	tn, err := kgenrt.FromFloat32(kgenrt.DType(dt), v, n)
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

func writeF32(t *testing.T, dir, name string, tn *kgenrt.Tensor) string {
	t.Helper()
	b := make([]byte, 0, 4*tn.Len())
	for _, f := range tn.Float32s() {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

func readF32(t *testing.T, path string, n int) []float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) != 4*n {
		t.Fatalf("MLX output %s: %d bytes, want %d (%v)", path, len(b), 4*n, err)
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return out
}

func kernelNamed(t *testing.T, name string) *kgenrt.Kernel {
	t.Helper()
	for _, k := range kernels.Kernels() {
		if k.Name == name {
			return k
		}
	}
	t.Fatalf("no generated kernel %s", name)
	return nil
}

func variantOf(t *testing.T, ik *ir.Kernel, dt dtype.DType) ir.Variant {
	t.Helper()
	for _, v := range ik.Variants {
		if v.DType == dt {
			return v
		}
	}
	t.Fatalf("%s has no %s variant", ik.Name, dt)
	return ir.Variant{}
}

// runReference runs the case through the generated Go CPU reference.
func runReference(t *testing.T, d *kgenrt.Kernel, c *mlxCase) []float64 {
	t.Helper()
	y, _ := kgenrt.New(kgenrt.DType(c.variant), c.rows, c.cols)
	x, _ := kgenrt.FromBytes(c.ins[0].DType(), c.ins[0].Bytes(), c.rows, c.cols) // [rows, cols]
	if err := d.RunCPU([]*kgenrt.Tensor{x, c.ins[1], y}, c.params...); err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	return y.Float64s()
}

// runMSL runs the case through the generated .metal on the CPU harness,
// launched as the Metal launcher launches it (ir's launch, args struct).
func runMSL(t *testing.T, ik *ir.Kernel, c *mlxCase) []float64 {
	t.Helper()
	v := variantOf(t, ik, c.variant)
	src, err := os.ReadFile(filepath.Join("..", "gen", "msl", ik.Name+".metal"))
	if err != nil {
		t.Fatal(err)
	}
	l := ik.Launch(ir.Metal)
	sizes, err := l.Sizes(map[string]int{"rows": c.rows, "cols": c.cols, launch.ElemBytes: c.variant.Size()})
	if err != nil {
		t.Fatal(err)
	}
	grid, err := l.GridSize(sizes)
	if err != nil {
		t.Fatal(err)
	}
	buffers := make([][]byte, len(ik.Bindings))
	for i, b := range ik.BindingsOf(ir.Input) {
		buffers[b.Index] = c.ins[i].Bytes()
	}
	out := ik.BindingsOf(ir.Output)[0]
	buffers[out.Index] = make([]byte, c.rows*c.cols*c.variant.Size())
	args := ik.ArgsBinding()
	ab, p := make([]byte, 4*len(args.Fields)), 0
	for _, f := range args.Fields {
		var word uint32
		switch {
		case f.Size:
			word = uint32(sizes[f.Name])
		case f.Type == dtype.F32:
			word, p = math.Float32bits(float32(c.params[p])), p+1
		default:
			word, p = uint32(int32(c.params[p])), p+1
		}
		binary.LittleEndian.PutUint32(ab[f.Offset:], word)
	}
	buffers[args.Index] = ab
	var u32 [3]uint32
	for i := range u32 {
		u32[i] = uint32(grid[i])
	}
	th := [3]uint32{uint32(l.Threadgroup[0]), uint32(l.Threadgroup[1]), uint32(l.Threadgroup[2])}
	res, err := mslcpu.Run(context.Background(), mslcpu.Launch{Source: src, HostName: v.HostName, Buffers: buffers, Grid: u32, Threadgroup: th})
	if err != nil {
		var ce *mslcpu.CompileError
		if errors.As(err, &ce) {
			t.Fatalf("%s: %v", c.Name, ce)
		}
		t.Fatalf("%s: %v", c.Name, err)
	}
	y, err := kgenrt.FromBytes(kgenrt.DType(c.variant), res[out.Index], c.rows, c.cols)
	if err != nil {
		t.Fatal(err)
	}
	return y.Float64s()
}
