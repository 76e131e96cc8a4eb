package yamlnode

import (
	"strings"

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
type segment struct {
	start int
	pos   diag.Pos
	text  string
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
		if tk != nil && (tk.Type == token.SingleQuoteType || tk.Type == token.DoubleQuoteType) {
			start = start.Shift(1) // past the opening quote
		}
		return ScalarMap{segs: []segment{{start: 0, pos: start, text: value}}}
	}
	start = d.multiLineStart(tk, start)
	if tk.Type == token.SingleQuoteType || tk.Type == token.DoubleQuoteType {
		start = start.Shift(1)
	}
	first := d.line(start.Line)
	if start.Col-1 <= len(first) {
		first = first[start.Col-1:]
	}
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
	if line := d.line(at.Line); at.Col >= 1 && at.Col-1 <= len(line) && strings.HasPrefix(line[at.Col-1:], first) {
		return at
	}
	ln := at.Line - strings.Count(origin, "\n")
	if i := strings.LastIndex(d.line(ln), first); ln >= 1 && i >= 0 {
		return diag.Pos{Path: d.Path, Line: ln, Col: i + 1}
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
	return seg.pos.Shift(off - seg.start)
}
