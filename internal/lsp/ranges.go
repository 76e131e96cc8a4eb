package lsp

import (
	"strings"
	"unicode"
	"unicode/utf16"

	"github.com/kgen-dev/kgen/diag"
)

// kgen positions count lines from 1 and columns in runes from 1 (diag.Pos);
// LSP counts both from 0, columns in UTF-16 code units. These convert
// through the buffer's line text, so that a name after a non-ASCII doc or
// comment still lands on its characters.

// line is the text of line n (from 1), "" past the end.
func (a *analysis) line(n int) string {
	if n < 1 || n > len(a.lines) {
		return ""
	}
	return a.lines[n-1]
}

// lspPos converts a line and rune column (both from 1) to an LSP position.
func (a *analysis) lspPos(line, col int) Position {
	if line < 1 {
		return Position{}
	}
	r := []rune(a.line(line))
	col = min(max(col, 1), len(r)+1)
	return Position{Line: line - 1, Character: len(utf16.Encode(r[:col-1]))}
}

// filePos converts an LSP position to a line and rune column (from 1).
func (a *analysis) filePos(p Position) (line, col int) {
	r := []rune(a.line(p.Line + 1))
	units := 0
	for i, c := range r {
		if units >= p.Character {
			return p.Line + 1, i + 1
		}
		units += utf16.RuneLen(c)
	}
	return p.Line + 1, len(r) + 1
}

// tokenRange is the range of the diagnostic at p: from p to the end of the
// token that starts there (tokenEnd). A position without a line (a whole
// file) is the file's start.
func (a *analysis) tokenRange(p diag.Pos) Range {
	if p.Line == 0 {
		return Range{}
	}
	col := max(p.Col, 1)
	return Range{Start: a.lspPos(p.Line, col), End: a.lspPos(p.Line, tokenEnd(a.line(p.Line), col))}
}

// tokenEnd is the rune column just past the token that starts at rune
// column col of line: a name, key or number; a quoted scalar to its
// closing quote; a flow sequence or mapping to its closing bracket; a
// formula operator. What kgen positions is always one of these (a key, a
// value, a name inside a formula, an operator), so the range covers the
// thing the message is about. At the end of the line the range is empty.
func tokenEnd(line string, col int) int {
	r := []rune(line)
	i := col - 1
	if i < 0 || i >= len(r) {
		return col
	}
	end := i + 1
	switch c := r[i]; {
	case isWordRune(c) || (c == '.' && i+1 < len(r) && unicode.IsDigit(r[i+1])):
		number := unicode.IsDigit(c) || c == '.'
		for end < len(r) && (isWordRune(r[end]) || r[end] == '.' ||
			(number && (r[end] == '+' || r[end] == '-') && (r[end-1] == 'e' || r[end-1] == 'E'))) {
			end++
		}
	case c == '"' || c == '\'':
		end = closingQuote(r, i)
	case c == '[' || c == '{':
		end = closingBracket(r, i)
	default:
		if i+1 < len(r) && twoCharOps[string(r[i:i+2])] {
			end = i + 2
		}
	}
	return end + 1
}

// twoCharOps are the formula language's two-character operators.
var twoCharOps = map[string]bool{"<=": true, ">=": true, "==": true, "!=": true, "&&": true, "||": true, "<<": true, ">>": true}

func isWordRune(c rune) bool { return c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c) }

// closingQuote is the index just past the quote closing the one at i (” and
// \" escape), or the line's end.
func closingQuote(r []rune, i int) int {
	q := r[i]
	for j := i + 1; j < len(r); j++ {
		switch {
		case q == '"' && r[j] == '\\':
			j++
		case r[j] == q && q == '\'' && j+1 < len(r) && r[j+1] == '\'':
			j++
		case r[j] == q:
			return j + 1
		}
	}
	return len(r)
}

// closingBracket is the index just past the bracket closing the one at i,
// skipping quoted text, or the line's end.
func closingBracket(r []rune, i int) int {
	depth := 0
	for j := i; j < len(r); j++ {
		switch r[j] {
		case '"', '\'':
			j = closingQuote(r, j) - 1
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(r)
}

// wholeRange is the range of the whole text, for formatting's one edit.
func (a *analysis) wholeRange() Range {
	last := len(a.lines)
	return Range{End: a.lspPos(last, len([]rune(a.line(last)))+1)}
}

// wordAt is the identifier around byte offset off of s: [start, end), with
// ok false when off is on none. An offset just past a name counts as on
// it, as where a cursor stands after typing it.
func wordAt(s string, off int) (start, end int, ok bool) {
	isWord := func(b byte) bool {
		return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
	}
	if off < 0 || off > len(s) {
		return 0, 0, false
	}
	start, end = off, off
	for start > 0 && isWord(s[start-1]) {
		start--
	}
	for end < len(s) && isWord(s[end]) {
		end++
	}
	if start == end || s[start] >= '0' && s[start] <= '9' {
		return 0, 0, false
	}
	return start, end, true
}

// calledAt reports whether the name ending at byte end of s is called: the
// next non-blank character is "(".
func calledAt(s string, end int) bool {
	return strings.HasPrefix(strings.TrimLeft(s[end:], " \t\r\n"), "(")
}
