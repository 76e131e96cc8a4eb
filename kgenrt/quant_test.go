package kgenrt

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// The codes are read from hand-written bytes in each format's documented
// order, so a reader that swaps nibbles or words fails here and not only
// against the outside referees (e2e/mlx_quant_test.go).
func TestQuantCodesFollowTheFormats(t *testing.T) {
	words := make([]byte, 8)
	binary.LittleEndian.PutUint32(words, 0x76543210)
	binary.LittleEndian.PutUint32(words[4:], 0xfedcba98)
	four := Quant{Format: Affine, Bits: 4, Group: 32}
	for j := range 16 {
		if got := four.Code(words, j); got != j {
			t.Errorf("affine 4-bit code %d = %d, want %d (LSB first)", j, got, j)
		}
	}
	// 3-bit codes 0..7 repeating: value 10 straddles the first two bytes' boundary (bits 30..32 of word 0).
	three := Quant{Format: Affine, Bits: 3, Group: 32}
	row := make([]byte, 12)
	for j := range 32 {
		putCode(row, j, 3, uint(j%8))
	}
	for j := range 32 {
		if got := three.Code(row, j); got != j%8 {
			t.Errorf("affine 3-bit code %d = %d, want %d", j, got, j%8)
		}
	}
	q4 := GGMLQuant(Q4_0)
	block := make([]byte, 18)
	for i := range 16 {
		block[2+i] = byte(i) | byte(15-i)<<4
	}
	for j := range 32 {
		want := j
		if j >= 16 {
			want = 15 - (j - 16)
		}
		if got := q4.Code(block, j); got != want {
			t.Errorf("q4_0 code %d = %d, want %d (low nibbles first)", j, got, want)
		}
	}
	q8 := GGMLQuant(Q8_0)
	b8 := make([]byte, 34)
	b8[2], b8[33] = 0x80, 0x7f
	if q8.Code(b8, 0) != -128 || q8.Code(b8, 31) != 127 {
		t.Errorf("q8_0 codes %d, %d, want -128, 127 (int8)", q8.Code(b8, 0), q8.Code(b8, 31))
	}
}

// Quantize then Dequantize64 returns every weight within its format's
// error: for affine (f32 tables) a whole step, since mx.quantize's rule
// moves the grid so that 0 is a code, and the top of the group may then
// lie past the last code (up to 16 steps above the bias at 4 bits,
// clipped at 15); for Q8_0 half of d plus the f16
// rounding of d over 127 codes (ggml divides by the unrounded d), within
// 0.57 d; for Q4_0 a whole d, since d = m / −8 maps the largest magnitude to
// code 0 and its opposite clips at code 15 (7 d, not 8 d).
func TestQuantizeRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const n, k = 5, 128
	w := make([]float32, n*k)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	for _, q := range []Quant{{Affine, 4, 64}, {Affine, 3, 32}, {Affine, 8, 128}, {Affine, 6, 64}, GGMLQuant(Q4_0), GGMLQuant(Q8_0)} {
		packed, scales, biases, err := Quantize(q, w, n, k, F32)
		if err != nil {
			t.Fatal(err)
		}
		if sh := packed.Shape(); sh[0] != n || sh[1] != q.Width(k) {
			t.Errorf("%s: packed shape %v, want [%d %d]", q, sh, n, q.Width(k))
		}
		if got, ok := q.KOf(q.Width(k)); !ok || got != k {
			t.Errorf("%s: KOf(Width(%d)) = %d, %v", q, k, got, ok)
		}
		var s, b []float64
		if q.HasTables() {
			s, b = scales.Float64s(), biases.Float64s()
		}
		back := q.Dequantize64(packed.Bytes(), s, b, n, k)
		for i, v := range back {
			step := 0.0
			if q.HasTables() {
				step = s[i/k*(k/q.Group)+i%k/q.Group]
			} else {
				step = float64(F16Value(binary.LittleEndian.Uint16(packed.Bytes()[i/k*q.Width(k)+i%k/32*q.BlockBytes():])))
			}
			limit := map[QuantFormat]float64{Affine: 1 + 1e-6, Q8_0: 0.57, Q4_0: 1.01}[q.Format] * math.Abs(step)
			if e := math.Abs(v - float64(w[i])); e > limit+1e-6 {
				t.Errorf("%s: weight %d = %g back as %g (step %g)", q, i, w[i], v, step)
				break
			}
		}
	}
}

func TestQuantRefusesBadShapes(t *testing.T) {
	if _, _, _, err := Quantize(Quant{Affine, 4, 64}, make([]float32, 96), 1, 96, F16); err == nil {
		t.Error("k = 96 is not a multiple of group 64, yet Quantize took it")
	}
	if _, _, _, err := Quantize(Quant{Affine, 7, 64}, make([]float32, 64), 1, 64, F16); err == nil {
		t.Error("7-bit affine is no MLX format, yet Quantize took it")
	}
	if _, ok := GGMLQuant(Q4_0).KOf(17); ok {
		t.Error("17 bytes is no whole number of Q4_0 blocks")
	}
}
