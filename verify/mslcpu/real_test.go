package mslcpu

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// realDir is the folder holding other projects' unmodified Metal sources
// (never committed; docs/emu.md says how to fetch them at the pinned
// commits): $KGEN_REAL_MSL/candle/candle-metal-kernels/src/metal_src/...
func realDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KGEN_REAL_MSL")
	if dir == "" {
		t.Skip("KGEN_REAL_MSL is not set: the real-kernel check needs other projects' .metal files (docs/emu.md)")
	}
	needCompiler(t)
	return dir
}

// realInputs are 1000 seeded values in [-4, 4) with a few specials.
func realInputs(lo float64) []float32 {
	v := make([]float32, 1000)
	s := uint32(12345)
	for i := range v {
		s = s*1664525 + 1013904223
		v[i] = float32(lo + (4-lo)*float64(s>>8)/float64(1<<24))
	}
	v[0], v[1], v[2] = 0, 1, -1
	return v
}

// ulps is |got - want| in units of float32's last place at want.
func ulps(got float32, want float64) float64 {
	if math.IsNaN(want) || math.IsNaN(float64(got)) {
		if math.IsNaN(want) == math.IsNaN(float64(got)) {
			return 0
		}
		return math.Inf(1)
	}
	if math.IsInf(want, 0) {
		if float64(got) == want {
			return 0
		}
		return math.Inf(1)
	}
	w := float32(want)
	ulp := float64(math.Nextafter32(float32(math.Abs(float64(w))), float32(math.Inf(1)))) - math.Abs(float64(w))
	return math.Abs(float64(got)-want) / ulp
}

// TestRealCandle runs candle-metal-kernels' unary and binary kernels
// unmodified, f32, lane by lane against float64.
func TestRealCandle(t *testing.T) {
	dir := filepath.Join(realDir(t), "candle", "candle-metal-kernels", "src", "metal_src")
	size := make([]byte, 8)
	binary.LittleEndian.PutUint64(size, 1000)
	unary := []struct {
		host string
		lo   float64
		ref  func(float64) float64
	}{
		{"exp_f32", -4, math.Exp}, {"sqrt_f32", 0, math.Sqrt}, {"tanh_f32", -4, math.Tanh},
		{"sin_f32", -4, math.Sin}, {"log_f32", 0, math.Log}, {"neg_f32", -4, func(x float64) float64 { return -x }},
	}
	for _, u := range unary {
		x := realInputs(u.lo)
		out := runReal(t, dir, "unary.metal", u.host, [][]byte{size, f32Bytes(x), make([]byte, 4000)}, 500)
		report(t, u.host, bytesF32(out[2]), x, nil, func(a, _ float64) float64 { return u.ref(a) }, 4)
	}
	bin := []struct {
		host string
		ref  func(a, b float64) float64
	}{
		{"badd_f32", func(a, b float64) float64 { return a + b }}, {"bmul_f32", func(a, b float64) float64 { return a * b }},
		{"bdiv_f32", func(a, b float64) float64 { return a / b }}, {"bsub_f32", func(a, b float64) float64 { return a - b }},
	}
	for _, b := range bin {
		x, y := realInputs(-4), realInputs(0.5)
		out := runReal(t, dir, "binary.metal", b.host, [][]byte{size, f32Bytes(x), f32Bytes(y), make([]byte, 4000)}, 500)
		report(t, b.host, bytesF32(out[3]), x, y, b.ref, 0.5)
	}
}

func runReal(t *testing.T, dir, file, host string, bufs [][]byte, grid uint32) [][]byte {
	t.Helper()
	path := filepath.Join(dir, file)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(testContext(t), Launch{Source: src, SourceOptions: SourceOptions{Path: path}, HostName: host,
		Buffers: bufs, Grid: [3]uint32{grid, 1, 1}, Threadgroup: [3]uint32{64, 1, 1}})
	if err != nil {
		t.Fatalf("%s: %v", host, err)
	}
	return out
}

// report logs max ulp and failures (lanes beyond limit ulps) and fails on any.
func report(t *testing.T, host string, got, x, y []float32, ref func(a, b float64) float64, limit float64) {
	t.Helper()
	worst, fails := 0.0, 0
	for i := range got {
		b := 0.0
		if y != nil {
			b = float64(y[i])
		}
		u := ulps(got[i], ref(float64(x[i]), b))
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
