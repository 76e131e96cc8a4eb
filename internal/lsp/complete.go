package lsp

import (
	"sort"
	"strings"

	"github.com/kgen-dev/kgen/expr"
	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/spec"
)

// cursorPath is the YAML path of the block mapping holding the key that
// starts at rune column col of line (the line's own dash included).
func (a *analysis) cursorPath(line, col int) []string {
	l := splitYAMLLine(a.line(line))
	if l.dash > 0 && col > l.dash {
		return append(a.yamlPath(line, l.dash), "[]")
	}
	return a.yamlPath(line, col)
}

// complete answers textDocument/completion: in a formula, the functions
// and the names in scope there; in a value with enumerated values (kind,
// dtypes, ports…), those; elsewhere the keys the schema allows at the
// cursor's level. Clients filter by the word typed so far.
func (s *server) complete(a *analysis, pos Position) CompletionList {
	line, col := a.filePos(pos)
	text := a.line(line)
	before := text[:runeByte(text, col)]
	if a.spec == nil {
		// A key being typed is not YAML yet ("ma" without its colon): the
		// names in scope come from the text without the word at the cursor.
		a = a.without(line, strings.LastIndexAny(before, " -{[,:")+1)
	}
	if fr, ok := a.formulaAt(line, col); ok {
		return CompletionList{Items: a.formulaItems(fr.index)}
	}
	l := splitYAMLLine(text)
	if l.key != "" && len(before) > runeByte(text, l.col)+len(l.key) { // past the key's colon: its value
		path := append(a.cursorPath(line, l.col), l.key)
		if isFormulaPath(path) {
			// A formula not written yet (no text for formulaAt to map):
			// what the lets written above it may use.
			return CompletionList{Items: a.formulaItems(a.formulaIndexAbove(line))}
		}
		return CompletionList{Items: schemaValues(path)}
	}
	wordStart := strings.LastIndexAny(before, " -{[,") + 1
	return CompletionList{Items: schemaKeys(a.cursorPath(line, byteRune(text, wordStart)))}
}

// without is the analysis of the text with line cut at byte cut, for
// completion in a buffer that does not parse.
func (a *analysis) without(line, cut int) *analysis {
	if line < 1 || line > len(a.lines) {
		return a
	}
	lines := append([]string(nil), a.lines...)
	lines[line-1] = lines[line-1][:cut]
	b := analyze(a.file, strings.Join(lines, "\n"), env{config: a.configPath()})
	b.lines = a.lines
	return b
}

// isFormulaPath reports whether a value at path is a formula: a let or an
// output in the short form (name: formula), or the long form's formula.
func isFormulaPath(path []string) bool {
	if len(path) == 3 && (path[0] == "let" || path[0] == "outputs") && path[1] == "[]" {
		return true
	}
	return len(path) > 0 && path[len(path)-1] == "formula"
}

// formulaIndexAbove is the index (lets then outputs) a formula being
// written on line would take: the number of formulas that start above it.
func (a *analysis) formulaIndexAbove(line int) int {
	n := 0
	for _, f := range a.formulas() {
		if f.Name.Pos.Line < line {
			n++
		}
	}
	return n
}

// formulaItems are the completions inside formula i: the names it may use
// (ir.Symbol.VisibleFrom, the checker's own rule), then the functions of
// funcs.Table the kernel's kind has and the special forms.
func (a *analysis) formulaItems(i int) []CompletionItem {
	var items []CompletionItem
	for _, sym := range a.symbols {
		if !sym.VisibleFrom(i) {
			continue
		}
		kind := completionVariable
		if sym.What == "constant" || sym.What == "built-in constant" {
			kind = completionConstant
		}
		items = append(items, CompletionItem{Label: sym.Name, Kind: kind, Detail: a.symbolDetail(sym), SortText: "0" + sym.Name})
	}
	rowwise := a.spec != nil && a.spec.Kind != spec.Elementwise
	for _, f := range funcs.Table {
		if f.Reduction && !rowwise {
			continue
		}
		items = append(items, funcItem(f.Name))
	}
	for _, name := range specialForms() {
		items = append(items, funcItem(name))
	}
	return items
}

// specialForms are the calls of the formula language that are not rows of
// funcs.Table: the conversions, the pair reads and detach.
func specialForms() []string {
	names := []string{expr.ToFloat, expr.Detach}
	for n := range expr.IntConversions {
		names = append(names, n)
	}
	for n := range expr.PairFuncs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func funcItem(name string) CompletionItem {
	detail, _, _ := strings.Cut(strings.TrimPrefix(funcDoc(name), "```\n"), "\n")
	return CompletionItem{Label: name, Kind: completionFunction, Detail: detail, InsertText: name + "(", SortText: "1" + name}
}

// symbolDetail is a name's one-line description for a completion.
func (a *analysis) symbolDetail(sym ir.Symbol) string {
	d := sym.What
	if bd, ok := a.binding(sym.Name); ok {
		d += " " + bd.Shape.String()
	}
	if sym.Type != expr.Unknown {
		d += ", " + sym.Type.String()
	}
	return d
}

// definition answers textDocument/definition for a name used in a
// formula: where the spec declares it (inputs, params, constants, lets,
// accumulators). Built-in names have no declaration.
func (s *server) definition(a *analysis, pos Position) []Location {
	line, col := a.filePos(pos)
	fr, ok := a.formulaAt(line, col)
	if !ok {
		return nil
	}
	start, end, ok := wordAt(fr.f.Text, fr.off)
	if !ok || calledAt(fr.f.Text, end) {
		return nil
	}
	sym, ok := a.symbol(fr.f.Text[start:end])
	if !ok || sym.Pos.Line == 0 {
		return nil
	}
	// A spec declares every name it uses: the location is in the document
	// itself, named by the client's own URI.
	return []Location{{URI: a.uri, Range: a.tokenRange(sym.Pos)}}
}

// format answers textDocument/formatting with kgen fmt's formatter
// (spec.Format): one edit replacing the whole text, none when the layout
// is already canonical or the YAML does not parse (its diagnostics say
// why).
func (s *server) format(uri string) ([]TextEdit, error) {
	d := s.docs[uri]
	if d == nil {
		return nil, nil
	}
	a := s.analysis(d)
	if a.notSpec {
		return []TextEdit{}, nil
	}
	out, err := spec.Format(a.rel, []byte(d.text))
	if err != nil || string(out) == d.text {
		return []TextEdit{}, nil
	}
	return []TextEdit{{Range: a.wholeRange(), NewText: string(out)}}, nil
}
