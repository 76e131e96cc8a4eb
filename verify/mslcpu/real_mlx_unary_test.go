package mslcpu

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestRealMLXUnary runs MLX's unary.metal unmodified (f32) against float64:
// the contiguous kernels (v_) lane by lane, and the general one (gn1_) on a
// transposed input, which goes through elem_to_loc({x, y, z}, ...).
func TestRealMLXUnary(t *testing.T) {
	root := filepath.Join(realDir(t), "mlx")
	path := filepath.Join(root, "mlx", "backend", "metal", "kernels", "unary.metal")
	// MLX's expm1f (which erf uses above |x| 0.93) reduces by ln 2 with one
	// float constant (-6.93145752e-1f, 1.4e-6 off; njuffa's original adds a
	// second term): its results are ~100 ulp off by MLX's own code, on a GPU
	// too. Those two get a wider limit; every other op 4 ulp.
	wide := map[string]bool{"Expm1": true, "Erf": true}
	ops := []struct {
		op  string
		lo  float64
		ref func(float64) float64
	}{
		{"Exp", -4, math.Exp}, {"Expm1", -4, math.Expm1}, {"Log", 0, math.Log}, {"Log1p", 0, math.Log1p},
		{"Sin", -4, math.Sin}, {"Tanh", -4, math.Tanh}, {"Sqrt", 0, math.Sqrt}, {"Rsqrt", 0.5, func(x float64) float64 { return 1 / math.Sqrt(x) }},
		{"Erf", -4, math.Erf}, {"Sigmoid", -4, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }},
		{"ArcSinh", -4, math.Asinh}, {"Negative", -4, func(x float64) float64 { return -x }},
	}
	for _, o := range ops {
		x := realInputs(o.lo)
		host := "v_" + o.op + "float32float32"
		out := runRealL(t, path, host, [][]byte{f32Bytes(x), make([]byte, 4*len(x)), u32sBytes(uint32(len(x)))}, uint32(len(x)), 64, root)
		limit := 4.0
		if wide[o.op] {
			limit = 200
		}
		report(t, host, bytesF32(out[1]), x, nil, func(a, _ float64) float64 { return o.ref(a) }, limit)
	}
	// gn1_: in is a 24 × 40 row-major matrix read as its 40 × 24 transpose.
	rows, cols := 40, 24
	x := realInputs(-4)[:rows*cols]
	strides := make([]byte, 16)
	binary.LittleEndian.PutUint64(strides, 1)
	binary.LittleEndian.PutUint64(strides[8:], uint64(rows))
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(testContext(t), Launch{Source: src, SourceOptions: SourceOptions{Path: path, IncludeDirs: []string{root}},
		HostName: "gn1_Expfloat32float32", Order: Shuffled,
		Buffers: [][]byte{f32Bytes(x), make([]byte, 4*len(x)), u32sBytes(uint32(rows), uint32(cols)), strides, u32sBytes(2)},
		Grid:    [3]uint32{uint32(cols), uint32(rows), 1}, Threadgroup: [3]uint32{8, 4, 1}})
	if err != nil {
		t.Fatalf("gn1_Expfloat32float32: %v", err)
	}
	xt := make([]float32, len(x))
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			xt[r*cols+c] = x[c*rows+r]
		}
	}
	report(t, "gn1_Expfloat32float32 (transposed)", bytesF32(out[1]), xt, nil, func(a, _ float64) float64 { return math.Exp(a) }, 4)
}
