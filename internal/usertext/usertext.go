// Package usertext is the one place user text (a spec's doc, spec and
// output paths, formulas as written) is made safe for the generated files'
// contexts. Names never need it: spec checks them against
// ^[a-z][a-z0-9_]*$. Go string literals need nothing here either: jennifer
// writes them with strconv.Quote, and `kgen list --json` with
// encoding/json, which escapes U+2028/2029.
//
// A `//` comment in C++, MSL, CUDA or Go ends at a line break, and C++
// also treats a lone CR as one and splices a line that ends in a backslash
// (or the trigraph ??/) onto the next: any of those lets the rest of the
// text become code. So Comment escapes, as \xNN or \uXXXX, every byte or
// rune that can end, splice or hide a line, and Problem names the first
// such rune so that spec can refuse it with a position.
package usertext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Comment returns s as the text of one `//` comment line: line breaks
// (LF, CR, U+0085, U+2028, U+2029), NUL and every other control
// character, format characters (BOM, bidirectional overrides: text that
// displays other than it compiles), invalid UTF-8, "*/", "??/" and a
// trailing backslash are escaped; everything else is kept.
func Comment(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t':
			b.WriteRune(r)
		case unsafe(r):
			if r < 0x80 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04X`, r)
			}
		case r == '/' && strings.HasSuffix(b.String(), "*"):
			b.WriteString(`\x2f`)
		case r == '/' && strings.HasSuffix(b.String(), "??"):
			b.WriteString(`\x2f`)
		case r == '\\' && i+size == len(s):
			b.WriteString(`\x5c`)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// Lines splits multi-line user text (a doc) into comment lines, each
// through Comment; only LF separates lines.
func Lines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		out = append(out, Comment(l))
	}
	return out
}

// Problem returns the byte offset and a description of the first rune of
// s that a generated file cannot carry as written (see Comment), allowing
// LF and TAB only where multiline is set; ok is false when there is none.
func Problem(s string, multiline bool) (offset int, what string, ok bool) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return i, fmt.Sprintf("invalid UTF-8 (byte 0x%02x)", s[i]), true
		case (r == '\n' || r == '\t') && multiline:
		case unsafe(r) || r == '\n' || r == '\t':
			return i, fmt.Sprintf("the character %U (%s), which could end a comment in generated code", r, runeName(r)), true
		}
		i += size
	}
	return 0, "", false
}

// unsafe: control characters (C0, DEL, C1), Unicode line and paragraph
// separators, and format characters (BOM, bidi controls, zero-width).
func unsafe(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Cf, r)
}

func runeName(r rune) string {
	switch r {
	case '\r':
		return "carriage return"
	case '\n':
		return "line feed"
	case 0:
		return "NUL"
	case '\t':
		return "tab"
	case '\u2028':
		return "line separator"
	case '\u2029':
		return "paragraph separator"
	case '\uFEFF':
		return "byte order mark"
	}
	if unicode.Is(unicode.Cf, r) {
		return "an invisible format character"
	}
	return "a control character"
}
