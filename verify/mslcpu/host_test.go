package mslcpu

import (
	"strings"
	"testing"
)

// hostKernel wraps a body in a one-buffer kernel after some declarations.
func hostKernel(decls, body string) string {
	return "#include <metal_stdlib>\nusing namespace metal;\n" + decls +
		"\nkernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n" + body + "\n}\n"
}

// TestCheckHostRefusesHostCode: what kgen emu --strict refuses, each with
// where it is when the construct has a place.
func TestCheckHostRefusesHostCode(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	cases := []struct{ name, src, want string }{
		{"a static initializer", hostKernel(`static int side = __builtin_printf("hi\n");`, "out[i] = side;"),
			"kernel.metal:3:12: error: declaration requires a global constructor"},
		{"a global object with a constructor", hostKernel("struct S { int v; S() : v(3) {} };\nS s;", "out[i] = s.v;"),
			"kernel.metal:4:3: error: declaration requires a global constructor"},
		{`extern "C"`, hostKernel(`extern "C" int system(const char*);`, `out[i] = system("true");`),
			`kernel.metal:3: extern "…": a linkage specification`},
		{"asm", hostKernel("", `uint x = i; __asm__ volatile("" : "+r"(x)); out[i] = x;`),
			"kernel.metal:5: __asm__: inline assembly is host code"},
		{"an undefined function", hostKernel("int system(const char*);", `out[i] = system("true");`),
			"kernel.metal:3: the kernel calls system, which is neither defined in the file nor part of Metal's library (host code; undefined: _Z6systemPKc)"},
		{"a libc builtin", hostKernel("", `out[i] = __builtin_printf("hi\n");`),
			"kernel.metal:5: the kernel calls printf"},
		{"new", hostKernel("", "out[i] = float(ulong(new float(1)));"), "undefined: _Znwm"},
		{"a constructor attribute", hostKernel("__attribute__((constructor)) static void early() {}", "out[i] = 1;"),
			"kernel.metal:3: __attribute__((constructor)) is host code"},
		{"a section attribute", hostKernel(`[[gnu::section(".init_array")]] void (*run_me)() = nullptr;`, "out[i] = 1;"),
			"kernel.metal:3: [[section]] is host code"},
	}
	for _, c := range cases {
		l := Launch{Source: []byte(c.src), HostName: "k"}
		err := CheckHost(testContext(t), l)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// TestCheckHostAcceptsKernels: kernels that use Metal's library (math,
// half and bfloat conversions, atomics, barriers, simd functions,
// threadgroup arrays) pass.
func TestCheckHostAcceptsKernels(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	math := hostKernel("", "out[i] = exp(out[i]) + sin(out[i]) + fma(out[i], 2.0f, 1.0f) + pow(out[i], 0.5f) + tanh(out[i]) + float(half(out[i]));")
	for name, src := range map[string]string{"clampmul": clampmulSource, "sandbox": sandboxSource, "math": math} {
		if err := CheckHost(testContext(t), Launch{Source: []byte(src)}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
