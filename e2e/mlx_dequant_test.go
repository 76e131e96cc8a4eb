package e2e

import (
	"fmt"
	"math"
	"math/rand/v2"
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
