package lsp

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/expr"
	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/spec"
)

// formulaRef is the formula under a cursor: its index among the lets then
// the outputs (the order ir's checker numbers them in) and the byte offset
// of the cursor in its text.
type formulaRef struct {
	index int
	f     spec.Formula
	off   int
}

// formulas are the spec's lets then outputs.
func (a *analysis) formulas() []spec.Formula {
	if a.spec == nil {
		return nil
	}
	return append(append([]spec.Formula(nil), a.spec.Let...), a.spec.Outputs...)
}

// formulaAt finds the formula whose text covers the file position, through
// the same offset maps gen's messages use (so block and quoted scalars
// map exactly as errors do). The offset just past the text counts, for a
// cursor at the end of what is being typed.
func (a *analysis) formulaAt(line, col int) (formulaRef, bool) {
	for i, f := range a.formulas() {
		if f.Text == "" {
			continue
		}
		for off := 0; off <= len(f.Text); off++ {
			if p := f.Map.At(off); p.Line == line && p.Col == col {
				return formulaRef{index: i, f: f, off: off}, true
			}
		}
	}
	return formulaRef{}, false
}

// wordRange is the file range of bytes [start, end) of formula f.
func (a *analysis) wordRange(f spec.Formula, start, end int) Range {
	s, e := f.Map.At(start), f.Map.At(end)
	return Range{Start: a.lspPos(s.Line, s.Col), End: a.lspPos(e.Line, e.Col)}
}

// symbol is the declared name called name, if any.
func (a *analysis) symbol(name string) (ir.Symbol, bool) {
	i := sort.Search(len(a.symbols), func(i int) bool { return a.symbols[i].Name >= name })
	if i < len(a.symbols) && a.symbols[i].Name == name {
		return a.symbols[i], true
	}
	return ir.Symbol{}, false
}

// hover answers textDocument/hover: in a formula, a name or a function;
// on a declaration, the name declared; on a spec key, its description
// (and on `kernel`, the kernel's launch and args struct).
func (s *server) hover(a *analysis, pos Position) *Hover {
	line, col := a.filePos(pos)
	if fr, ok := a.formulaAt(line, col); ok {
		start, end, ok := wordAt(fr.f.Text, fr.off)
		if !ok {
			return nil
		}
		word := fr.f.Text[start:end]
		r := a.wordRange(fr.f, start, end)
		if calledAt(fr.f.Text, end) {
			if text := funcDoc(word); text != "" {
				return &Hover{Contents: markdown(text), Range: &r}
			}
			return nil
		}
		if sym, ok := a.symbol(word); ok {
			return &Hover{Contents: markdown(a.symbolDoc(sym)), Range: &r}
		}
		return nil
	}
	text := a.line(line)
	start, end, ok := wordAt(text, runeByte(text, col))
	if !ok {
		return nil
	}
	word := text[start:end]
	r := Range{Start: a.lspPos(line, byteRune(text, start)), End: a.lspPos(line, byteRune(text, end))}
	if sym, ok := a.symbol(word); ok && sym.Pos.Line == line && sym.Pos.Col == byteRune(text, start) {
		return &Hover{Contents: markdown(a.symbolDoc(sym)), Range: &r}
	}
	l := splitYAMLLine(text)
	if l.key == "kernel" && l.dash == 0 && l.col == 1 {
		return &Hover{Contents: markdown(a.kernelDoc()), Range: &r}
	}
	if l.key == word && byteRune(text, start) == l.col {
		path := append(a.cursorPath(line, l.col), word)
		for _, n := range schemaAt(path) {
			if n.Description != "" {
				return &Hover{Contents: markdown(fmt.Sprintf("**%s**: %s", word, n.Description)), Range: &r}
			}
		}
	}
	return nil
}

func markdown(s string) MarkupContent { return MarkupContent{Kind: "markdown", Value: s} }

// runeByte is the byte offset of rune column col (from 1) of s.
func runeByte(s string, col int) int {
	n := 1
	for i := range s {
		if n == col {
			return i
		}
		n++
	}
	return len(s)
}

// byteRune is the rune column (from 1) of byte offset off of s.
func byteRune(s string, off int) int { return len([]rune(s[:off])) + 1 }

// funcDoc describes a formula function: its signature and error rule from
// funcs.Table, or a special form of the formula language (the conversions
// and pair reads, which expr defines); "" for an unknown name.
func funcDoc(name string) string {
	if f, ok := funcs.Lookup(name); ok {
		var args []string
		for _, t := range f.Args {
			args = append(args, t.String())
		}
		doc := fmt.Sprintf("```\n%s(%s) %s\n```\n", f.Name, strings.Join(args, ", "), f.Result)
		if f.Reduction {
			return doc + "A reduction (rowwise and matmul kernels): the reduction of its argument over the row (row_*) or the column (col_*), a value usable anywhere later."
		}
		return doc + "Error rule: " + f.Bound.Rule.String() + "."
	}
	switch {
	case name == expr.ToFloat:
		return "```\nf32(integer) number\n```\nThe integer in the compute type (exact below 2^24 in f32; rounded to nearest even in f16 and bf16)."
	case expr.IntConversions[name] != [2]int64{}:
		r := expr.IntConversions[name]
		return fmt.Sprintf("```\n%s(number | integer) integer\n```\nConversion to an integer saturating to [%d, %d]: a number toward zero (round first with rint or round), NaN giving 0; an integer clamped.", name, r[0], r[1])
	case name == expr.Detach:
		return "```\ndetach(number) number\n```\nThe value itself, through which no gradient flows in the derived backward kernel (backward:): PyTorch's detach."
	case expr.PairFuncs[name] != "":
		return fmt.Sprintf("```\n%s(input) number\n```\nThe element paired with this one in a [rows, cols] input (rowwise), %s layout; cols must be even.", name, expr.PairFuncs[name])
	}
	return ""
}

// symbolDoc describes a declared name: what it is, its dtype and shape
// where it is a tensor, its type in formulas, and where it is declared.
func (a *analysis) symbolDoc(sym ir.Symbol) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** — %s", sym.Name, sym.What)
	if bd, ok := a.binding(sym.Name); ok {
		fmt.Fprintf(&b, "\n\ndtype: %s\n\nshape: %s", a.dtypeText(bd.DType), bd.Shape)
	}
	if f, ok := a.field(sym.Name); ok {
		fmt.Fprintf(&b, "\n\nargs field: %s at offset %d", f.Type, f.Offset)
	}
	for _, c := range a.specConstants() {
		if c.Name.Name == sym.Name && sym.What == "constant" {
			fmt.Fprintf(&b, "\n\nvalue: %s", c.Text)
		}
	}
	if sym.Type != expr.Unknown {
		fmt.Fprintf(&b, "\n\nin formulas: %s", sym.Type)
	}
	if p := describePos(sym.Pos); p != "" {
		fmt.Fprintf(&b, "\n\ndeclared at %s", p)
	}
	return b.String()
}

func (a *analysis) specConstants() []spec.Constant {
	if a.spec == nil {
		return nil
	}
	return a.spec.Constants
}

// binding is the tensor binding called name (inputs and outputs).
func (a *analysis) binding(name string) (ir.Binding, bool) {
	if a.kernel == nil {
		return ir.Binding{}, false
	}
	for _, b := range a.kernel.Bindings {
		if b.Name == name && b.Role != ir.Args {
			return b, true
		}
	}
	return ir.Binding{}, false
}

// field is the args struct's field called name (params, sizes).
func (a *analysis) field(name string) (ir.Field, bool) {
	for _, f := range a.argsFields() {
		if f.Name == name {
			return f, true
		}
	}
	return ir.Field{}, false
}

func (a *analysis) argsFields() []ir.Field {
	if a.kernel == nil {
		return nil
	}
	for _, b := range a.kernel.Bindings {
		if b.Role == ir.Args {
			return b.Fields
		}
	}
	return nil
}

// dtypeText is a binding's dtype: fixed, or T with the variants' dtypes.
func (a *analysis) dtypeText(t dtype.DType) string {
	if t != dtype.Invalid {
		return t.String() + " (pinned)"
	}
	var names []string
	for _, v := range a.kernel.Variants {
		names = append(names, v.DType.String())
	}
	return "T, the variant's storage dtype (" + strings.Join(names, ", ") + ")"
}
