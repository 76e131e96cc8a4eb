package e2e

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// TestQuantizeEdges: the built-in quantize_int8_rows through its generated
// CPU reference on the rows its doc promises: saturation at ±127 (never
// -128), halves to even, a zero row, a NaN element (ignored by the absmax,
// quantized to 0) and an infinity (scale Inf, every q 0); and the round
// trip through dequantize_int8_rows within half a step.
func TestQuantizeEdges(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	rows := [][]float32{
		{-2, 2, 1, -1},            // the absmax at both signs: ±127, never -128
		{254, 127, 1, -1},         // 63.5 and -0.5: halves to even (64, -0)
		{0, 0, 0, 0},              // a zero row
		{nan, 4, -2, 1},           // NaN ignored by the absmax, quantized to 0
		{inf, 3, -inf, 0.5},       // an infinity: scale Inf, every q 0
		{1e-30, -3e-30, 0, 3e-30}, // tiny values still span ±127
	}
	want := [][]int32{{-127, 127, 64, -64}, {127, 64, 0, 0}, {0, 0, 0, 0}, {0, 127, -64, 32}, {0, 0, 0, 0}, {42, -127, 0, 127}}
	wantScale := []float32{2.0 / 127, 254.0 / 127, 0, 4.0 / 127, inf, 3e-30 / 127}
	var flat []float32
	for _, r := range rows {
		flat = append(flat, r...)
	}
	x, _ := kgenrt.FromFloat32(kgenrt.F32, flat, len(rows), 4)
	scale, _ := kgenrt.New(kgenrt.F32, len(rows))
	q, _ := kgenrt.New(kgenrt.I8, len(rows), 4)
	if err := kernels.QuantizeInt8Rows.Reference(x, scale, q); err != nil {
		t.Fatal(err)
	}
	for r := range rows {
		if got := scale.Float32At(r); got != wantScale[r] && !(math.IsInf(float64(got), 1) && math.IsInf(float64(wantScale[r]), 1)) {
			t.Errorf("row %d: scale %g, want %g", r, got, wantScale[r])
		}
		for c := range 4 {
			if got := q.Int32At(r*4 + c); got != want[r][c] {
				t.Errorf("row %d col %d (x = %g): q %d, want %d", r, c, rows[r][c], got, want[r][c])
			}
		}
	}
	y, _ := kgenrt.New(kgenrt.F32, len(rows), 4)
	if err := kernels.DequantizeInt8Rows.Reference(q, scale, y); err != nil {
		t.Fatal(err)
	}
	for _, r := range []int{0, 1, 5} { // finite rows: back within half a step
		for c := range 4 {
			if d := math.Abs(float64(y.Float32At(r*4+c) - rows[r][c])); d > float64(scale.Float32At(r))/2*1.0001 {
				t.Errorf("row %d col %d: dequantized %g from %g", r, c, y.Float32At(r*4+c), rows[r][c])
			}
		}
	}
}

// TestRopeEdges: odd head_dim is a launcher error, an output in place over
// the rotated input is refused, and the two layouts rotate the pairs their
// docs name (checked against a rotation written here, in float64).
func TestRopeEdges(t *testing.T) {
	x, _ := kgenrt.FromFloat32(kgenrt.F32, []float32{1, 2, 3, 4, 5, 6}, 1, 6)
	pos, _ := kgenrt.FromBytes(kgenrt.I32, []byte{3, 0, 0, 0})
	y, _ := kgenrt.New(kgenrt.F32, 1, 6)
	if err := kernels.Rope.Reference(x, pos, y, 10000); err != nil {
		t.Fatal(err)
	}
	if err := kernels.Rope.Reference(x, pos, x, 10000); err == nil || !strings.Contains(err.Error(), "paired") {
		t.Errorf("in place over the rotated input: %v", err)
	}
	odd, _ := kgenrt.New(kgenrt.F32, 1, 5)
	oddY, _ := kgenrt.New(kgenrt.F32, 1, 5)
	var te *kgenrt.TensorError
	if err := kernels.RopeInterleaved.Reference(odd, pos, oddY, 10000); !errors.As(err, &te) || !strings.Contains(err.Error(), "even") {
		t.Errorf("odd head_dim: %v", err)
	}
	yi, _ := kgenrt.New(kgenrt.F32, 1, 6)
	if err := kernels.RopeInterleaved.Reference(x, pos, yi, 10000); err != nil {
		t.Fatal(err)
	}
	in := []float64{1, 2, 3, 4, 5, 6}
	for k := range 3 {
		a := 3 * math.Pow(10000, -2*float64(k)/6)
		c, s := math.Cos(a), math.Sin(a)
		// split halves: (k, k+3)
		checkRot(t, "rope", y, k, k+3, in[k]*c-in[k+3]*s, in[k+3]*c+in[k]*s)
		// interleaved: (2k, 2k+1)
		checkRot(t, "rope_interleaved", yi, 2*k, 2*k+1, in[2*k]*c-in[2*k+1]*s, in[2*k+1]*c+in[2*k]*s)
	}
}

func checkRot(t *testing.T, name string, y *kgenrt.Tensor, i, j int, wi, wj float64) {
	t.Helper()
	for _, c := range []struct {
		at   int
		want float64
	}{{i, wi}, {j, wj}} {
		if got := float64(y.Float32At(c.at)); math.Abs(got-c.want) > 1e-5*(1+math.Abs(c.want)) {
			t.Errorf("%s y[%d] = %g, want %g", name, c.at, got, c.want)
		}
	}
}
