package cfam

import (
	"fmt"
	"strings"
)

// Writer collects C-family source lines with automatic indentation, so the
// body writers say what a block contains and never thread indent strings
// (protogen's g.P, plus blocks). Preprocessor lines (#pragma) stay at the
// start of their line, where C wants them.
type Writer struct {
	lines []string
	depth int
}

// P writes one line made of parts: strings as they are, everything else
// with fmt's %v.
func (w *Writer) P(parts ...any) {
	var b strings.Builder
	for _, p := range parts {
		fmt.Fprint(&b, p)
	}
	line := b.String()
	if line != "" && !strings.HasPrefix(line, "#") {
		line = strings.Repeat("    ", w.depth) + line
	}
	w.lines = append(w.lines, line)
}

// Block writes head followed by " {", the lines body writes one level
// deeper, and the closing brace.
func (w *Writer) Block(head string, body func()) {
	w.P(head, " {")
	w.Indent(body)
	w.P("}")
}

// Bare writes a brace-enclosed block: a scope for body's locals.
func (w *Writer) Bare(body func()) {
	w.P("{")
	w.Indent(body)
	w.P("}")
}

// IfElse writes if (cond) { then } else { els }.
func (w *Writer) IfElse(cond string, then, els func()) {
	w.P("if (", cond, ") {")
	w.Indent(then)
	w.P("} else {")
	w.Indent(els)
	w.P("}")
}

// Indent writes the lines body writes one level deeper.
func (w *Writer) Indent(body func()) {
	w.depth++
	body()
	w.depth--
}

// Func writes a function whose parameters stand one a line (the layout of
// kernel entry points), its body one level deeper.
func (w *Writer) Func(head string, params []string, body func()) {
	w.P(head, "(")
	for i, p := range params {
		sep := ","
		if i == len(params)-1 {
			sep = ")"
		}
		w.Indent(func() { w.P(p, sep) })
	}
	w.P("{")
	w.Indent(body)
	w.P("}")
}

// String is the source written so far, one line per line.
func (w *Writer) String() string {
	if len(w.lines) == 0 {
		return ""
	}
	return strings.Join(w.lines, "\n") + "\n"
}
