package mslcpu

import (
	"bytes"
	"strings"
	"testing"
)

// TestThreadgroupVarsRewrite: kernel-scope threadgroup declarations become
// storage of their own (tgvars.go); other uses of the keyword, and shapes
// the rewrite does not read, are left to the shim's macros.
func TestThreadgroupVarsRewrite(t *testing.T) {
	src := `#include <metal_stdlib>
template <typename T, int N>
kernel void k(device float* o [[buffer(0)]], threadgroup float* q [[threadgroup(0)]], threadgroup T shared[N], uint i [[thread_position_in_grid]]) {
    threadgroup float a[4], b[8][2];
    threadgroup vec<T, 4> c[N * 2];
    threadgroup atomic_uint n;
    threadgroup float* p = a;
    threadgroup float z[2] = {};
    if (i == 0) { threadgroup metal::array<float, 2> w; }
}
struct S { int x; };
namespace ns { threadgroup float top[4]; }
`
	out, err := prepass([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	if bytes.Count(out, []byte("\n")) != strings.Count(src, "\n") {
		t.Errorf("the rewrite moved lines:\n%s", text)
	}
	for _, want := range []string{
		"KGEN_TG_PTR float* q [[kgen_threadgroup(0)]], KGEN_TG_PTR T shared[N]",
		`using kgen_tg_a = float [4]; using kgen_tg_b = float [8][2]; static_assert(sizeof(kgen_tg_a) <= KGEN_TG_LIMIT, "threadgroup variable a is over Metal's 32 KiB of threadgroup memory"); static auto& a = ::kgen_rt::tg_var<kgen_tg_a>("a", "kernel.metal:4");`,
		`static auto& b = ::kgen_rt::tg_var<kgen_tg_b>("b", "kernel.metal:4");`,
		`using kgen_tg_c = vec<T, 4> [N * 2];`,
		`using kgen_tg_n = atomic_uint ;`,
		"KGEN_TG_PTR float* p = a;",
		"threadgroup float z[2] = {};", // an initializer: left alone (Metal forbids it anyway)
		`{ using kgen_tg_w = metal::array<float, 2> ;`,
		"namespace ns { threadgroup float top[4]; }", // not in a function
	} {
		if !strings.Contains(text, want) {
			t.Errorf("rewritten text lacks %q:\n%s", want, text)
		}
	}
}
