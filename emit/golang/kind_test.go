package golang

import (
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestEveryKindHasAHandler fails when a kind is added to the IR without a
// Go emitter handler: the one place a new kind touches in this package.
func TestEveryKindHasAHandler(t *testing.T) {
	for kd := ir.Kind(0); kd < ir.NumKinds; kd++ {
		h, ok := kinds[kd]
		if !ok {
			t.Errorf("kind %s has no handler in emit/golang's kinds map", kd)
			continue
		}
		if h.loops == nil || h.prelude == nil || h.perThread == nil || h.dispatchDoc == nil {
			t.Errorf("kind %s's handler lacks a function", kd)
		}
	}
}

// TestStageNamesCannotClash proves the naming scheme of names: every
// unexported top-level name is a kernel's lower-camel name plus one of a
// fixed set of suffixes. Two kernels' names lowerA+sufA = lowerB+sufB with
// lowerB = lowerA+X (X starting at an underscore boundary: upper case or a
// digit) need sufA = X+sufB, so sufB a proper suffix of sufA. No suffix is
// one, for up to 9 passes and every mode.
func TestStageNamesCannotClash(t *testing.T) {
	suffixes := []string{"Kernel", "Ports", "MSL", "Call", "CUDA", "Phases"}
	stages := []string{"eval", "write"}
	for p := 0; p <= 9; p++ {
		stages = append(stages, "pass"+string(rune('0'+p)), "row"+string(rune('0'+p)))
	}
	for _, st := range stages {
		for _, mode := range []string{"F32", "F16", "BF16", "F64"} {
			suffixes = append(suffixes, GoName(st)+mode)
		}
	}
	for _, a := range suffixes {
		for _, b := range suffixes {
			if a != b && strings.HasSuffix(a, b) {
				t.Errorf("suffix %s ends with suffix %s: kernels could clash", a, b)
			}
		}
	}
	n := &names{lower: "norm"}
	if got := n.stage(ir.Stage{Suffix: "pass1"}, 0); !strings.HasPrefix(got, "normPass1") {
		t.Errorf("stage name %s", got)
	}
}
