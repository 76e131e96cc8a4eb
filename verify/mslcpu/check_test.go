package mslcpu

import (
	"errors"
	"strings"
	"testing"
)

// checkBase is a small valid kernel; each rejection case below changes one
// line of it.
const checkBase = `#include <metal_stdlib>
using namespace metal;
namespace kgen_math = metal::precise;
struct scale_args {
    uint n;
    float s;
};
kernel void scale(
    device const float* x [[buffer(0)]],
    device float* y [[buffer(1)]],
    constant float* c [[buffer(2)]],
    constant scale_args& args [[buffer(3)]],
    uint gid [[thread_position_in_grid]])
{
    if (gid >= args.n) {
        return;
    }
    float v = x[gid] * args.s + c[0];
    y[gid] = v;
}
`

// TestCheckSyntax: the strict pass accepts valid MSL (the kgen-shaped test
// kernel too) and rejects what Apple's compiler would reject.
func TestCheckSyntax(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	cases := []struct {
		name, from, to string
		want           string // substring of the diagnostics; "" = accepted
	}{
		{"valid", "", "", ""},
		{"erf", "float v = x[gid] * args.s + c[0];", "float v = erf(x[gid]);", "poisoned identifier"},
		{"write to constant", "y[gid] = v;", "c[0] = v;", "read-only"},
		{"double", "float v = x[gid] * args.s + c[0];", "double v = x[gid];", "poisoned identifier"},
		{"unsuffixed literal", "float v = x[gid] * args.s + c[0];", "float v = x[gid] * 0.5;", "double"},
		{"device pointer as thread pointer", "y[gid] = v;", "float* p = y; p[gid] = v;", "device float"},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(checkBase, c.from, c.to, 1)
			if c.from != "" && src == checkBase {
				t.Fatalf("edit did not apply")
			}
			err := CheckSyntax(testContext(t), []byte(src))
			checkVerdict(t, err, c.want)
		})
	}
	t.Run("implicit_float_to_bfloat", func(t *testing.T) {
		t.Parallel()
		src := strings.Replace(clampmulSource, "const uint i = gid * 4u;", "const uint i = gid * 4u;\n    y[0] = args.cap;", 1)
		checkVerdict(t, CheckSyntax(testContext(t), []byte(src)), "to '__bf16'")
	})
	valid := map[string]string{
		"kgen_shape": clampmulSource,
		"reduction":  rowsumSource,
		"prelude":    preludeSource(t, "metal::precise"),
		"positions":  positionsSource,
		"features":   featuresSource,
	}
	for name, src := range valid {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checkVerdict(t, CheckSyntax(testContext(t), []byte(src)), "")
		})
	}
}

func checkVerdict(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("valid source rejected: %v", err)
		}
		return
	}
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *CompileError mentioning %q", err, want)
	}
	if !strings.Contains(ce.Diagnostics, want) {
		t.Fatalf("diagnostics do not mention %q:\n%s", want, ce.Diagnostics)
	}
	if !strings.Contains(ce.Diagnostics, kernelFile+":") {
		t.Errorf("diagnostics do not point into %s:\n%s", kernelFile, ce.Diagnostics)
	}
}
