package ir_test

import (
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestKindIsTheSchedule: every kind has a spec spelling that builds a
// kernel whose Kind field is its schedule's kind; a new kind without a
// builder, a name or a schedule fails here.
func TestKindIsTheSchedule(t *testing.T) {
	specs := map[ir.Kind]string{
		ir.Elementwise: "kernel: k\ndtypes: [f32]\ninputs: [x]\noutputs:\n  - y: 2 * x\n",
		ir.Rowwise:     "kernel: k\nkind: rowwise\ndtypes: [f32]\ninputs: [x]\noutputs:\n  - y: x - row_max(x)\n",
		ir.KindMatmul:  "kernel: k\nkind: matmul\ndtypes: [f32]\nmatmul: {a: x, b: w}\noutputs:\n  - y: 2 * acc\n",
	}
	for kd := ir.Kind(0); kd < ir.NumKinds; kd++ {
		src, ok := specs[kd]
		if !ok {
			t.Errorf("kind %s: no spec in this test", kd)
			continue
		}
		k := mustBuild(t, src)
		if k.Kind != kd || k.Schedule == nil || k.Schedule.Kind() != kd {
			t.Errorf("kind %s: built Kind %s, schedule %T", kd, k.Kind, k.Schedule)
		}
		if strings.HasPrefix(kd.String(), "kind(") {
			t.Errorf("kind %d has no name: %q", kd, kd.String())
		}
		if len(k.Stages()) == 0 {
			t.Errorf("kind %s: no stages", kd)
		}
		for b := ir.Backend(0); b < ir.NumBackends; b++ {
			if l := k.Launch(b); l.Grid[0] == nil || l.Threadgroup[0] != k.Threadgroup {
				t.Errorf("kind %s, %s: launch %+v", kd, b, l)
			}
		}
	}
}
