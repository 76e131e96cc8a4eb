package mslcpu

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestRealMLXBinary runs MLX's binary.metal unmodified (f32) against
// float64: contiguous (vv_), scalar-vector (sv_) and the 2-d general kernel
// (g2_) with b broadcast along rows.
func TestRealMLXBinary(t *testing.T) {
	root := filepath.Join(realDir(t), "mlx")
	path := filepath.Join(root, "mlx", "backend", "metal", "kernels", "binary.metal")
	ops := []struct {
		op    string
		limit float64
		ref   func(a, b float64) float64
	}{
		{"Add", 0.5, func(a, b float64) float64 { return a + b }}, {"Subtract", 0.5, func(a, b float64) float64 { return a - b }},
		{"Multiply", 0.5, func(a, b float64) float64 { return a * b }}, {"Divide", 0.5, func(a, b float64) float64 { return a / b }},
		{"Maximum", 0, math.Max}, {"Minimum", 0, math.Min}, {"Power", 4, math.Pow}, {"ArcTan2", 4, math.Atan2},
		{"LogAddExp", 4, func(a, b float64) float64 { m := math.Max(a, b); return m + math.Log1p(math.Exp(-math.Abs(a-b))) }},
	}
	x, y := realInputs(-4), realInputs(0.5)
	n := uint32(len(x))
	for _, o := range ops {
		host := "vv_" + o.op + "float32"
		out := runRealL(t, path, host, [][]byte{f32Bytes(x), f32Bytes(y), make([]byte, 4*n), u32sBytes(n)}, n, 64, root)
		report(t, host, bytesF32(out[2]), x, y, o.ref, o.limit)
	}
	out := runRealL(t, path, "sv_Multiplyfloat32", [][]byte{f32Bytes([]float32{1.5}), f32Bytes(y), make([]byte, 4*n), u32sBytes(n)}, n, 64, root)
	report(t, "sv_Multiplyfloat32", bytesF32(out[2]), y, nil, func(b, _ float64) float64 { return 1.5 * b }, 0.5)
	// g2_: a is 20 × 50 row-major, b one row of 50 broadcast (stride 0).
	rows, cols := 20, 50
	st := func(v ...int64) []byte {
		b := make([]byte, 8*len(v))
		for i, s := range v {
			binary.LittleEndian.PutUint64(b[8*i:], uint64(s))
		}
		return b
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(testContext(t), Launch{Source: src, SourceOptions: SourceOptions{Path: path, IncludeDirs: []string{root}},
		HostName: "g2_Subtractfloat32", Order: Shuffled,
		Buffers: [][]byte{f32Bytes(x[:rows*cols]), f32Bytes(y[:cols]), make([]byte, 4*rows*cols), st(int64(cols), 1), st(0, 1)},
		Grid:    [3]uint32{uint32(cols), uint32(rows), 1}, Threadgroup: [3]uint32{16, 4, 1}})
	if err != nil {
		t.Fatalf("g2_Subtractfloat32: %v", err)
	}
	yb := make([]float32, rows*cols)
	for i := range yb {
		yb[i] = y[i%cols]
	}
	report(t, "g2_Subtractfloat32 (b broadcast)", bytesF32(res[2]), x[:rows*cols], yb, func(a, b float64) float64 { return a - b }, 0.5)
}
