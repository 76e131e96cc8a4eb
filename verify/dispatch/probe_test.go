package dispatch

import "testing"

// TestNameProbe pins which call names count as backend probes (rule
// backend-gate) and which do not.
func TestNameProbe(t *testing.T) {
	for _, c := range []struct{ name, base, want string }{
		{"Available", "metal", "metal"},
		{"IsAvailable", "cuda", "cuda"},
		{"Ready", "rocmDevice", "rocm"},
		{"Supported", "hip", "rocm"},
		{"metalAvailable", "", "metal"},
		{"hasCUDA", "", "cuda"},
		{"isMetalAvailable", "", "metal"},
		{"ROCmReady", "", "rocm"},
		{"cuda_is_available", "", "cuda"},
		{"Available", "gpu", ""},     // "is there any GPU" is the right question
		{"Available", "ship", ""},    // hip only as a prefix
		{"Available", "kernels", ""}, // no backend named
		{"metalDevice", "", ""},      // not a probe verb
		{"history", "", ""},          // "is" is a prefix, not a substring
		{"MetalPipeline", "x", ""},   // a backend word alone is not a probe
		{"Ready", "pipeline", ""},    // readiness of something else
		{"hasMetalPort", "", ""},     // not one of the verbs
		{"CUDAAvailable", "pkg", "cuda"},
	} {
		if got := nameProbe(c.name, c.base); got != c.want {
			t.Errorf("nameProbe(%q, %q) = %q, want %q", c.name, c.base, got, c.want)
		}
	}
}

// TestRefusalText pins the error texts rule own-refusal reads as refusals.
func TestRefusalText(t *testing.T) {
	for text, want := range map[string]bool{
		"no metal":                          true,
		"gelu: no GPU available":            true,
		"without a CUDA device":             true,
		"no port for %v":                    true,
		"gelu: no metal port":               true,
		"metal not available":               true,
		"backend %v unavailable":            true,
		"rocm is not supported yet":         true,
		"kernel not available on %v":        true,
		"gelu: unsupported dtype %v":        false,
		"gelu: input %s not available":      false,
		"metal: encoding failed: %v":        false,
		"no such tensor":                    false,
		"important: metal buffer too small": false,
	} {
		if got := refusalRE.MatchString(text); got != want {
			t.Errorf("refusal %q: %v, want %v", text, got, want)
		}
	}
}
