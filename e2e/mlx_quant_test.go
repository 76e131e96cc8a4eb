package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// An outside referee for MLX's affine quantization: mx.quantize packs the
// weights, kgen reads those bytes with no repacking (kgenrt's Dequantize
// and the qmatmul_mlx4 kernel, the Go reference and the Metal port on the
// MSL-on-CPU harness), and mx.dequantize reads kgenrt.Quantize's: the
// layout must agree both ways.
//
// What MLX computes, and so the bounds (mlx 0.32, CPU backend):
//   - mx.dequantize is fl_T(fl_T(scale·q) + bias) in the tables' dtype T
//     (checked bit for bit below), kgen fl32(scale·q + bias) with one fused
//     rounding in f32. So |kgen − MLX| ≤ u_T(1 + u_T)|scale·q| + u_T|scale·q
//     + bias| + u_32|scale·q + bias| (u_T: 2^−11 f16, 2^−8 bf16, 2^−24 f32).
//   - mx.quantized_matmul with f16 or bf16 activations accumulates in that
//     dtype on the CPU (mlx/backend/cpu/quantized.cpp, _qmm_t's sum is a
//     T), whose worst-case bound γ_{K+2} in T is void at k = 2112 (k·2^−11
//     > 1; measured, it is off by up to 1.2 in f16 and 10 in bf16 where
//     kgen is within 0.03 and 0.24); with f32 activations, scales and biases holding the
//     same values it accumulates in f32, as kgen does and as MLX's Metal
//     kernels do. That call is the referee (qmatmulMLXBound); the 16-bit
//     call's distance is logged.

// roundDT rounds x to dt correctly: through float32 rounded to odd when
// inexact (24 bits leave 2 to spare over f16's 11 and bf16's 8), so the
// second rounding cannot land on a tie the first one made.
func roundDT(dt kgenrt.DType, x float64) float64 {
	r := float32(x)
	if dt == kgenrt.F32 {
		return float64(r)
	}
	if float64(r) != x && math.Float32bits(r)&1 == 0 {
		r = math.Nextafter32(r, float32(math.Copysign(math.Inf(1), x-float64(r))))
	}
	if dt == kgenrt.F16 {
		return float64(kgenrt.RoundF16(r))
	}
	return float64(kgenrt.RoundBF16(r))
}

// affineCompare compares MLX's dequantization of an affine tensor (packed
// rows, scales and biases as values of dt) with kgen's: notExact counts
// the weights where MLX's formula evaluated on kgen's codes (roundDT twice)
// differs from MLX by any bit, outside those where kgenrt.Dequantize's f32
// differs from MLX by more than the tolerance above; worst is the largest
// |kgen − MLX|.
func affineCompare(q kgenrt.Quant, dt kgenrt.DType, packed []byte, s, b, mlx []float64, kgen []float32, n, k int) (notExact, outside int, worst float64) {
	u, rowBytes := unitOf(dt), q.Width(k)*4
	for i := range n * k {
		r, j := i/k, i%k
		g := r*(k/q.Group) + j/q.Group
		sq := s[g] * float64(q.Code(packed[r*rowBytes:], j))
		if roundDT(dt, roundDT(dt, sq)+b[g]) != mlx[i] {
			notExact++
		}
		d := math.Abs(float64(kgen[i]) - mlx[i])
		worst = max(worst, d)
		if !(d <= u*(1+u)*math.Abs(sq)+u*math.Abs(sq+b[g])+0x1p-24*math.Abs(sq+b[g])) {
			outside++
		}
	}
	return notExact, outside, worst
}

// mlxLayoutScript: for each case of cases.json, mx.quantize of NAME.w
// (f32 [n, k], cast to the case's dtype) saved as NAME.wq (the uint32
// words), NAME.s and NAME.b (f32) and its mx.dequantize as NAME.deq; and
// mx.dequantize of kgenrt.Quantize's NAME.kq, NAME.ks, NAME.kb as NAME.kdeq.
const mlxLayoutScript = `
import json, numpy as np, mlx.core as mx
dts = {"f16": mx.float16, "bf16": mx.bfloat16, "f32": mx.float32}
for c in json.load(open("cases.json")):
    p, dt, n, k, g, bits = c["name"], dts[c["dtype"]], c["n"], c["k"], c["group"], c["bits"]
    f32 = lambda s, *shape: mx.array(np.fromfile(p + s, dtype="<f4").reshape(shape))
    save = lambda s, a: np.array(a.astype(mx.float32)).astype("<f4").tofile(p + s)
    wq, s, b = mx.quantize(f32(".w", n, k).astype(dt), group_size=g, bits=bits)
    assert wq.dtype == mx.uint32 and wq.shape == (n, k * bits // 32) and s.dtype == dt, (wq.shape, s.dtype)
    np.array(wq).astype("<u4").tofile(p + ".wq")
    save(".s", s); save(".b", b)
    save(".deq", mx.dequantize(wq, s, b, group_size=g, bits=bits))
    kq = mx.array(np.fromfile(p + ".kq", dtype="<u4").reshape(n, k * bits // 32))
    save(".kdeq", mx.dequantize(kq, f32(".ks", n, k // g).astype(dt), f32(".kb", n, k // g).astype(dt), group_size=g, bits=bits))
`

type mlxQuantCase struct {
	Name  string `json:"name"`
	DType string `json:"dtype"`
	N     int    `json:"n"`
	K     int    `json:"k"`
	Group int    `json:"group"`
	Bits  int    `json:"bits"`

	dt kgenrt.DType
	w  []float32 // the weights, values of dt
}

// TestMLXQuantLayout: MLX's packed weights, for every width MLX has (2, 3,
// 4, 5, 6 and 8 bits) at group 64 in f16, bf16 and f32 tables and at
// groups 32 and 128 for 3 and 4 bits, read by kgenrt as mx.dequantize
// reads them: MLX's formula on kgenrt's codes reproduces every bit of
// mx.dequantize's output, and kgenrt.Dequantize is within the tolerance
// above. The other way, mx.dequantize of kgenrt.Quantize's words, scales
// and biases agrees with kgenrt.Dequantize of them the same way. Swapped
// codes and a table read one group off must fail.
func TestMLXQuantLayout(t *testing.T) {
	needMLX(t)
	const n, k = 8, 384
	r := rand.New(rand.NewPCG(24, 4))
	var cases []*mlxQuantCase
	add := func(dt kgenrt.DType, bits, group int) {
		c := &mlxQuantCase{Name: fmt.Sprintf("b%d_g%d_%s", bits, group, dt), DType: dt.String(), N: n, K: k, Group: group, Bits: bits, dt: dt}
		c.w = randomTensor(t, r, dt, 3, n*k).Float32s()
		cases = append(cases, c)
	}
	for _, dt := range []kgenrt.DType{kgenrt.F16, kgenrt.BF16, kgenrt.F32} {
		for _, bits := range kgenrt.AffineBits {
			add(dt, bits, 64)
		}
	}
	for _, bits := range []int{3, 4} {
		add(kgenrt.F16, bits, 32)
		add(kgenrt.F16, bits, 128)
	}
	in := map[string][]byte{}
	kq := map[string][3]*kgenrt.Tensor{}
	for _, c := range cases {
		q := kgenrt.Quant{Format: kgenrt.Affine, Bits: c.Bits, Group: c.Group}
		packed, s, b, err := kgenrt.Quantize(q, c.w, n, k, c.dt)
		if err != nil {
			t.Fatal(err)
		}
		kq[c.Name] = [3]*kgenrt.Tensor{packed, s, b}
		in[c.Name+".w"], in[c.Name+".kq"] = f32Bytes(c.w), packed.Bytes()
		in[c.Name+".ks"], in[c.Name+".kb"] = f32Bytes(s.Float32s()), f32Bytes(b.Float32s())
	}
	in["cases.json"], _ = json.Marshal(cases)
	dir := runPy(t, mlxLayoutScript, in)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			q := kgenrt.Quant{Format: kgenrt.Affine, Bits: c.Bits, Group: c.Group}
			// MLX's words, scales and biases through kgenrt.
			wq := readOut(t, dir, c.Name+".wq")
			s, b := f32Values(readOut(t, dir, c.Name+".s")), f32Values(readOut(t, dir, c.Name+".b"))
			deq := f32Values(readOut(t, dir, c.Name+".deq"))
			mine := func(wq []byte, s, b []float64) []float32 {
				pt, err := kgenrt.FromBytes(kgenrt.U32, wq, n, q.Width(k))
				if err != nil {
					t.Fatal(err)
				}
				st, _ := kgenrt.FromFloat32(c.dt, toF32(s), n, k/c.Group)
				bt, _ := kgenrt.FromFloat32(c.dt, toF32(b), n, k/c.Group)
				out, _, _, err := kgenrt.Dequantize(q, pt, st, bt)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			notExact, outside, worst := affineCompare(q, c.dt, wq, s, b, deq, mine(wq, s, b), n, k)
			if notExact > 0 || outside > 0 {
				t.Errorf("MLX's packing read by kgenrt: %d weights differ from MLX's formula on kgen's codes, %d outside the tolerance", notExact, outside)
			}
			// kgenrt.Quantize follows mx.quantize's rule: the same words,
			// scales and biases, bit for bit.
			kt := kq[c.Name]
			if !slices.Equal(kt[0].Bytes(), wq) || !slices.Equal(kt[1].Float64s(), s) || !slices.Equal(kt[2].Float64s(), b) {
				diff := 0
				for i := range len(wq) / 4 {
					if !slices.Equal(wq[4*i:4*i+4], kt[0].Bytes()[4*i:4*i+4]) {
						diff++
					}
				}
				t.Errorf("kgenrt.Quantize is not mx.quantize: %d of %d words differ, scales equal %v, biases equal %v",
					diff, len(wq)/4, slices.Equal(kt[1].Float64s(), s), slices.Equal(kt[2].Float64s(), b))
			}
			// kgenrt.Quantize's through mx.dequantize.
			kdeq := f32Values(readOut(t, dir, c.Name+".kdeq"))
			ks, kb := kt[1].Float64s(), kt[2].Float64s()
			kne, kout, kworst := affineCompare(q, c.dt, kt[0].Bytes(), ks, kb, kdeq, mine(kt[0].Bytes(), ks, kb), n, k)
			if kne > 0 || kout > 0 {
				t.Errorf("kgenrt.Quantize's packing read by MLX: %d weights differ from MLX's formula on kgen's codes, %d outside the tolerance", kne, kout)
			}
			t.Logf("max |kgen − mx.dequantize|: MLX's packing %.3g, kgenrt's %.3g", worst, kworst)
			t.Run("corrupted copies fail", func(t *testing.T) {
				// Codes j and j+1 traded in every pair (a reader off by one
				// code), and each group reading the next group's scale.
				swapped := slices.Clone(wq)
				for r := range n {
					row := swapped[r*q.Width(k)*4 : (r+1)*q.Width(k)*4]
					for j := 0; j+1 < k; j += 2 {
						a, z := q.Code(row, j), q.Code(row, j+1)
						setAffineCode(row, j, c.Bits, z)
						setAffineCode(row, j+1, c.Bits, a)
					}
				}
				if ne, out, _ := affineCompare(q, c.dt, swapped, s, b, deq, mine(swapped, s, b), n, k); ne == 0 || out == 0 {
					t.Errorf("swapped codes passed: %d not exact, %d outside", ne, out)
				}
				next := slices.Clone(s)
				for g := range next {
					if (g+1)%(k/c.Group) != 0 {
						next[g] = s[g+1]
					}
				}
				if ne, out, _ := affineCompare(q, c.dt, wq, next, b, deq, mine(wq, next, b), n, k); ne == 0 || out == 0 {
					t.Errorf("the next group's scales passed: %d not exact, %d outside", ne, out)
				}
			})
		})
	}
}

// setAffineCode writes code c of value j into a packed row's bit stream.
func setAffineCode(row []byte, j, bits, c int) {
	for bit := range bits {
		at, pos := (j*bits+bit)/8, (j*bits+bit)%8
		row[at] = row[at]&^(1<<pos) | byte((c>>bit)&1)<<pos
	}
}

func toF32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// mlxQmatmulScript quantizes w.f32 ([n, k], cast to the dtype) at 4 bits,
// group 64, and multiplies x.f32 ([m, k]) by it twice: in the dtype (y16)
// and with x, scales and biases cast to f32 (y32: the same values,
// accumulated in f32).
const mlxQmatmulScript = `
import sys, numpy as np, mlx.core as mx
dt = {"f16": mx.float16, "bf16": mx.bfloat16}[sys.argv[1]]
m, n, k = (int(a) for a in sys.argv[2:5])
f32 = lambda s, *shape: mx.array(np.fromfile(s, dtype="<f4").reshape(shape))
save = lambda s, a: np.array(a.astype(mx.float32)).astype("<f4").tofile(s)
x = f32("x.f32", m, k).astype(dt)
wq, s, b = mx.quantize(f32("w.f32", n, k).astype(dt), group_size=64, bits=4)
np.array(wq).astype("<u4").tofile("wq.u32")
save("s.f32", s); save("b.f32", b)
save("y16.f32", mx.quantized_matmul(x, wq, s, b, transpose=True, group_size=64, bits=4))
f = mx.float32
save("y32.f32", mx.quantized_matmul(x.astype(f), wq, s.astype(f), b.astype(f), transpose=True, group_size=64, bits=4))
`

// qmatmulMLXBound is, per output, how far kgen's qmatmul_mlx4 may be from
// MLX's f32 quantized_matmul of the same values. With A = Σ_k |x|·(|s·q| +
// |b|): kgen's f32 accumulator is within γ_{K+1}·A of the exact product
// (verify/parity/quant.go: one rounding of the fused s·q + b, then the dot
// product's γ_K); MLX's within γ_{K+2}·A (s·q and + b rounded apart, then
// γ_K); kgen then stores its sum in dt, within u_dt of it. So |kgen − MLX|
// ≤ (γ_{K+1} + γ_{K+2})·A + u_dt·(|MLX| + (γ_{K+1} + γ_{K+2})·A).
func qmatmulMLXBound(x []float64, q kgenrt.Quant, wq []byte, s, b, y32 []float64, m, n, k int, dt kgenrt.DType) []float64 {
	g := gamma(k+1) + gamma(k+2)
	bound := make([]float64, m*n)
	rowBytes := q.Width(k) * 4
	for j := range n {
		mag := make([]float64, k)
		for c := range k {
			grp := j*(k/q.Group) + c/q.Group
			mag[c] = math.Abs(s[grp]*float64(q.Code(wq[j*rowBytes:], c))) + math.Abs(b[grp])
		}
		for i := range m {
			a := 0.0
			for c := range k {
				a += math.Abs(x[i*k+c]) * mag[c]
			}
			bound[i*n+j] = g*a + unitOf(dt)*(math.Abs(y32[i*n+j])+g*a)
		}
	}
	return bound
}

// TestQmatmulMlx4MatchesMLX: mx.quantize's 4-bit words, scales and biases,
// bound as they are to qmatmul_mlx4 (the Go reference, and the Metal port
// on the CPU harness where clang++ exists), give MLX's quantized_matmul
// (transpose=True, group 64) within qmatmulMLXBound at m = 1 (the
// matrix-vector phase on Metal) and m = 33 (the tiled kernel), k = 2112
// (33 groups), in f16 and bf16. Swapped nibbles and scales read one group
// off must fall outside the bound.
func TestQmatmulMlx4MatchesMLX(t *testing.T) {
	needMLX(t)
	const mMax, n, k = 33, 40, 2112
	q := kgenrt.Quant{Format: kgenrt.Affine, Bits: 4, Group: 64}
	_, noMSL := mslcpu.Compiler()
	if noMSL != nil {
		t.Logf("no C++ compiler for the MSL harness (%v): the Go reference alone is compared", noMSL)
	}
	r := rand.New(rand.NewPCG(4, 64))
	for _, dt := range []kgenrt.DType{kgenrt.F16, kgenrt.BF16} {
		x33 := randomTensor(t, r, dt, 2, mMax, k)
		w := randomTensor(t, r, dt, 1, n, k)
		dir := runPy(t, mlxQmatmulScript, map[string][]byte{"x.f32": f32Bytes(x33.Float32s()), "w.f32": f32Bytes(w.Float32s())},
			dt.String(), fmt.Sprint(mMax), fmt.Sprint(n), fmt.Sprint(k))
		wq := readOut(t, dir, "wq.u32")
		s, b := f32Values(readOut(t, dir, "s.f32")), f32Values(readOut(t, dir, "b.f32"))
		y16, y32 := f32Values(readOut(t, dir, "y16.f32")), f32Values(readOut(t, dir, "y32.f32"))
		tables := func(s []float64) *kgenrt.Tensor {
			tn, err := kgenrt.FromFloat32(dt, toF32(s), n, k/64)
			if err != nil {
				t.Fatal(err)
			}
			return tn
		}
		for _, m := range []int{1, mMax} {
			x, _ := kgenrt.FromBytes(dt, x33.Bytes()[:m*k*dt.Size()], m, k)
			xv := x.Float64s()
			want, want16 := y32[:m*n], y16[:m*n]
			bound := qmatmulMLXBound(xv, q, wq, s, b, want, m, n, k, dt)
			run := func(t *testing.T, metal bool, wq []byte, s []float64) []float64 {
				wt, err := kgenrt.FromBytes(kgenrt.U32, wq, n, q.Width(k))
				if err != nil {
					t.Fatal(err)
				}
				y, _ := kgenrt.New(dt, m, n)
				if metal {
					err = kernels.QmatmulMlx4.Run(kgenrt.Metal, x, wt, tables(s), tables(b), y)
				} else {
					err = kernels.QmatmulMlx4.Reference(x, wt, tables(s), tables(b), y)
				}
				if err != nil {
					t.Fatal(err)
				}
				return y.Float64s()
			}
			judge := func(t *testing.T, got []float64) {
				bad, worst, ratio := boundCheck(got, want, bound)
				if bad > 0 {
					t.Errorf("%d of %d outputs outside the bound", bad, m*n)
				}
				_, worst16, _ := boundCheck(got, want16, bound)
				same, ulps := ulpsFromRounded(got, want, dt)
				t.Logf("max |kgen − MLX f32| %.3g (%.2f of the bound); %d of %d outputs are MLX's f32 result rounded to %s (the others within %.2g ulp); max |kgen − MLX in %[5]s, which accumulates in %[5]s| %.3[7]g",
					worst, ratio, same, m*n, dt, ulps, worst16)
			}
			name := fmt.Sprintf("%s_m%d", dt, m)
			t.Run(name+"/reference", func(t *testing.T) {
				judge(t, run(t, false, wq, s))
				if bad, _, _ := boundCheck(run(t, false, swappedNibbles(wq), s), want, bound); bad == 0 {
					t.Error("swapped nibbles passed the comparison")
				}
				if bad, _, _ := boundCheck(run(t, false, wq, nextGroupScales(s, k/64)), want, bound); bad == 0 {
					t.Error("the next group's scales passed the comparison")
				}
			})
			t.Run(name+"/metal", func(t *testing.T) {
				if noMSL != nil {
					t.Skip(noMSL)
				}
				emulateMetal(t)
				judge(t, run(t, true, wq, s))
			})
		}
	}
}

// swappedNibbles is a copy of packed 4-bit words with the two nibbles of
// every byte traded: a reader that takes codes in the wrong order.
func swappedNibbles(wq []byte) []byte {
	out := slices.Clone(wq)
	for i := range out {
		out[i] = out[i]<<4 | out[i]>>4
	}
	return out
}

// nextGroupScales is a copy of a [rows, groups] table in which each group
// but a row's last takes the next group's value: a reader one group off.
func nextGroupScales(s []float64, groups int) []float64 {
	out := slices.Clone(s)
	for g := range out {
		if (g+1)%groups != 0 {
			out[g] = s[g+1]
		}
	}
	return out
}
