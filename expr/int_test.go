package expr

import (
	"strings"
	"testing"
)

// TestIntegerTypes: indices and int params are integers, integer literals
// beside them follow, comparisons give booleans, f32 converts, and every
// mix of an integer and a number is an error at the operator or argument.
func TestIntegerTypes(t *testing.T) {
	types := map[string]Type{"row": Int, "col": Int, "off": Int, "x": Num}
	cases := []struct {
		src  string
		want Type
		err  string // substring of the first message; "" for none
	}{
		{"col > row + off", Bool, ""},
		{"row + 1", Int, ""},
		{"-row * 2", Int, ""},
		{"select(col > row, -1e4, x)", Num, ""},
		{"select(col > 0, col, row - 1)", Int, ""},
		{"f32(col) / f32(row + 1)", Num, ""},
		{"f32(3)", Num, ""},
		{"x * col", Unknown, "operator * mixes an integer and a number"},
		{"col / 2", Int, ""},
		{"col % 2 == 0 && (row & 1) != 0", Bool, ""},
		{"(col >> 1) + (row << 3) ^ off | 7", Int, ""},
		{"i8(rint(x * 127))", Int, ""},
		{"u8(col)", Int, ""},
		{"f32(i32(x)) + 1", Num, ""},
		{"col / 0", Unknown, "integer division by zero"},
		{"col % (00)", Unknown, "integer remainder by zero"},
		{"x % 2", Unknown, "operator % takes integers"},
		{"x ^ 2", Unknown, "for a power use pow(a, b)"},
		{"x & 1", Unknown, "for logic use &&"},
		{"col | (x > 0)", Int, "the right operand of | must be an integer, not a boolean"},
		{"i8(col > 0)", Int, "not a boolean"},
		{"i8(x, 1)", Int, "i8 takes 1 argument"},
		{"exp(row)", Num, "argument 1 of exp must be a number, not an integer"},
		{"f32(x)", Num, "this is already a number"},
		{"select(col > 0, col, x)", Unknown, "select mixes an integer and a number"},
		{"row + 1.5", Unknown, "mixes an integer and a number"},
	}
	for _, c := range cases {
		n, err := Parse(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		var msgs []string
		ck := &Checker{
			Resolve: func(name string) (Type, string) { return types[name], "" },
			Rowwise: true,
			Report:  func(_ int, msg string) { msgs = append(msgs, msg) },
		}
		got := ck.Check(n)
		if got != c.want {
			t.Errorf("%s: type %s, want %s", c.src, got, c.want)
		}
		switch {
		case c.err == "" && len(msgs) > 0:
			t.Errorf("%s: unexpected %q", c.src, msgs)
		case c.err != "" && (len(msgs) == 0 || !strings.Contains(msgs[0], c.err)):
			t.Errorf("%s: messages %q, want one containing %q", c.src, msgs, c.err)
		}
	}
}
