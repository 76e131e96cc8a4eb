package e2e

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// mlxDequantScript quantizes w.f32 ([n, k], cast to the dtype) at 4 bits,
// group 64, and saves the words, the tables and mx.dequantize's values.
const mlxDequantScript = `
import sys, numpy as np, mlx.core as mx
dt = {"f16": mx.float16, "bf16": mx.bfloat16}[sys.argv[1]]
n, k = (int(a) for a in sys.argv[2:4])
save = lambda s, a: np.array(a.astype(mx.float32)).astype("<f4").tofile(s)
w = mx.array(np.fromfile("w.f32", dtype="<f4").reshape(n, k)).astype(dt)
wq, s, b = mx.quantize(w, group_size=64, bits=4)
np.array(wq).astype("<u4").tofile("wq.u32")
save("s.f32", s); save("b.f32", b)
save("deq.f32", mx.dequantize(wq, s, b, group_size=64, bits=4))
`

// dequantMLXBound is how far dequantize_mlx4's value of weight i may be
// from mx.dequantize's. kgen computes fl_T(fl32(s·q + b)), MLX
// fl_T(fl_T(s·q) + b) (e2e's affineCompare), both of w = s·q + b: |kgen −
// w| ≤ u32·mag + u_T(|w| + u32·mag) and |MLX − w| ≤ u_T|s·q| + u_T(|w| +
// u_T|s·q|), mag = |s·q| + |b|, plus T's subnormal spacing for each
// rounding to T.
func dequantMLXBound(dt kgenrt.DType, sq, b float64) float64 {
	u, w, mag := unitOf(dt), math.Abs(sq+b), math.Abs(sq)+math.Abs(b)
	tiny := 0x1p-24 // f16's subnormal spacing
	if dt == kgenrt.BF16 {
		tiny = 0x1p-133
	}
	return 0x1p-24*mag + u*(w+0x1p-24*mag) + u*math.Abs(sq) + u*(w+u*math.Abs(sq)) + 3*tiny
}

// TestDequantizeMlx4MatchesMLX: mx.quantize's 4-bit words, scales and
// biases, bound as they are to dequantize_mlx4 (the Go reference, and the
// Metal port on the CPU harness where clang++ exists), give
// mx.dequantize's values within dequantMLXBound, in f16 and bf16, over
// 40 rows of 2112 values (33 groups). Swapped nibbles and scales read one
// group off must fall outside it.
func TestDequantizeMlx4MatchesMLX(t *testing.T) {
	needMLX(t)
	const n, k = 40, 2112
	q := kgenrt.Quant{Format: kgenrt.Affine, Bits: 4, Group: 64}
	_, noMSL := mslcpu.Compiler()
	if noMSL != nil {
		t.Logf("no C++ compiler for the MSL harness (%v): the Go reference alone is compared", noMSL)
	}
	r := rand.New(rand.NewPCG(4, 65))
	for _, dt := range []kgenrt.DType{kgenrt.F16, kgenrt.BF16} {
		w := randomTensor(t, r, dt, 1, n, k)
		dir := runPy(t, mlxDequantScript, map[string][]byte{"w.f32": f32Bytes(w.Float32s())}, dt.String(), fmt.Sprint(n), fmt.Sprint(k))
		wq := readOut(t, dir, "wq.u32")
		s, b := f32Values(readOut(t, dir, "s.f32")), f32Values(readOut(t, dir, "b.f32"))
		deq := f32Values(readOut(t, dir, "deq.f32"))
		tables := func(v []float64) *kgenrt.Tensor {
			tn, err := kgenrt.FromFloat32(dt, toF32(v), n, k/64)
			if err != nil {
				t.Fatal(err)
			}
			return tn
		}
		run := func(t *testing.T, metal bool, wq []byte, s []float64) []float64 {
			wt, err := kgenrt.FromBytes(kgenrt.U32, wq, n, q.Width(k))
			if err != nil {
				t.Fatal(err)
			}
			y, _ := kgenrt.New(dt, n, k)
			if metal {
				err = kernels.DequantizeMlx4.Run(kgenrt.Metal, wt, tables(s), tables(b), y)
			} else {
				err = kernels.DequantizeMlx4.Reference(wt, tables(s), tables(b), y)
			}
			if err != nil {
				t.Fatal(err)
			}
			return y.Float64s()
		}
		// judge counts the values outside the bound and those equal to MLX's.
		judge := func(got []float64, wq []byte, s []float64) (outside, same int, worst float64) {
			for i := range n * k {
				row, j := i/k, i%k
				g := row*(k/64) + j/64
				sq := s[g] * float64(q.Code(wq[row*q.Width(k)*4:], j))
				d := math.Abs(got[i] - deq[i])
				worst = max(worst, d)
				if got[i] == deq[i] {
					same++
				}
				if !(d <= dequantMLXBound(dt, sq, b[g])) {
					outside++
				}
			}
			return outside, same, worst
		}
		for _, metal := range []bool{false, true} {
			name := dt.String() + "/reference"
			if metal {
				name = dt.String() + "/metal"
			}
			t.Run(name, func(t *testing.T) {
				if metal {
					if noMSL != nil {
						t.Skip(noMSL)
					}
					emulateMetal(t)
				}
				outside, same, worst := judge(run(t, metal, wq, s), wq, s)
				if outside > 0 {
					t.Errorf("%d of %d values outside the bound", outside, n*k)
				}
				t.Logf("%d of %d values are mx.dequantize's bits; max |kgen − MLX| %.3g", same, n*k, worst)
				if bad, _, _ := judge(run(t, metal, swappedNibbles(wq), s), wq, s); bad == 0 {
					t.Error("swapped nibbles passed the comparison")
				}
				if bad, _, _ := judge(run(t, metal, wq, nextGroupScales(s, k/64)), wq, s); bad == 0 {
					t.Error("the next group's scales passed the comparison")
				}
			})
		}
	}
}

// TestDequantizeMlx4LaunchChecks: dequantize_mlx4's launcher reads rows
// and cols from the packed tensor ([rows, cols/8] words) and refuses,
// naming the tensor and the rule, a width that holds no whole group,
// tables of another shape and an output of another width; its reference
// gives kgenrt.Dequantize's values rounded to the output's dtype.
func TestDequantizeMlx4LaunchChecks(t *testing.T) {
	const rows, cols = 3, 192
	q := kgenrt.Quant{Format: kgenrt.Affine, Bits: 4, Group: 64}
	r := rand.New(rand.NewPCG(5, 6))
	ws := make([]float32, rows*cols)
	for i := range ws {
		ws[i] = float32(r.NormFloat64())
	}
	w, s, b, err := kgenrt.Quantize(q, ws, rows, cols, kgenrt.F16)
	if err != nil {
		t.Fatal(err)
	}
	y, _ := kgenrt.New(kgenrt.F16, rows, cols)
	if err := kernels.DequantizeMlx4.Reference(w, s, b, y); err != nil {
		t.Fatal(err)
	}
	want, _, _, _ := kgenrt.Dequantize(q, w, s, b)
	for i, v := range y.Float32s() {
		if v != kgenrt.RoundF16(want[i]) {
			t.Fatalf("value %d: %g, want %g (kgenrt.Dequantize's %g in f16)", i, v, kgenrt.RoundF16(want[i]), want[i])
		}
	}
	odd, _ := kgenrt.New(kgenrt.U32, rows, 20) // 160 values: two groups and a half
	s3, _ := kgenrt.New(kgenrt.F16, rows, 2)
	y160, _ := kgenrt.New(kgenrt.F16, rows, 160)
	y96, _ := kgenrt.New(kgenrt.F16, rows, 96)
	for _, c := range []struct {
		name       string
		w, s, b, y *kgenrt.Tensor
		want       string
	}{
		{"a width of no whole group", odd, s3, s3, y160, "multiple of 64"},
		{"tables of another width", w, s3, b, y, "w_scales"},
		{"an output of another width", w, s, b, y96, "y"},
	} {
		err := kernels.DequantizeMlx4.Reference(c.w, c.s, c.b, c.y)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
			continue
		}
		t.Logf("%s: %v", c.name, err)
	}
}
