package spec

import (
	"strings"
	"testing"
)

// Every reserved word must be one a user could write, or reserving it
// would be dead weight hiding a typo in the lists.
func TestReservedWordsAreNames(t *testing.T) {
	for _, m := range []map[string]string{cReserved, reservedKernel} {
		for w := range m {
			if !identRE.MatchString(w) || strings.HasPrefix(w, "kgen") || len(w) > MaxNameLen {
				t.Errorf("reserved word %q can never be a kernel or value name", w)
			}
		}
	}
}

func TestCheckNameCFamily(t *testing.T) {
	for _, tt := range []struct {
		name          string
		value, kernel bool // accepted as a value name, as the kernel name
	}{
		{"expf", false, false}, {"tanhf", false, false}, {"fmaxf", false, false}, {"erfcf", false, false},
		{"uint4", false, false}, {"float4", false, false}, {"half2", false, false}, {"bfloat3", false, false},
		{"ulonglong2", false, false}, {"packed_half4", false, false}, {"float4x4", false, false},
		{"make_float4", false, false}, {"nv_bfloat16", false, false}, {"simd_sum", false, false},
		{"threadgroup_barrier", false, false}, {"rows_per_group", false, false}, {"int32_t", false, false},
		// Metal's templates: harmless as locals, ambiguous as the kernel.
		{"tanh", true, false}, {"mix", true, false}, {"length", true, false}, {"texture2d", true, false},
		{"softmax", true, true}, {"gelu", true, true}, {"i", true, true}, {"float5", true, true},
	} {
		if got := CheckName(tt.name) == ""; got != tt.value {
			t.Errorf("CheckName(%q) accepts: %v, want %v (%q)", tt.name, got, tt.value, CheckName(tt.name))
		}
		if got := CheckKernelName(tt.name) == ""; got != tt.kernel {
			t.Errorf("CheckKernelName(%q) accepts: %v, want %v", tt.name, got, tt.kernel)
		}
	}
}

// The keywords keep their message (tests/ and users' CI match it).
func TestCheckNameKeywordMessage(t *testing.T) {
	if got := CheckName("float"); got != whyKeyword {
		t.Errorf("CheckName(float) = %q", got)
	}
}
