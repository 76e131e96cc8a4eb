package lsp

import "testing"

// TestTokenEnd: the range of a diagnostic covers the token at its position.
func TestTokenEnd(t *testing.T) {
	for _, c := range []struct {
		line string
		col  int
		want string
	}{
		{"outptus:", 1, "outptus"},
		{"  - y: 0.5 * tahn(x)", 14, "tahn"},
		{"  - y: 1.5e-3 * x", 8, "1.5e-3"},
		{"  - y: a <= b", 10, "<="},
		{"  - y: a % b", 10, "%"},
		{`doc: "a \"q\" b" # c`, 6, `"a \"q\" b"`},
		{"doc: 'it''s' x", 6, "'it''s'"},
		{"dtypes: [f32, {a: [1]}, f16] # x", 9, "[f32, {a: [1]}, f16]"},
		{"dtypes: [f32", 9, "[f32"},
		{"x:", 3, ""},
	} {
		r := []rune(c.line)
		end := tokenEnd(c.line, c.col)
		if got := string(r[c.col-1 : end-1]); got != c.want {
			t.Errorf("tokenEnd(%q, %d): %q, want %q", c.line, c.col, got, c.want)
		}
	}
}

// TestUTF16Positions: LSP columns count UTF-16 units, kgen's count runes;
// a character outside the BMP takes two units.
func TestUTF16Positions(t *testing.T) {
	a := analyze("", "doc: 𝛼é tahn\n", env{})
	// "tahn" is rune column 9 (d o c : space 𝛼 é space t): UTF-16 unit 9.
	if p := a.lspPos(1, 9); p != (Position{Line: 0, Character: 9}) {
		t.Errorf("lspPos(1, 9) = %+v, want 0:9", p)
	}
	if l, c := a.filePos(Position{Line: 0, Character: 9}); l != 1 || c != 9 {
		t.Errorf("filePos(0:9) = %d:%d, want 1:9", l, c)
	}
	if p := a.lspPos(1, 7); p != (Position{Line: 0, Character: 7}) { // é, after the pair
		t.Errorf("lspPos(1, 7) = %+v, want 0:7", p)
	}
}
