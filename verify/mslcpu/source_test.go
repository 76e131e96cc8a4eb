package mslcpu

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestParseProgram(t *testing.T) {
	p, err := parseProgram([]byte(clampmulSource), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := bytes.Count(p.text, []byte("\n")), strings.Count(clampmulSource, "\n"); got != want {
		t.Errorf("pre-pass changed the line count: %d, want %d", got, want)
	}
	if bytes.Contains(p.text, []byte("[[host_name")) {
		t.Errorf("host_name lines survived the pre-pass:\n%s", p.text)
	}
	var hosts []string
	for _, in := range p.instances {
		hosts = append(hosts, in.host+"="+in.expr)
	}
	if got, want := strings.Join(hosts, " "), "clampmul_f32=clampmul<float> clampmul_f16=clampmul<half> clampmul_bf16=clampmul<bfloat>"; got != want {
		t.Errorf("instances %q, want %q", got, want)
	}
	k := p.kernels["clampmul"]
	if k == nil || !k.template || len(k.params) != 5 {
		t.Fatalf("kernel clampmul parsed as %+v", k)
	}
	wantParams := []param{
		{name: "x", kind: paramBuffer, index: 0, attr: "buffer", space: "device"},
		{name: "w", kind: paramBuffer, index: 1, attr: "buffer", space: "device"},
		{name: "y", kind: paramBuffer, index: 2, attr: "buffer", space: "device"},
		{name: "args", kind: paramBuffer, index: 3, attr: "buffer", space: "constant"},
		{name: "gid", kind: paramPosition, attr: "thread_position_in_grid"},
	}
	for i, w := range wantParams {
		if k.params[i] != w {
			t.Errorf("param %d = %+v, want %+v", i, k.params[i], w)
		}
	}
	if p.sync {
		t.Error("clampmul marked as synchronising")
	}
	if !bytes.Contains(p.text, []byte("::kgen::make<::metal::vec<T, 4>>(r)")) {
		t.Errorf("vec<T, 4>(r) not rewritten:\n%s", p.text)
	}
}

func TestPrepassRewrites(t *testing.T) {
	src := `// kernel void commented_out(device float* x [[buffer(0)]]) {}
/* template [[host_name("nope")]] */
kernel void k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    threadgroup float buf[32];
    threadgroup float* p = buf;
    threadgroup const float4 &r = *reinterpret_cast<threadgroup float4*>(buf);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    x[i] = p[i] + r.x + metal::vec<float, 2>(1.0f).x;
}
`
	p, err := parseProgram([]byte(src), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	text := string(p.text)
	for _, want := range []string{
		// storage of its own between guard zones (tgvars.go)
		`    using kgen_tg_buf = float [32]; static_assert(sizeof(kgen_tg_buf) <= KGEN_TG_LIMIT, `,
		`static auto& buf = ::kgen_rt::tg_var<kgen_tg_buf>("buf", "kernel.metal:4");`,
		"    KGEN_TG_PTR float* p = buf;",
		"    KGEN_TG_PTR const float4 &r = *reinterpret_cast<KGEN_TG_PTR float4*>(buf);",
		"    threadgroup_barrier(",
		"::kgen::make<::metal::vec<float, 2>>(1.0f)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("rewritten text lacks %q:\n%s", want, text)
		}
	}
	if len(p.instances) != 1 || p.instances[0].host != "k" || !p.sync {
		t.Errorf("instances %+v sync %v; want the plain kernel k, synchronising", p.instances, p.sync)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ src, want string }{
		{"template [[host_name(a)]] [[kernel]] void f<float>(device float*);\n", "unsupported host_name form"},
		{"template [[host_name(\"a\")]] [[kernel]] decltype(f<float>) g<float>;\n", "does not name"},
		{"template [[host_name(\"a\")]] [[kernel]] decltype(f<float>) f<float>;\n", "no kernel f is defined"},
		{"kernel void k(device float* x [[buffer(0)]], texture2d<float> t [[texture(0)]]) {}\n", "[[texture(0)]] is not supported"},
		{"kernel void k(device float* x, float y) {}\n", "kernel.metal:1: kernel k: parameter \"float y\" has no [[attribute]]"},
		{"\nkernel void k(device float* x [[buffer(31)]]) {}\n", "kernel.metal:2: kernel k: parameter x: bad index \"31\""},
	}
	for _, c := range cases {
		_, err := parseProgram([]byte(c.src), nil, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error mentioning %q", c.src, err, c.want)
		}
	}
}

func TestDriverNamesEveryEntry(t *testing.T) {
	p, err := parseProgram([]byte(clampmulSource), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tu := translationUnit(p)
	for _, want := range []string{
		`#line 1 "kernel.metal"`,
		`{"clampmul_bf16", kgen_lane_2, kgen_reqs_2, 4}`,
		"kgen_rt::pos_arg<kgen_rt::arg_t<decltype(kgen_host_0), 4>>(l.tid_grid)",
		"kgen_rt::min_bytes<kgen_rt::arg_t<decltype(kgen_host_1), 3>>()",
		"extern const int kgen_nentries = 3;",
		"extern const int kgen_sync = 0;",
	} {
		if !strings.Contains(tu, want) {
			t.Errorf("translation unit lacks %q", want)
		}
	}
}

// TestHostNameForms: every instantiation form real code uses after macro
// expansion, several on one line, host names from adjacent literals.
func TestHostNameForms(t *testing.T) {
	src := `template <typename T> [[kernel]] void f(device T* x, uint i [[thread_position_in_grid]]) {}
typedef decltype(f<float>) f_t;
template [[host_name("v_" "f" "32")]] [[kernel]] decltype(f<float>) f<float>; template [[host_name("b")]] kernel f_t f<float>;
template [[host_name("c")]] [[kernel]] void f<half>(
    device half* x, uint i [[thread_position_in_grid]]);
`
	p, err := parseProgram([]byte(src), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for _, in := range p.instances {
		hosts = append(hosts, fmt.Sprintf("%s=%s@%d", in.host, in.expr, in.line))
	}
	if got, want := strings.Join(hosts, " "), "v_f32=f<float>@3 b=f<float>@3 c=f<half>@4"; got != want {
		t.Errorf("instances %q, want %q", got, want)
	}
	if got, want := bytes.Count(p.text, []byte("\n")), strings.Count(src, "\n"); got != want {
		t.Errorf("pre-pass changed the line count: %d, want %d:\n%s", got, want, p.text)
	}
}

// TestImplicitIndices: device/constant pointers and references without
// [[buffer(i)]] take the lowest unused indices in declaration order, and
// threadgroup pointers [[threadgroup(i)]] indices likewise.
func TestImplicitIndices(t *testing.T) {
	src := `kernel void k(device float* a, constant uint& n [[buffer(0)]], device const float* b,
    threadgroup float* s [[threadgroup(1)]], threadgroup float* r, uint i [[thread_position_in_grid]]) {}
`
	p, err := parseProgram([]byte(src), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, prm := range p.kernels["k"].params {
		got = append(got, fmt.Sprintf("%s:%d:%d", prm.name, prm.kind, prm.index))
	}
	if want := "a:0:1 n:0:0 b:0:2 s:2:1 r:2:0 i:1:0"; strings.Join(got, " ") != want {
		t.Errorf("params %s, want %s", strings.Join(got, " "), want)
	}
	if !strings.Contains(string(p.text), "[[kgen_threadgroup(1)]]") {
		t.Errorf("[[threadgroup(1)]] not protected from the threadgroup macro:\n%s", p.text)
	}
}

// TestFunctionConstants: values by name and by index; a constant without a
// value is undefined; a value for no constant is an error.
func TestFunctionConstants(t *testing.T) {
	src := "constant bool has_w [[function_constant(20)]];\nconstant int n [[function_constant(01)]];\nconstant float s [[function_constant(2)]];\n"
	p, err := parseProgram([]byte(src), map[string]string{"has_w": "true", "1": "7"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"constexpr bool kgen_fc_defined_has_w = true; constexpr bool has_w = bool(true);",
		"constexpr bool kgen_fc_defined_n = true; constexpr int n = int(7);",
		"constexpr bool kgen_fc_defined_s = false; constexpr float s = float{};",
	} {
		if !strings.Contains(string(p.text), want) {
			t.Errorf("text lacks %q:\n%s", want, p.text)
		}
	}
	if _, err := parseProgram([]byte(src), map[string]string{"hasw": "1"}, nil); err == nil || !strings.Contains(err.Error(), "no [[function_constant]] named or numbered hasw") {
		t.Errorf("unknown constant: got %v", err)
	}
}

// TestTemplateAfterLineMarker: a header's first kernel template follows the
// preprocessor's line marker (MLX's unary.h); it is a template, not a kernel
// of its own name (which would take the address of an overload set).
func TestTemplateAfterLineMarker(t *testing.T) {
	src := `# 1 "unary.h" 1
template <typename T, int N = 4>
[[kernel]] void unary_v(device T* x, uint i [[thread_position_in_grid]]) {}
template [[host_name("v_f32")]] [[kernel]] decltype(unary_v<float>) unary_v<float>;
`
	p, err := parseProgram([]byte(src), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for _, in := range p.instances {
		hosts = append(hosts, in.host+"="+in.expr)
	}
	if got, want := strings.Join(hosts, " "), "v_f32=unary_v<float>"; got != want {
		t.Errorf("instances %q, want %q", got, want)
	}
}

// TestOverloadScopesFarApart: thread-qualified members of two structs whose
// bodies start where offsets were once keyed as runes (55296..57343 are
// surrogates, all one replacement character) are in different scopes:
// neither gets a false requires-clause.
func TestOverloadScopesFarApart(t *testing.T) {
	src := "// " + strings.Repeat("x", 55300) + `
struct A { template <typename T> bool operator()(T x) thread { return x > 0; } };
struct B { template <typename T> bool operator()(T x) thread { return x < 0; } };
`
	out, err := prepass([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "requires") {
		t.Errorf("members of different structs were taken for address-space overloads:\n%s", out[55300:])
	}
}
