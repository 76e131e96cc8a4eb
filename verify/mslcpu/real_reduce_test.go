package mslcpu

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"testing"
)

// realRows is the 8 × 512 input of the row kernels (MLX's and candle's).
func realRows() (x []float32, rows, cols int) {
	rows, cols = 8, 512
	xs := realInputs(-4)[:cols]
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			x = append(x, xs[(c*(r+3))%cols]*float32(r+1)/4)
		}
	}
	return x, rows, cols
}

// TestRealCandleReduce runs candle's reduce.metal unmodified (f32, one
// threadgroup of 128 lanes per row, shuffled lane order) against float64:
// sum, max, argmax, softmax, rmsnorm and layernorm.
func TestRealCandleReduce(t *testing.T) {
	dir := filepath.Join(realDir(t), "candle", "candle-metal-kernels", "src", "metal_src")
	path := filepath.Join(dir, "reduce.metal")
	x, rows, cols := realRows()
	n, tg := uint32(len(x)), uint32(128)
	grid := uint32(rows) * tg
	dims := u32sBytes(uint32(rows), uint32(cols))
	rowsOf := func(f func(row []float64) float64) []float64 {
		out := make([]float64, rows)
		for r := range out {
			row := make([]float64, cols)
			for c := range row {
				row[c] = float64(x[r*cols+c])
			}
			out[r] = f(row)
		}
		return out
	}
	// sum: ulp at Σ|x| (a float sum's error is relative to its terms).
	out := runRealL(t, path, "fast_sum_f32", [][]byte{u32sBytes(n), u32sBytes(2), dims, u32sBytes(uint32(cols)), f32Bytes(x), make([]byte, 4*rows)}, grid, tg)
	reportScaled(t, "fast_sum_f32", bytesF32(out[5]), rowsOf(func(r []float64) float64 {
		s := 0.0
		for _, v := range r {
			s += v
		}
		return s
	}), rowsOf(func(r []float64) float64 {
		s := 0.0
		for _, v := range r {
			s += math.Abs(v)
		}
		return s
	}), rowUlps)
	out = runRealL(t, path, "fast_max_f32", [][]byte{u32sBytes(n), u32sBytes(2), dims, u32sBytes(uint32(cols)), f32Bytes(x), make([]byte, 4*rows)}, grid, tg)
	reportRows(t, "fast_max_f32", bytesF32(out[5]), rowsOf(func(r []float64) float64 {
		m := math.Inf(-1)
		for _, v := range r {
			m = math.Max(m, v)
		}
		return m
	}), 0)
	// argmax: the first index of the maximum (candle breaks ties that way).
	out = runRealL(t, path, "fast_argmax_f32", [][]byte{u32sBytes(n), u32sBytes(2), dims, u32sBytes(uint32(cols)), f32Bytes(x), make([]byte, 4*rows)}, grid, tg)
	want := rowsOf(func(r []float64) float64 {
		best := 0
		for i, v := range r {
			if v > r[best] {
				best = i
			}
		}
		return float64(best)
	})
	for r := 0; r < rows; r++ {
		if got := binary.LittleEndian.Uint32(out[5][4*r:]); float64(got) != want[r] {
			t.Errorf("fast_argmax_f32 row %d: %d, want %v", r, got, want[r])
		}
	}
	t.Logf("| fast_argmax_f32 | %d | exact index | 0 |", rows)
	out = runRealL(t, path, "softmax_f32", [][]byte{u32sBytes(n), u32sBytes(uint32(cols)), f32Bytes(x), make([]byte, 4*n)}, grid, tg)
	reportRows(t, "softmax_f32", bytesF32(out[3]), rowRef(x, cols, func(row, o []float64) {
		m, s := math.Inf(-1), 0.0
		for _, v := range row {
			m = math.Max(m, v)
		}
		for _, v := range row {
			s += math.Exp(v - m)
		}
		for i, v := range row {
			o[i] = math.Exp(v-m) / s
		}
	}), rowUlps)
	w, b := realInputs(0.5)[:cols], realInputs(-4)[:cols]
	eps := float32(1e-5)
	out = runRealL(t, path, "rmsnorm_f32", [][]byte{u32sBytes(n), u32sBytes(uint32(cols)), f32Bytes(x), make([]byte, 4*n), f32Bytes(w), f32Bytes([]float32{eps})}, grid, tg)
	reportRows(t, "rmsnorm_f32", bytesF32(out[3]), rowRef(x, cols, func(row, o []float64) {
		s := 0.0
		for _, v := range row {
			s += v * v
		}
		r := 1 / math.Sqrt(s/float64(len(row))+float64(eps))
		for i, v := range row {
			o[i] = float64(w[i]) * v * r
		}
	}), rowUlps)
	ln := func(abs bool) func(row, o []float64) {
		return func(row, o []float64) {
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
				if abs {
					o[i] = math.Abs(float64(w[i])*(v-m)*r) + math.Abs(float64(b[i]))
				} else {
					o[i] = float64(w[i])*(v-m)*r + float64(b[i])
				}
			}
		}
	}
	out = runRealL(t, path, "layernorm_f32", [][]byte{u32sBytes(n), u32sBytes(uint32(cols)), f32Bytes(x), make([]byte, 4*n), f32Bytes(w), f32Bytes(b), f32Bytes([]float32{eps})}, grid, tg)
	reportScaled(t, "layernorm_f32", bytesF32(out[3]), rowRef(x, cols, ln(false)), rowRef(x, cols, ln(true)), rowUlps)
}
