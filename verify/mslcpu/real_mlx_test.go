package mslcpu

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// Row kernels accumulate over a row; a lane is within rowUlps of float64
// when the kernel's float accumulation (depth ~ log of the row) and its
// exp/rsqrt add a few roundings each. The bound is what a correct float
// kernel meets; the failures column counts lanes beyond it.
const rowUlps = 16

func u32sBytes(v ...uint32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
	return b
}

// runRealL runs one real kernel with MLX's include root and any shape.
func runRealL(t *testing.T, path, host string, bufs [][]byte, grid, tg uint32, inc ...string) [][]byte {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(testContext(t), Launch{Source: src, SourceOptions: SourceOptions{Path: path, IncludeDirs: inc}, HostName: host,
		Buffers: bufs, Grid: [3]uint32{grid, 1, 1}, Threadgroup: [3]uint32{tg, 1, 1}, Order: Shuffled})
	if err != nil {
		t.Fatalf("%s: %v", host, err)
	}
	return out
}

// reportRows compares got with want lane by lane (ulp at want).
func reportRows(t *testing.T, host string, got []float32, want []float64, limit float64) {
	t.Helper()
	reportScaled(t, host, got, want, nil, limit)
}

// reportScaled measures ulps at scale[i] when larger than |want[i]|: where a
// result is a sum that cancels (layer_norm's w·(x-m)·r + b near 0), float's
// error is relative to the terms, not to the result.
func reportScaled(t *testing.T, host string, got []float32, want, scale []float64, limit float64) {
	t.Helper()
	worst, fails := 0.0, 0
	for i := range got {
		u := ulps(got[i], want[i])
		if scale != nil && math.Abs(want[i]) < scale[i] && !math.IsInf(u, 0) {
			u = math.Abs(float64(got[i])-want[i]) / ulpAt(scale[i])
		}
		worst = math.Max(worst, u)
		if u > limit {
			fails++
		}
	}
	t.Logf("| %s | %d | %.2f | %d |", host, len(got), worst, fails)
	if fails > 0 {
		t.Errorf("%s: %d lanes beyond %.1f ulp", host, fails, limit)
	}
}

// TestRealMLX runs MLX's softmax, rms_norm and layer_norm
// kernels unmodified (f32), rows in shuffled lane order, against float64.
func TestRealMLX(t *testing.T) {
	root := filepath.Join(realDir(t), "mlx")
	dir := filepath.Join(root, "mlx", "backend", "metal", "kernels")
	// unary.metal and binary.metal do not compile yet (docs/fidelity.md):
	// fp8.h casts half to bfloat, complex math passes double, metal::array,
	// and `unary_v<T, U, Op>` names an overload set (a defaulted N).
	var x []float32
	var out [][]byte
	rows, cols := 8, 512
	xs := realInputs(-4)[:cols]
	x = make([]float32, 0, rows*cols)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			x = append(x, xs[(c*(r+3))%cols]*float32(r+1)/4)
		}
	}
	w := realInputs(0.5)[:cols]
	// softmax: 4 reads per lane, 128 lanes a row.
	out = runRealL(t, filepath.Join(dir, "softmax.metal"), "block_softmax_float32", [][]byte{f32Bytes(x), make([]byte, 4*len(x)), u32sBytes(uint32(cols))}, uint32(rows*128), 128, root)
	reportRows(t, "block_softmax_float32", bytesF32(out[1]), rowRef(x, cols, func(row []float64, out []float64) {
		m, s := math.Inf(-1), 0.0
		for _, v := range row {
			m = math.Max(m, v)
		}
		for _, v := range row {
			s += math.Exp(v - m)
		}
		for i, v := range row {
			out[i] = math.Exp(v-m) / s
		}
	}), rowUlps)
	eps := float32(1e-5)
	out = runRealL(t, filepath.Join(dir, "rms_norm.metal"), "rmsfloat32", [][]byte{f32Bytes(x), f32Bytes(w), make([]byte, 4*len(x)),
		f32Bytes([]float32{eps}), u32sBytes(uint32(cols)), u32sBytes(1)}, uint32(rows*128), 128, root)
	reportRows(t, "rmsfloat32", bytesF32(out[2]), rowRef(x, cols, func(row []float64, out []float64) {
		s := 0.0
		for _, v := range row {
			s += v * v
		}
		r := 1 / math.Sqrt(s/float64(len(row))+float64(eps))
		for i, v := range row {
			out[i] = float64(w[i]) * v * r
		}
	}), rowUlps)
	bias := realInputs(-4)[:cols]
	// layer_norm: 8 reads per lane, 64 lanes a row.
	out = runRealL(t, filepath.Join(dir, "layer_norm.metal"), "layer_normfloat32", [][]byte{f32Bytes(x), f32Bytes(w), f32Bytes(bias), make([]byte, 4*len(x)),
		f32Bytes([]float32{eps}), u32sBytes(uint32(cols)), u32sBytes(1), u32sBytes(1)}, uint32(rows*64), 64, root)
	scale := rowRef(x, cols, func(row []float64, out []float64) {
		m, v2 := 0.0, 0.0
		for _, v := range row {
			m += v
		}
		m /= float64(len(row))
		for _, v := range row {
			v2 += (v - m) * (v - m)
		}
		r := 1 / math.Sqrt(v2/float64(len(row))+float64(eps))
		for i, v := range row {
			out[i] = math.Abs(float64(w[i])*(v-m)*r) + math.Abs(float64(bias[i]))
		}
	})
	reportScaled(t, "layer_normfloat32", bytesF32(out[3]), rowRef(x, cols, func(row []float64, out []float64) {
		m, v2 := 0.0, 0.0
		for _, v := range row {
			m += v
		}
		m /= float64(len(row))
		for _, v := range row {
			v2 += (v - m) * (v - m)
		}
		r := 1 / math.Sqrt(v2/float64(len(row))+float64(eps))
		for i, v := range row {
			out[i] = float64(w[i])*(v-m)*r + float64(bias[i])
		}
	}), scale, rowUlps)
}

// ulpAt is float32's unit in the last place at |v|.
func ulpAt(v float64) float64 {
	w := float32(math.Abs(v))
	return float64(math.Nextafter32(w, float32(math.Inf(1)))) - float64(w)
}

// rowRef applies f to each row of x in float64.
func rowRef(x []float32, cols int, f func(row, out []float64)) []float64 {
	want := make([]float64, len(x))
	row := make([]float64, cols)
	for r := 0; r*cols < len(x); r++ {
		for c := range row {
			row[c] = float64(x[r*cols+c])
		}
		f(row, want[r*cols:(r+1)*cols])
	}
	return want
}

// TestRealCandleAffine runs candle's affine kernel
// unmodified against float64.
func TestRealCandleAffine(t *testing.T) {
	dir := filepath.Join(realDir(t), "candle", "candle-metal-kernels", "src", "metal_src")
	n := uint32(1000)
	x := realInputs(-4)
	size := make([]byte, 8)
	binary.LittleEndian.PutUint64(size, uint64(n))
	mul, add := float32(1.5), float32(-0.25)
	// affine_f32: W = 2 elements per thread, so n/2 threads.
	out := runRealL(t, filepath.Join(dir, "affine.metal"), "affine_f32", [][]byte{size, f32Bytes([]float32{mul}), f32Bytes([]float32{add}), f32Bytes(x), make([]byte, 4*n)}, n/2, 64)
	report(t, "affine_f32", bytesF32(out[4]), x, nil, func(a, _ float64) float64 { return float64(float32(a*float64(mul) + float64(add))) }, 0)
	// reduce.metal does not compile yet: it uses Metal's vec_elements trait.
}
