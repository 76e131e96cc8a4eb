package yamlnode

import (
	"bytes"
	"unicode"
	"unicode/utf8"

	"github.com/kgen-dev/kgen/diag"
)

// precheck refuses, before any YAML parser sees them, inputs whose meaning
// would depend on the parser: UTF-16 and UTF-32 (a BOM or NUL bytes), a
// UTF-8 BOM, invalid UTF-8, and a TAB outside a comment or quoted string —
// goccy joins the tokens around a TAB in a plain scalar, so `x + 1<TAB>0`
// would read as x + 10. Specs are written with spaces; quoted strings may
// hold a TAB. Control characters other than TAB and line breaks, which
// YAML forbids and goccy misreports, are refused too. Linear in the input.
func precheck(path string, src []byte, diags *diag.List) bool {
	switch {
	case bytes.HasPrefix(src, []byte{0xFF, 0xFE}) || bytes.HasPrefix(src, []byte{0xFE, 0xFF}) || bytes.IndexByte(src, 0) >= 0:
		diags.Addf(diag.Pos{Path: path, Line: 1, Col: 1}, "the file is UTF-16 or UTF-32 (or holds NUL bytes); save it as UTF-8")
		return false
	case bytes.HasPrefix(src, []byte{0xEF, 0xBB, 0xBF}):
		diags.Addf(diag.Pos{Path: path, Line: 1, Col: 1}, "the file starts with a UTF-8 byte order mark; save it as UTF-8 without one")
		return false
	}
	ok := true
	line, col := 1, 1
	var quote rune // the open quote on this line, or 0
	comment := false
	prev := ' '
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			diags.Addf(diag.Pos{Path: path, Line: line, Col: col}, "invalid UTF-8 (byte 0x%02x); save the file as UTF-8", src[i])
			return false
		case r == '\n' || r == '\r':
			line, col, quote, comment = line+1, 0, 0, false
			if r == '\r' && i+1 < len(src) && src[i+1] == '\n' {
				i++
			}
			r = ' ' // a quote may open the next line
		case r != '\t' && unicode.IsControl(r):
			diags.Addf(diag.Pos{Path: path, Line: line, Col: col}, "the control character %U, which YAML does not allow in a file; remove it (in a double-quoted string, an escape such as \\x01 writes one)", r)
			return false
		case comment:
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
		case (r == '"' || r == '\'') && (prev == ' ' || prev == ':' || prev == '[' || prev == '{' || prev == ',' || prev == '-'):
			quote = r
		case r == '#' && (prev == ' ' || prev == '\t'):
			comment = true
		case r == '\t':
			diags.Addf(diag.Pos{Path: path, Line: line, Col: col}, "a TAB outside a comment or quoted string; use spaces (a TAB between tokens of a formula can join them)")
			ok = false
		}
		prev = r
		i += size
		col++
	}
	return ok
}
