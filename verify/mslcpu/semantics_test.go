package mslcpu

import (
	"encoding/binary"
	"math"
	"os"
	"strings"
	"testing"
)

// The four choices where the harness's C++ may differ from Apple's
// compiler (docs/fidelity.md): each test asserts the harness's documented
// behaviour on testdata/semantics.metal.

func runSemantics(t *testing.T, host string, bufs [][]byte, grid uint32) [][]byte {
	t.Helper()
	needCompiler(t)
	src, err := os.ReadFile("testdata/semantics.metal")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(testContext(t), Launch{Source: src, HostName: host, Buffers: bufs,
		Grid: [3]uint32{grid, 1, 1}, Threadgroup: [3]uint32{32, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLiteralIsDouble: `x * 1.1` is float(double(x) * 1.1), rounded once;
// Apple's float(x * float(1.1)) differs on some of these lanes, and the
// strict mode (kgen verify) rejects the implicit double promotion.
func TestLiteralIsDouble(t *testing.T) {
	x := realInputs(-4)[:64]
	out := runSemantics(t, "literal_double", [][]byte{f32Bytes(x), make([]byte, 4*len(x))}, uint32(len(x)))
	differ := 0
	for i, g := range bytesF32(out[1]) {
		if want := float32(float64(x[i]) * 1.1); g != want {
			t.Errorf("lane %d: %v, want float(double(%v)*1.1) = %v", i, g, x[i], want)
		}
		if g != x[i]*float32(1.1) {
			differ++
		}
	}
	if differ == 0 {
		t.Error("no lane tells double from float evaluation: the inputs do not test the choice")
	}
	t.Logf("%d of %d lanes differ from Metal's float evaluation", differ, len(x))
	src, _ := os.ReadFile("testdata/semantics.metal")
	err := CheckSyntax(testContext(t), src)
	if err == nil || !strings.Contains(err.Error(), "semantics.metal:11:") && !strings.Contains(err.Error(), "kernel.metal:11:") {
		t.Errorf("strict mode: want an error at line 11 (implicit double promotion), got %v", err)
	}
}

// TestNarrowRoundsEachOperation: half and bfloat round after every
// operation ((1 + 2048) - 2048 = 0 in half, (1 + 256) - 256 = 0 in bfloat;
// 1 in float); e·e·e in half is two roundings
// (for the first e in (1, 2) where that differs from one).
func TestNarrowRoundsEachOperation(t *testing.T) {
	r := func(f float32) float32 { return F16ToF32(F32ToF16(f)) }
	e := float32(1)
	for h := uint16(0x3c01); r(r(e*e)*e) == r(e*e*e); h++ { // the first half in (1, 2) whose cube tells
		e = F16ToF32(h)
	}
	out := runSemantics(t, "narrow_rounding", [][]byte{f32Bytes([]float32{1, 2048, 256, e}), make([]byte, 16)}, 1)
	want := []float32{0, 0, 1, r(r(e*e) * e)}
	for i, g := range bytesF32(out[1]) {
		if g != want[i] {
			t.Errorf("out[%d] = %v, want %v", i, g, want[i])
		}
	}
}

// TestFastIsPrecise: fast::tanh, tanh and fast::exp are bit for bit the
// precise functions, and isnan(NaN) is true (no fast-math folding).
func TestFastIsPrecise(t *testing.T) {
	x := append(realInputs(-4)[:31], float32(math.NaN()))
	for i := 3; i < 31; i += 3 {
		x[i] *= 20 // large arguments, where Apple's fast tanh and exp differ
	}
	out := runSemantics(t, "fast_precise", [][]byte{f32Bytes(x), make([]byte, 4*len(x))}, uint32(len(x)))
	for i := range x {
		want := uint32(7)
		if i == len(x)-1 {
			want = 15
		}
		if g := binary.LittleEndian.Uint32(out[1][4*i:]); g != want {
			t.Errorf("lane %d (x=%v): flags %04b, want %04b (1 fast::tanh, 2 tanh, 4 fast::exp equal precise; 8 isnan)", i, x[i], g, want)
		}
	}
}

// TestIntegerPromotion: C++'s promotions and conversions, which Metal
// shares: uchar + uchar is int, short vs uint compares unsigned, char is
// signed, half + int is half, division truncates, unsigned wraps.
func TestIntegerPromotion(t *testing.T) {
	out := runSemantics(t, "promotion", [][]byte{make([]byte, 40)}, 1)
	want := []int32{300, 44, 0, -56, 4, 2, -3, -1, 0, 0}
	for i := range want {
		if g := int32(binary.LittleEndian.Uint32(out[0][4*i:])); g != want[i] {
			t.Errorf("out[%d] = %d, want %d", i, g, want[i])
		}
	}
}
