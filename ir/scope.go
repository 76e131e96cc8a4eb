package ir

import (
	"sort"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/expr"
	"github.com/kgen-dev/kgen/spec"
)

// Symbol is a name a spec declares for its formulas, as the formula
// checker declares and types it. It exists for editors (kgen lsp's hover,
// completion and go to definition), so that they see the names exactly as
// gen resolves them and never keep a second copy of the scope rules.
type Symbol struct {
	Name string
	// What is the checker's word for it: "input", "param", "constant",
	// "let", "output", "accumulator", "index", "matmul operand", …
	What string
	Pos  diag.Pos  // where it is declared; zero for index names
	Type expr.Type // as checked; Unknown where its formula does not check
	// Let is a let's index in spec.Let, -1 for every other name.
	Let int
	// Usable is false for names a formula may not read (outputs, matmul
	// operands, a quantized operand's tables).
	Usable bool
}

// VisibleFrom reports whether formula i (the lets, then the outputs, in
// spec order) may use sym: an earlier let, or any other usable name.
func (sym Symbol) VisibleFrom(i int) bool {
	return sym.Usable && (sym.Let < 0 || sym.Let < i)
}

// Scope runs the formula checker over s (its diagnostics discarded: Build
// reports them) and returns the kernel as laid out so far (bindings,
// variants and args struct, for dtypes and shapes; nil when the kind is
// unknown) and every declared name, sorted by name. pi and inf are listed
// unless a spec name shadows them.
func Scope(s *spec.Spec) (*Kernel, []Symbol) {
	var junk diag.List
	k := buildKernel(s, &junk)
	if k == nil {
		return nil, nil
	}
	c := newFormulaChecker(s, k, &junk)
	c.run()
	var out []Symbol
	for name, sym := range c.symbols {
		let := -1
		if sym.kind == RefLet {
			let = sym.index
		}
		out = append(out, Symbol{Name: name, What: sym.what, Pos: sym.pos, Type: sym.typ, Let: let, Usable: sym.kind != refOperand})
	}
	for name, pos := range c.outputs {
		out = append(out, Symbol{Name: name, What: "output", Pos: pos, Let: -1})
	}
	for _, name := range []string{"pi", expr.Inf} {
		if _, taken := c.symbols[name]; !taken {
			out = append(out, Symbol{Name: name, What: "built-in constant", Type: expr.Num, Let: -1, Usable: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return k, out
}
