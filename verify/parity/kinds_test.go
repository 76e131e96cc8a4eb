package parity

import (
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestEveryKindHasAShapeGen fails when a kind is added to ir without a
// parity handler: Check would refuse every kernel of that kind.
func TestEveryKindHasAShapeGen(t *testing.T) {
	for kd := ir.Kind(0); kd < ir.NumKinds; kd++ {
		g, ok := shapeGens[kd]
		if !ok {
			t.Errorf("parity has no shapeGen for %s kernels (add one to shapeGens)", kd)
			continue
		}
		if g.shapes == nil || g.inputs == nil || g.f32Param == nil || g.reference == nil {
			t.Errorf("the shapeGen for %s kernels lacks a function: %+v", kd, g)
		}
	}
	if len(shapeGens) != int(ir.NumKinds) {
		t.Errorf("shapeGens has %d entries for %d kinds", len(shapeGens), ir.NumKinds)
	}
}
