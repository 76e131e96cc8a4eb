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
// [start, start+len(text)) sit at line, col.., followed by one separator byte
// (the newline or folding space) before the next segment.
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
	if lit, ok := n.(*ast.LiteralNode); ok {
		return d.mapBlock(start, lit)
	}
	tk := n.GetToken()
	shift := 0
	if tk != nil && (tk.Type == token.SingleQuoteType || tk.Type == token.DoubleQuoteType) {
		shift = 1
	}
	value, _ := Scalar(n)
	rest := d.line(start.Line)
	if at := start.Col - 1 + shift; at >= 0 && at <= len(rest) {
		rest = rest[at:]
	}
	if strings.HasPrefix(rest, value) || (shift == 1 && !strings.Contains(value, "\n") && len(value) < len(rest)) {
		return ScalarMap{segs: []segment{{start: 0, pos: start.Shift(shift), text: value}}}
	}
	return d.mapLines(start.Shift(shift), start.Line+1, len(value))
}

// mapBlock maps `|` and `>` scalars: content starts on the line after the
// header, each source line one segment.
func (d *Doc) mapBlock(header diag.Pos, lit *ast.LiteralNode) ScalarMap {
	var segs []segment
	off := 0
	for ln := header.Line + 1; ln <= len(d.Lines) && off <= len(lit.Value.Value); ln++ {
		raw := d.line(ln)
		text := strings.TrimLeft(raw, " \t")
		if text == "" {
			off++
			continue
		}
		col := len(raw) - len(text) + 1
		if ln > header.Line+1 && col <= header.Col && len(segs) > 0 {
			break
		}
		segs = append(segs, segment{start: off, pos: diag.Pos{Path: d.Path, Line: ln, Col: col}, text: text})
		off += len(text) + 1
	}
	if len(segs) == 0 {
		segs = []segment{{pos: header}}
	}
	return ScalarMap{segs: segs}
}

// mapLines maps a plain or quoted scalar that spans several source lines.
func (d *Doc) mapLines(first diag.Pos, next, total int) ScalarMap {
	head := d.line(first.Line)
	if first.Col-1 <= len(head) {
		head = head[first.Col-1:]
	}
	segs := []segment{{start: 0, pos: first, text: head}}
	off := len(head) + 1
	for ln := next; off < total && ln <= len(d.Lines); ln++ {
		raw := d.line(ln)
		text := strings.TrimLeft(raw, " \t")
		segs = append(segs, segment{start: off, pos: diag.Pos{Path: d.Path, Line: ln, Col: len(raw) - len(text) + 1}, text: text})
		off += len(text) + 1
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
	seg := m.segs[0]
	for _, s := range m.segs {
		if s.start <= off {
			seg = s
		}
	}
	return seg.pos.Shift(off - seg.start)
}
