package expr

import (
	"strings"
	"testing"
)

// TestIndexParse: subscripts parse to Index nodes and print back as written
// (kgen fmt and messages echo formulas through String).
func TestIndexParse(t *testing.T) {
	for _, src := range []string{
		"table[ids, col]",
		"cache[row / n, pos + row % n, col] * 2",
		"x[row, cols - 1 - col] + lut[i32(col)]",
		"f(a[b[row], col])",
	} {
		n, err := Parse(src)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if got := String(n); got != src {
			t.Errorf("String(Parse(%q)) = %q", src, got)
		}
	}
	n, _ := Parse("table[ids, col]")
	ix, ok := n.(*Index)
	if !ok || ix.Name != "table" || len(ix.Args) != 2 || ix.Off != 0 {
		t.Fatalf("table[ids, col] parsed as %#v", n)
	}
}

// TestIndexErrors: malformed subscripts are refused at the right offset.
func TestIndexErrors(t *testing.T) {
	for _, c := range []struct {
		src  string
		off  int
		want string
	}{
		{"x[", 2, "formula ends where a value was expected"},
		{"x[row", 1, "never closed"},
		{"x[]", 1, "no coordinates"},
		{"x[row col]", 6, "`,` or `]`"},
		{"x]", 1, "after the end"},
	} {
		_, err := Parse(c.src)
		if err == nil || err.Off != c.off || !strings.Contains(err.Msg, c.want) {
			t.Errorf("Parse(%q) = %v; want offset %d, %q", c.src, err, c.off, c.want)
		}
	}
}

// TestIndexCheck: coordinates must be integers; the subscript takes the
// type the resolver gives; without a resolver the kind refuses it.
func TestIndexCheck(t *testing.T) {
	check := func(src string, indexed Resolver) (Type, []string) {
		n, err := Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		var msgs []string
		c := &Checker{
			Resolve: func(name string) (Type, string) {
				if name == "x" {
					return Num, ""
				}
				return Int, ""
			},
			Indexed:   indexed,
			IndexKind: "elementwise",
			Report:    func(off int, msg string) { msgs = append(msgs, msg) },
		}
		return c.Check(n), msgs
	}
	table := func(string) (Type, string) { return Num, "" }
	if typ, msgs := check("t[row, col + 1]", table); typ != Num || len(msgs) != 0 {
		t.Errorf("t[row, col + 1]: %v %v", typ, msgs)
	}
	if _, msgs := check("t[row, x]", table); len(msgs) != 1 || !strings.Contains(msgs[0], "must be an integer") {
		t.Errorf("t[row, x]: %v", msgs)
	}
	if _, msgs := check("t[row, 2]", table); len(msgs) != 0 {
		t.Errorf("t[row, 2]: an integer literal is a coordinate: %v", msgs)
	}
	if _, msgs := check("t[row]", nil); len(msgs) != 1 || !strings.Contains(msgs[0], "kind: rowwise") {
		t.Errorf("t[row] without indexing: %v", msgs)
	}
}
