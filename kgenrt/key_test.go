package kgenrt_test

import (
	"testing"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/spec"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgenrt"
)

// An external test package: ir imports kgenrt (quantized formats), so
// kgenrt's own tests cannot import ir.
func TestKeyOfMatchesTheGenerator(t *testing.T) {
	for _, c := range []struct{ src, host, math string }{
		{"kernel void f() {}", "f_f32", "precise"}, {"", "", ""}, {"x\x00y", "a_bf16", "fast"},
	} {
		if got, want := kgenrt.KeyOf(c.src, c.host, c.math), ir.Key([]byte(c.src), c.host, c.math); got != want {
			t.Errorf("KeyOf(%q, %q, %q) = %s, ir.Key = %s", c.src, c.host, c.math, got, want)
		}
	}
}

// The runtime's enums mirror the generator's; generated code relies on the
// two agreeing name for name and in order.
func TestEnumsMirrorTheGenerator(t *testing.T) {
	for d := dtype.Invalid; d <= dtype.U8; d++ {
		r := kgenrt.DType(d)
		want := d.String()
		if d == dtype.Invalid {
			want = "T"
		}
		if r.String() != want || r.Size() != d.Size() || r.IsFloat() != d.IsFloat() || r.IsInt() != d.IsInt() {
			t.Errorf("kgenrt %d = %s/%d, dtype %s/%d", d, r, r.Size(), d, d.Size())
		}
	}
	if int(kgenrt.NumBackends) != int(spec.NumBackends) {
		t.Fatalf("kgenrt.NumBackends = %d, spec.NumBackends = %d", kgenrt.NumBackends, spec.NumBackends)
	}
	for b := spec.Backend(0); b < spec.NumBackends; b++ {
		if kgenrt.Backend(b).String() != b.String() {
			t.Errorf("backend %d: kgenrt %s, spec %s", b, kgenrt.Backend(b), b)
		}
	}
}

// The column schedule's constants are the generator's.
func TestColScheduleMirrorsTheGenerator(t *testing.T) {
	if kgenrt.ColChunk != ir.ColChunk || kgenrt.ColWays != ir.ColWays || kgenrt.TotalWays != ir.TotalWays {
		t.Fatalf("kgenrt ColChunk, ColWays = %d, %d; ir has %d, %d", kgenrt.ColChunk, kgenrt.ColWays, ir.ColChunk, ir.ColWays)
	}
}
