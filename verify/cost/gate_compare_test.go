package cost

import (
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// TestCompare checks the gate's rule on made-up counts: growth within the
// margin passes, beyond it fails with both numbers, a new or vanished
// kernel fails, and a fall is reported as an improvement.
func TestCompare(t *testing.T) {
	base := &Report{HostName: "k_f32", Shape: "n=4096", Cost: mslcpu.Cost{Barriers: 100}}
	base.Cost.Device.Loads[4] = 1000
	rec := NewRecord([]*Report{base})

	within := *base
	within.Cost.Barriers = 102 // +2%: at the margin
	if reg, _ := Compare(rec, []*Report{&within}); len(reg) != 0 {
		t.Errorf("growth within the margin failed: %v", reg)
	}
	over := *base
	over.Cost.Device.Loads[4] = 1021 // +2.1%
	reg, _ := Compare(rec, []*Report{&over})
	if len(reg) != 2 || !strings.Contains(reg[0]+reg[1], "device_read_bytes rose from 16000 to 16336") ||
		!strings.Contains(reg[0]+reg[1], "device_loads_16B rose from 1000 to 1021 (+2.1%)") {
		t.Errorf("growth over the margin: %q", reg)
	}
	zero := *base
	zero.Cost.Simd[mslcpu.SimdReduce].Ops = 1 // not recorded: zero
	if reg, _ := Compare(rec, []*Report{&zero}); len(reg) != 1 || !strings.Contains(reg[0], "simd_reduce rose from 0 to 1 (from zero)") {
		t.Errorf("growth from an unrecorded zero: %q", reg)
	}
	fell := *base
	fell.Cost.Barriers = 50
	if reg, imp := Compare(rec, []*Report{&fell}); len(reg) != 0 || len(imp) != 1 || !strings.Contains(imp[0], "barriers fell from 100 to 50") {
		t.Errorf("a fall: regressions %q, improvements %q", reg, imp)
	}
	other := *base
	other.HostName = "k_f16"
	reg, _ = Compare(rec, []*Report{&other})
	if len(reg) != 2 || !strings.Contains(reg[0], "k_f16: not in the record") || !strings.Contains(reg[1], "k_f32: recorded but not measured") {
		t.Errorf("new and vanished kernels: %q", reg)
	}
}
