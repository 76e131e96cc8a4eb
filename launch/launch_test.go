package launch

import (
	"strings"
	"testing"
)

func TestEvalAndString(t *testing.T) {
	sizes := Map(map[string]int{"n": 1000, "rows": 7, "cols": 129, "q_rows": 3, "k_rows": 5, "rows_per_group": 2, ElemBytes: 2})
	for _, c := range []struct {
		e    *Expr
		text string
		want int
	}{
		{Ceil(V("n"), N(4)), "ceildiv(n, 4)", 250},
		{Ceil(V("n"), N(3)), "ceildiv(n, 3)", 334},
		{Times(N(256), Ceil(V("rows"), V("rows_per_group"))), "256 * ceildiv(rows, rows_per_group)", 1024},
		{Times(N(256), Sum(Ceil(V("q_rows"), V("rows_per_group")), Ceil(V("k_rows"), V("rows_per_group")))),
			"256 * (ceildiv(q_rows, rows_per_group) + ceildiv(k_rows, rows_per_group))", 256 * (2 + 3)},
		// Integer division does not reassociate: 10 * (7 / 2) = 30, (10 * 7) / 2 = 35.
		{Times(N(10), Over(N(7), N(2))), "10 * (7 / 2)", 30},
		{Over(Times(N(10), N(7)), N(2)), "10 * 7 / 2", 35},
		// The Metal team rule (4 values per lane) and the CUDA one (two
		// 16-byte vectors per lane: 32 / 2 bytes = 16 values of a half).
		{Over(N(256), TeamLanes(V("cols"), N(256), N(4))), "256 / lanes(cols, 256, 4)", 256 / 64},
		{Over(N(256), TeamLanes(V("cols"), N(256), Over(N(32), V(ElemBytes)))), "256 / lanes(cols, 256, 32 / kgen_elem_bytes)", 256 / 32},
		// Teams narrower than a warp: 129 halfs at 16 values per lane take 16 lanes.
		{Over(N(256), TeamLanesFrom(V("cols"), N(256), Over(N(32), V(ElemBytes)), N(1))), "256 / lanes(cols, 256, 32 / kgen_elem_bytes, 1)", 256 / 16},
	} {
		if got := c.e.String(); got != c.text {
			t.Errorf("String() = %q, want %q", got, c.text)
		}
		if got, err := c.e.Eval(sizes); err != nil || got != c.want {
			t.Errorf("%s = %d (%v), want %d", c.text, got, err, c.want)
		}
	}
}

func TestLanesFor(t *testing.T) {
	// cols, tg, per → lanes: the smallest power of two from 32 up to tg
	// with lanes * per >= cols.
	for _, c := range [][4]int{{1, 256, 4, 32}, {128, 256, 4, 32}, {129, 256, 4, 64}, {1024, 256, 4, 256},
		{4096, 256, 4, 256}, {4096, 1024, 4, 1024}, {64, 32, 4, 32}, {1000, 1024, 8, 128}} {
		if got := LanesFor(c[0], c[1], c[2]); got != c[3] {
			t.Errorf("LanesFor(%d, %d, %d) = %d, want %d", c[0], c[1], c[2], got, c[3])
		}
	}
}

func TestLanesFrom(t *testing.T) {
	// cols, tg, per, from → lanes: from below a warp, narrow rows take
	// narrow teams; 0 counts as 1.
	for _, c := range [][5]int{{1, 256, 16, 1, 1}, {16, 256, 16, 1, 1}, {17, 256, 16, 1, 2}, {128, 256, 16, 1, 8},
		{128, 256, 8, 1, 16}, {1024, 256, 16, 1, 64}, {16384, 256, 16, 1, 256}, {7, 256, 16, 0, 1}, {7, 256, 16, 4, 4}} {
		if got := LanesFrom(c[0], c[1], c[2], c[3]); got != c[4] {
			t.Errorf("LanesFrom(%d, %d, %d, %d) = %d, want %d", c[0], c[1], c[2], c[3], got, c[4])
		}
	}
}

func TestEvalErrors(t *testing.T) {
	if _, err := Ceil(V("n"), V("m")).Eval(Map(map[string]int{"n": 1})); err == nil || !strings.Contains(err.Error(), "no value for m") {
		t.Errorf("unknown variable: err %v", err)
	}
	if _, err := Ceil(V("n"), N(0)).Eval(Map(map[string]int{"n": 1})); err == nil || !strings.Contains(err.Error(), "division by zero") {
		t.Errorf("division by zero: err %v", err)
	}
}

func TestSizesAndGrid(t *testing.T) {
	l := Launch{
		Grid:        [3]*Expr{Times(N(256), Ceil(V("rows"), V("rows_per_group"))), N(1), N(1)},
		Threadgroup: [3]int{256, 1, 1},
		Derived:     []Derived{{Field: "rows_per_group", Rule: Over(N(256), TeamLanes(V("cols"), N(256), N(4)))}},
	}
	sizes, err := l.Sizes(map[string]int{"rows": 10, "cols": 64})
	if err != nil || sizes["rows_per_group"] != 8 {
		t.Fatalf("Sizes = %v, %v; want rows_per_group 8 (64 columns: 32 lanes a row)", sizes, err)
	}
	if g, err := l.GridSize(sizes); err != nil || g != [3]int{512, 1, 1} {
		t.Errorf("GridSize = %v, %v; want [512 1 1] (two groups of 8 rows)", g, err)
	}
	if _, err := l.Sizes(map[string]int{"rows": 10}); err == nil {
		t.Error("Sizes without cols: want an error")
	}
}
