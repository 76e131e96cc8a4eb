package yamlnode

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"github.com/kgen-dev/kgen/diag"
)

// ScalarMap maps byte offsets inside a scalar's value back to positions in
// the file, so that an error inside a formula points at the character.
type ScalarMap struct {
	segs []segment
}

// segment is one source line's share of the value: value bytes
// [start, start+len(text)) sit at line, col.., followed by separator bytes
// (a newline or folding space, maybe indentation) before the next segment.
// Columns count runes (a TAB is one column). cols, when set, gives each
// value byte's column offset (a quoted scalar's escapes are longer in the
// file than in the value).
type segment struct {
	start int
	pos   diag.Pos
	text  string
	cols  []int
}

// MapScalar builds the offset map of a scalar node. Single-line plain and
// quoted scalars map exactly (escape sequences aside); block and multi-line
// scalars map line by line.
func (d *Doc) MapScalar(n ast.Node) ScalarMap {
	start := d.Pos(n)
	value, _ := Scalar(n)
	if _, ok := n.(*ast.LiteralNode); ok {
		return d.mapBlock(start, value)
	}
	tk := n.GetToken()
	if tk == nil || !strings.Contains(strings.TrimSpace(tk.Origin), "\n") {
		seg := segment{start: 0, pos: start, text: value}
		if tk != nil && (tk.Type == token.SingleQuoteType || tk.Type == token.DoubleQuoteType) {
			seg.pos = start.Shift(1) // past the opening quote
			seg.cols = quotedCols(d.sourceFrom(seg.pos), tk.Type == token.DoubleQuoteType)
		}
		return ScalarMap{segs: []segment{seg}}
	}
	start = d.multiLineStart(tk, start)
	if tk.Type == token.SingleQuoteType || tk.Type == token.DoubleQuoteType {
		start = start.Shift(1)
	}
	first := d.sourceFrom(start)
	segs := []segment{{pos: start, text: strings.TrimRight(first, " \t")}}
	for ln := start.Line + 1; ln <= len(d.Lines) && ln <= start.Line+strings.Count(tk.Origin, "\n"); ln++ {
		segs = append(segs, d.lineSegment(ln))
	}
	return place(value, segs)
}

// multiLineStart checks where a multi-line scalar starts. goccy puts some
// plain ones (a continuation line starting with '-', at the end of the
// document) at their end instead; then the start is found from the token's
// text, that many lines up.
func (d *Doc) multiLineStart(tk *token.Token, at diag.Pos) diag.Pos {
	origin := strings.TrimSpace(tk.Origin)
	first, _, _ := strings.Cut(origin, "\n")
	first = strings.TrimRight(first, " \t\r")
	if at.Col >= 1 && strings.HasPrefix(d.sourceFrom(at), first) {
		return at
	}
	ln := at.Line - strings.Count(origin, "\n")
	if i := strings.LastIndex(d.line(ln), first); ln >= 1 && i >= 0 {
		return diag.Pos{Path: d.Path, Line: ln, Col: utf8.RuneCountInString(d.line(ln)[:i]) + 1}
	}
	return at
}

// mapBlock maps `|` and `>` scalars: content starts on the line after the
// header and lasts while lines are indented at least as far as its first.
func (d *Doc) mapBlock(header diag.Pos, value string) ScalarMap {
	var segs []segment
	indent := -1
	for ln := header.Line + 1; ln <= len(d.Lines); ln++ {
		seg := d.lineSegment(ln)
		if seg.text == "" {
			continue
		}
		if indent < 0 {
			indent = seg.pos.Col
		}
		if seg.pos.Col < indent {
			break
		}
		segs = append(segs, seg)
	}
	if len(segs) == 0 {
		return ScalarMap{segs: []segment{{pos: header}}}
	}
	return place(value, segs)
}

// lineSegment is line ln without its indentation and trailing blanks.
func (d *Doc) lineSegment(ln int) segment {
	raw := d.line(ln)
	text := strings.TrimLeft(raw, " \t")
	return segment{pos: diag.Pos{Path: d.Path, Line: ln, Col: len(raw) - len(text) + 1}, text: strings.TrimRight(text, " \t")}
}

// place finds each line's text in the value: it starts at the first
// non-blank byte after the previous line's text. Whatever separates the
// lines in the value (a newline, a folding space, the extra indentation a
// block scalar keeps, blank lines) is skipped, so no rule of YAML's line
// folding needs repeating here.
func place(value string, lines []segment) ScalarMap {
	var segs []segment
	off := 0
	for _, s := range lines {
		for off < len(value) && strings.IndexByte(" \t\r\n", value[off]) >= 0 {
			off++
		}
		if off >= len(value) && len(segs) > 0 {
			break
		}
		s.start = off
		segs = append(segs, s)
		off += len(s.text)
	}
	return ScalarMap{segs: segs}
}

func (d *Doc) line(n int) string {
	if n < 1 || n > len(d.Lines) {
		return ""
	}
	return strings.TrimRight(d.Lines[n-1], "\r")
}

// At returns the file position of byte offset off in the value.
func (m ScalarMap) At(off int) diag.Pos {
	if len(m.segs) == 0 {
		return diag.Pos{Line: 1, Col: 1}
	}
	seg := m.segs[0]
	for _, s := range m.segs {
		if s.start <= off {
			seg = s
		}
	}
	i := max(off-seg.start, 0)
	if i < len(seg.cols) {
		return seg.pos.Shift(seg.cols[i])
	}
	// Past the line's text (the line break or folding space after it, as
	// at the end of a block scalar): just past its last character.
	return seg.pos.Shift(utf8.RuneCountInString(seg.text[:min(i, len(seg.text))]))
}

// sourceFrom is the rest of a line from a rune column.
func (d *Doc) sourceFrom(p diag.Pos) string {
	line := d.line(p.Line)
	for col := 1; col < p.Col && line != ""; col++ {
		_, size := utf8.DecodeRuneInString(line)
		line = line[size:]
	}
	return line
}

// quotedCols maps each byte of a quoted scalar's value to the column
// offset, in src (the text after the opening quote), of the character or
// escape sequence it comes from, plus one entry for the end of the value
// (the closing quote's column). It stops at the closing quote.
func quotedCols(src string, double bool) []int {
	var cols []int
	col := 0
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRuneInString(src[i:])
		n, width := size, 1 // value bytes, source columns
		switch {
		case !double && r == '\'':
			if !strings.HasPrefix(src[i:], "''") {
				return append(cols, col)
			}
			n, size, width = 1, 2, 2
		case double && r == '"':
			return append(cols, col)
		case double && r == '\\' && i+1 < len(src):
			n, size = escapeLen(src[i+1:])
			width = size
		}
		for ; n > 0; n-- {
			cols = append(cols, col)
		}
		col += width
		i += size
	}
	return append(cols, col)
}

// escapeLen is the value bytes and source bytes of the YAML escape after a
// backslash (s starts after it).
func escapeLen(s string) (valueBytes, srcBytes int) {
	digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[0]]
	switch {
	case digits > 0 && len(s) > digits:
		v, err := strconv.ParseUint(s[1:1+digits], 16, 32)
		if err != nil {
			return 1, 2
		}
		return max(utf8.RuneLen(rune(v)), 1), 2 + digits
	case s[0] == 'N' || s[0] == '_':
		return 2, 2 // U+0085, U+00A0
	case s[0] == 'L' || s[0] == 'P':
		return 3, 2 // U+2028, U+2029
	}
	return 1, 2
}

// Fixed is a ScalarMap that puts every offset at p: the map of a formula
// kgen wrote itself (a derived kernel's), whose every error belongs to the
// field that asked for it.
func Fixed(p diag.Pos) ScalarMap { return ScalarMap{segs: []segment{{pos: p}}} }
