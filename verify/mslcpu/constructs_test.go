package mslcpu

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConstructs runs testdata/constructs.metal: shuffle_and_fill follows
// Apple's documented example (delta 1, modulo 4: data {a,b,c,d} and fill
// {s,t,u,v} give {v,a,b,c} up and {b,c,d,s} down), __metal_exp is exp, the
// thread variant of an address-space overload is the one that runs, and
// 0.1h is half's nearest value to 0.1 (0.0999755859375), 0.5bf exact.
func TestConstructs(t *testing.T) {
	needCompiler(t)
	src, err := os.ReadFile("testdata/constructs.metal")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(testContext(t), Launch{Source: src, HostName: "constructs", Buffers: [][]byte{make([]byte, 4*128)},
		Grid: [3]uint32{32, 1, 1}, Threadgroup: [3]uint32{32, 1, 1}, Order: Shuffled})
	if err != nil {
		t.Fatal(err)
	}
	got := bytesF32(out[0])
	for l := 0; l < 32; l++ {
		base, i := l/4*4, l%4
		up := float32(base + i - 1)
		if i == 0 {
			up = 100 + float32(base+3)
		}
		down := float32(base + i + 1)
		if i == 3 {
			down = 100 + float32(base)
		}
		if got[l] != up || got[32+l] != down {
			t.Errorf("lane %d: fill up %v (want %v), fill down %v (want %v)", l, got[l], up, got[32+l], down)
		}
		if got[64+l] != 0 {
			t.Errorf("lane %d: __metal_exp differs from exp by %v", l, got[64+l])
		}
		if want := float32(1 + 0.0999755859375 + 0.5); got[96+l] != want {
			t.Errorf("lane %d: acc().get() + 0.1h + 0.5bf = %v, want %v", l, got[96+l], want)
		}
	}
}

// TestTraits runs testdata/traits.metal (the constructs candle's
// reduce.metal needs): vec_elements is 4 for float4 and 0 for float, a
// specialised _numeric_limits_impl answers numeric_limits, a class with
// only defaulted constructors is aggregate-initialised, a threadgroup array
// parameter is the group's memory (0+…+31 = 496), fast::min is min, half4
// is a simdgroup type and long is not; a braced list reaches a uint3
// parameter ((3+4)·2), half 1.00390625 converts to bfloat by rounding to
// nearest even (1), int4 converts to float4 by value, and sqrt takes a
// double ((496+4)/2.0) as float, and metal::array<float, 2>{1.5, 2.5}
// indexes and has size 2.
func TestTraits(t *testing.T) {
	needCompiler(t)
	src, err := os.ReadFile("testdata/traits.metal")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(testContext(t), Launch{Source: src, HostName: "traits", Buffers: [][]byte{make([]byte, 4*13)},
		Grid: [3]uint32{32, 1, 1}, Threadgroup: [3]uint32{32, 1, 1}, Order: Shuffled})
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{4, 0, 7, -65504, 496, -3, 1, 1, 14, 1, -2, float32(math.Sqrt(250)), 4.5}
	for i, g := range bytesF32(out[0]) {
		if g != want[i] {
			t.Errorf("out[%d] = %v, want %v", i, g, want[i])
		}
	}
}

// TestFunctionConstantForms runs testdata/fconst.metal: constants given by index
// (1301, computed as FC_BASE + 1) and by name (n_items, an array size), one
// left to its initializer (width = 3, not defined), one never given and
// only read under is_function_constant_defined; C-style and template
// functional casts between vectors convert; scalar-vector mixes, packed
// vectors, MAXHALF and the integer functions; reading the constant that was
// never given stops the kernel with its name and index.
func TestFunctionConstantForms(t *testing.T) {
	needCompiler(t)
	src, err := os.ReadFile("testdata/fconst.metal")
	if err != nil {
		t.Fatal(err)
	}
	fc := map[string]string{"1301": "2", "n_items": "4"}
	out, err := Run(testContext(t), Launch{Source: src, SourceOptions: SourceOptions{FunctionConstants: fc}, HostName: "fconst",
		Buffers: [][]byte{make([]byte, 4*18), {1, 0xfe, 3, 4}}, Grid: [3]uint32{1, 1, 1}, Threadgroup: [3]uint32{1, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	// popcount(0xF0) 4 + clz(ushort 1) 15 + absdiff(-3, 4) 7 + addsat(200, 100) 255.
	want := []float32{2, 4, 3, 3, 1, 0, 1, 0, 2.75, 2, 4.5, 4.75, 3, 3.75, 3, 6, 65504, 4 + 15 + 7 + 255}
	for i, g := range bytesF32(out[0]) {
		if g != want[i] {
			t.Errorf("out[%d] = %v, want %v", i, g, want[i])
		}
	}
	_, err = Run(testContext(t), Launch{Source: src, SourceOptions: SourceOptions{FunctionConstants: fc}, HostName: "reads_bias",
		Buffers: [][]byte{make([]byte, 4)}, Grid: [3]uint32{1, 1, 1}, Threadgroup: [3]uint32{1, 1, 1}})
	if err == nil || !strings.Contains(err.Error(), "function constant has_bias (index 1302), which has no value") {
		t.Errorf("reading an unset constant: %v, want a stop naming has_bias and 1302", err)
	}
	bad := []byte("#include <metal_stdlib>\nusing namespace metal;\n\nconstant int k [[function_constant(3 + n)]];\n" +
		"kernel void f(device int* o [[buffer(0)]]) { o[0] = k; }\n")
	_, err = Run(testContext(t), Launch{Source: bad, HostName: "f", Buffers: [][]byte{make([]byte, 4)}, Grid: [3]uint32{1, 1, 1}, Threadgroup: [3]uint32{1, 1, 1}})
	if err == nil || !strings.Contains(err.Error(), "kernel.metal:4: [[function_constant(3 + n)]] of k: the index must be an integer constant expression") {
		t.Errorf("a non-constant index: %v", err)
	}
}

// TestSecondKernelFromCache: the build of a file holds every kernel of it,
// so running a second kernel with the same options compiles nothing; a
// different function-constant value is a different build.
func TestSecondKernelFromCache(t *testing.T) {
	needCompiler(t)
	cache := t.TempDir()
	t.Setenv("KGEN_MSLCPU_CACHE", cache)
	src := []byte("#include <metal_stdlib>\nusing namespace metal;\nconstant float k [[function_constant(0)]];\n" +
		"kernel void a(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = k; }\n" +
		"kernel void b(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = 2 * k; }\n")
	builds := func() []string { // the binaries, not their .cc files
		m, err := filepath.Glob(filepath.Join(cache, "k-*"))
		if err != nil {
			t.Fatal(err)
		}
		var bins []string
		for _, p := range m {
			if filepath.Ext(p) == "" {
				bins = append(bins, p)
			}
		}
		return bins
	}
	run := func(host, k string) float32 {
		out, err := Run(testContext(t), Launch{Source: src, SourceOptions: SourceOptions{FunctionConstants: map[string]string{"k": k}},
			HostName: host, Buffers: [][]byte{make([]byte, 4)}, Grid: [3]uint32{1, 1, 1}, Threadgroup: [3]uint32{1, 1, 1}})
		if err != nil {
			t.Fatal(err)
		}
		return bytesF32(out[0])[0]
	}
	if got := run("a", "1.5"); got != 1.5 {
		t.Fatalf("a = %v, want 1.5", got)
	}
	first := builds()
	if len(first) != 1 {
		t.Fatalf("builds after the first kernel: %v", first)
	}
	info, _ := os.Stat(first[0])
	if got := run("b", "1.5"); got != 3 {
		t.Fatalf("b = %v, want 3", got)
	}
	if again := builds(); len(again) != 1 || again[0] != first[0] {
		t.Errorf("the second kernel rebuilt: %v, then %v", first, again)
	}
	if now, _ := os.Stat(first[0]); !now.ModTime().Equal(info.ModTime()) {
		t.Errorf("the build was rewritten")
	}
	if got := run("b", "2"); got != 4 || len(builds()) != 2 {
		t.Errorf("k = 2: b = %v and %d builds, want 4 and 2", got, len(builds()))
	}
}
