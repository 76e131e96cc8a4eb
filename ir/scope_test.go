package ir_test

import (
	"testing"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/expr"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/spec"
)

// TestScope: the names a spec declares, as the formula checker sees them,
// with what each is, its type, and which formulas may read it.
func TestScope(t *testing.T) {
	src := `kernel: k
kind: matmul
dtypes: [f32]
matmul: {a: x, b: w, then: c}
params:
  - {name: p, type: i32}
let:
  - e: exp(acc - row_max(acc))
  - big: p > 3
outputs:
  - y: acc2 / row_sum(e)
`
	var diags diag.List
	s := spec.Parse("k.yaml", []byte(src), &diags)
	if s == nil || diags.Len() > 0 {
		t.Fatalf("spec: %v", diags.Err())
	}
	k, syms := ir.Scope(s)
	if k == nil {
		t.Fatal("no kernel")
	}
	got := map[string]ir.Symbol{}
	for _, sym := range syms {
		got[sym.Name] = sym
	}
	for _, c := range []struct {
		name, what string
		typ        expr.Type
		usable     bool
		line, let  int
	}{
		{"x", "matmul operand", expr.Num, false, 4, -1},
		{"acc", "accumulator", expr.Num, true, 4, -1},
		{"acc2", "accumulator", expr.Num, true, 4, -1},
		{"p", "param", expr.Int, true, 6, -1},
		{"e", "let", expr.Num, true, 8, 0},
		{"big", "let", expr.Bool, true, 9, 1},
		{"y", "output", expr.Unknown, false, 11, -1},
		{"row", "index", expr.Int, true, 0, -1},
		{"pi", "built-in constant", expr.Num, true, 0, -1},
	} {
		sym, ok := got[c.name]
		if !ok {
			t.Errorf("%s: not declared", c.name)
			continue
		}
		if sym.What != c.what || sym.Type != c.typ || sym.Usable != c.usable || sym.Pos.Line != c.line || sym.Let != c.let {
			t.Errorf("%s: %+v, want %s %s usable=%v line %d let %d", c.name, sym, c.what, c.typ, c.usable, c.line, c.let)
		}
	}
	// e is visible from the second let and the output, not from itself.
	if e := got["e"]; e.VisibleFrom(0) || !e.VisibleFrom(1) || !e.VisibleFrom(2) {
		t.Errorf("e's visibility: from 0 %v, 1 %v, 2 %v", e.VisibleFrom(0), e.VisibleFrom(1), e.VisibleFrom(2))
	}
	if got["x"].VisibleFrom(2) || got["y"].VisibleFrom(2) {
		t.Error("an operand or an output is never readable")
	}
}
