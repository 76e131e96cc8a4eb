package ir_test

import (
	"fmt"
	"strings"
	"testing"
)

// manyInputs is an elementwise spec with n inputs summed into one output:
// n + 2 buffers (the inputs, the output, the args struct).
func manyInputs(n int, ports string) string {
	var names, sum []string
	for i := range n {
		names = append(names, fmt.Sprintf("x%d", i))
		sum = append(sum, fmt.Sprintf("x%d", i))
	}
	return fmt.Sprintf("kernel: wide\ndtypes: [f32]\ninputs: [%s]\noutputs:\n  - y: %s\n%s",
		strings.Join(names, ", "), strings.Join(sum, " + "), ports)
}

// TestBufferLimit: Metal binds 31 buffers per kernel. A kernel with 32 is
// an error at the spec's kernel name, naming the count and the limit; 31
// builds; 32 builds when the Metal port is off (CUDA allows far more).
func TestBufferLimit(t *testing.T) {
	metalOff := "ports:\n  metal: null\n  cuda: generated\n"
	cases := []struct {
		name    string
		inputs  int
		ports   string
		wantErr string
	}{
		{"31 buffers", 29, "", ""},
		{"32 buffers", 30, "", "k.yaml:1:9: kernel wide binds 32 buffers (tensors and the args struct); metal allows 31 per kernel"},
		{"40 buffers", 38, "", "binds 40 buffers"},
		{"32 buffers without a Metal port", 30, metalOff, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, diags := build(t, manyInputs(c.inputs, c.ports))
			if c.wantErr == "" {
				if k == nil {
					t.Fatalf("does not build: %v", diags)
				}
				if got := len(k.Bindings); got != c.inputs+2 {
					t.Errorf("%d bindings, want %d", got, c.inputs+2)
				}
				return
			}
			if k != nil || len(diags) != 1 {
				t.Fatalf("got kernel %v and diagnostics %v, want one error", k != nil, diags)
			}
			if got := diags[0].String(); !strings.Contains(got, c.wantErr) {
				t.Errorf("error %q, want it to contain %q", got, c.wantErr)
			}
		})
	}
}
