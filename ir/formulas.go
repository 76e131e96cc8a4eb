package ir

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/expr"
	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/spec"
)

// symbol is a name a formula may use.
type symbol struct {
	kind  RefKind
	index int
	pos   diag.Pos
	what  string // "input", "param", …, for messages
	typ   expr.Type
}

// identRE finds the names in a formula that does not parse.
var identRE = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// formulaChecker resolves and type-checks one spec's formulas.
type formulaChecker struct {
	s       *spec.Spec
	k       *Kernel
	diags   *diag.List
	symbols map[string]*symbol
	outputs map[string]diag.Pos
	lets    map[string]int // let name → index in s.Let
	trees   []expr.Node    // parsed lets then outputs; nil where parsing failed
	used    map[string]bool
	// undefined holds the undefined names reported: one message per name;
	// suggested the names their "did you mean" offered, whose being unused
	// is the same typo seen from the other side.
	undefined, suggested map[string]bool
	// pairLayout is the pair layout the kernel's formulas use, pairAt where
	// it was first used (one layout per kernel).
	pairLayout string
	pairAt     diag.Pos
	// pairWidth is the width of the kernel's pair_half reads as written
	// ("" for the whole row), pairWidthAt where it was first used (one
	// width per kernel: Rows.PairWidth).
	pairWidth   string
	pairWidthAt diag.Pos
}

func newFormulaChecker(s *spec.Spec, k *Kernel, diags *diag.List) *formulaChecker {
	return &formulaChecker{s: s, k: k, diags: diags, symbols: map[string]*symbol{},
		outputs: map[string]diag.Pos{}, lets: map[string]int{}, used: map[string]bool{}, undefined: map[string]bool{},
		suggested: map[string]bool{}}
}

// formulas returns the let bindings then the outputs.
func (c *formulaChecker) formulas() []spec.Formula {
	return append(append([]spec.Formula(nil), c.s.Let...), c.s.Outputs...)
}

func (c *formulaChecker) run() []Step {
	c.declare()
	c.checkGeneratedNames()
	all := c.formulas()
	c.trees = make([]expr.Node, len(all))
	for i, f := range all {
		tree, err := expr.Parse(f.Text)
		if err != nil {
			c.diags.Addf(f.Map.At(err.Off), "%s", err.Msg)
			// The names it mentions count as used: one mistake, one message.
			for _, name := range identRE.FindAllString(f.Text, -1) {
				c.used[name] = true
			}
			continue
		}
		c.trees[i] = tree
	}
	var steps []Step
	for i, f := range all {
		if c.trees[i] == nil {
			continue
		}
		steps = append(steps, c.step(i, f))
	}
	c.checkUnused()
	return steps
}

// declare records every name, reporting duplicates and function names.
func (c *formulaChecker) declare() {
	for i, in := range c.s.Inputs {
		c.add(in.Name, RefInput, i, "input")
		if q := in.Quant; q != nil && q.HasTables() { // quant_rows.go
			c.add(q.Scales, refOperand, i, "quantized input's scales")
			c.add(q.Biases, refOperand, i, "quantized input's biases")
		}
	}
	for i, p := range c.s.Params {
		c.add(p.Name, RefParam, i, "param")
	}
	for i, k := range c.s.Constants {
		c.add(k.Name, RefConstant, i, "constant")
	}
	c.declareMatmul()
	for i, l := range c.s.Let {
		if c.add(l.Name, RefLet, i, "let") {
			c.lets[l.Name.Name] = i
		}
	}
	for _, o := range c.s.Outputs {
		if c.add(o.Name, RefLet, -1, "output") {
			delete(c.symbols, o.Name.Name)
			c.outputs[o.Name.Name] = o.Name.Pos
		}
	}
	for _, p := range c.s.Params {
		if sym := c.symbols[p.Name.Name]; sym != nil && sym.kind == RefParam && (p.Type.Type == dtype.I32 || p.Type.Type == dtype.U32) {
			sym.typ = expr.Int // i32 and u32 params are integers (u32 read as i32, wrapping)
		}
	}
	for _, in := range c.s.Inputs {
		if sym := c.symbols[in.Name.Name]; sym != nil && sym.kind == RefInput && in.DType.Type.IsInt() {
			sym.typ = expr.Int // i8 sign-extends, u8 zero-extends, u32 wraps
		}
	}
	for _, n := range IndexNames[c.k.Kind] {
		if _, taken := c.symbols[n]; !taken && c.outputs[n].Line == 0 {
			c.symbols[n] = &symbol{kind: RefIndex, what: "index", typ: expr.Int}
		}
	}
}

// add declares one name; false if it clashes (and was reported).
func (c *formulaChecker) add(n spec.Name, kind RefKind, index int, what string) bool {
	if n.Name == "" || n.Name == "pi" { // pi is built in; spec reports it as reserved
		return false
	}
	if _, isFunc := funcs.Lookup(n.Name); isFunc {
		// Reported, but still declared so that its uses get no second error.
		c.diags.Addf(n.Pos, "%s name %q is a function of the formula language", what, n.Name)
	}
	if prev, dup := c.symbols[n.Name]; dup {
		c.diags.Addf(n.Pos, "%s name %q is already used by the %s at %s", what, n.Name, prev.what, prev.pos)
		return false
	}
	if prev, dup := c.outputs[n.Name]; dup {
		c.diags.Addf(n.Pos, "%s name %q is already used by the output at %s", what, n.Name, prev)
		return false
	}
	c.symbols[n.Name] = &symbol{kind: kind, index: index, pos: n.Pos, what: what, typ: expr.Num}
	return true
}

// step checks formula i (lets first, then outputs) and converts it.
func (c *formulaChecker) step(i int, f spec.Formula) Step {
	isOutput := i >= len(c.s.Let)
	ck := &expr.Checker{
		Resolve:   func(name string) (expr.Type, string) { return c.resolve(name, i) },
		Rowwise:   c.k.Kind == Rowwise || c.k.Kind == KindMatmul,
		NoTopK:    c.k.Kind == KindMatmul,
		IndexKind: c.k.Kind.String(),
		Report:    func(off int, msg string) { c.diags.Addf(f.Map.At(off), "%s", msg) },
	}
	ck.Indexed = c.indexed
	t := ck.Check(c.trees[i])
	if isOutput {
		c.checkOutputType(f, t)
	}
	if !isOutput {
		if sym := c.symbols[f.Name.Name]; sym != nil && sym.kind == RefLet && t != expr.Unknown {
			sym.typ = t
		}
	}
	c.checkNumbers(f, c.trees[i])
	if !c.checkPairs(f, c.trees[i]) || !c.checkSubscripts(f, c.trees[i]) {
		return Step{Name: f.Name.Name, Output: isOutput, Source: oneLine(f.Text), Expr: &Expr{Op: OpLiteral, Text: "0"}}
	}
	return Step{Name: f.Name.Name, Output: isOutput, Source: oneLine(f.Text), Expr: c.convert(c.trees[i]), At: c.coordinates(i, f)}
}

// checkOutputType matches an output's formula to its storage: a number for
// a float dtype, an integer for an integer dtype (stores keep the low bits:
// saturate with i8(…) or u8(…)); never a boolean.
func (c *formulaChecker) checkOutputType(f spec.Formula, t expr.Type) {
	isInt := f.DType.Type.IsInt()
	switch {
	case t == expr.Bool:
		c.diags.Addf(f.Name.Pos, "output %s is a boolean; outputs are numbers or integers (try select(cond, 1, 0))", f.Name.Name)
	case t == expr.Int && !isInt:
		c.diags.Addf(f.Name.Pos, "output %s is an integer stored in a float dtype: convert it with f32(…), or pin an integer dtype ({name: %s, dtype: i32, formula: …})", f.Name.Name, f.Name.Name)
	case t == expr.Num && isInt:
		conv := "i32"
		if d := f.DType.Type; d == dtype.I8 || d == dtype.U8 {
			conv = d.String()
		}
		c.diags.Addf(f.Name.Pos, "output %s is stored as %s but its formula is a number: convert it explicitly, e.g. %s(rint(…)) (halves to even, saturating)", f.Name.Name, f.DType.Type, conv)
	}
}

// resolve types a name used by formula i, or says why it cannot be used.
func (c *formulaChecker) resolve(name string, i int) (expr.Type, string) {
	if name == "pi" {
		return expr.Num, ""
	}
	if _, declared := c.symbols[name]; name == expr.Inf && !declared {
		return expr.Num, "" // +∞; a value named inf (specs older than it) shadows it
	}
	if why := c.bareIndexable(name); why != "" {
		c.used[name] = true
		return expr.Unknown, why
	}
	if sym, ok := c.symbols[name]; ok {
		if sym.kind == refOperand {
			c.used[name] = true
			if c.s.Matmul == nil { // a packed input's scales or biases (quant_rows.go)
				return expr.Unknown, fmt.Sprintf("%q is a %s: the kernel applies it as it reads %s, whose name gives the dequantized value", name, sym.what, c.s.Inputs[sym.index].Name.Name)
			}
			if sym.what != "matmul operand" { // a quantized B's scales or biases
				return expr.Unknown, fmt.Sprintf("%q is a %s: the kernel applies it as it reads the weights; formulas see the product through the accumulator (%s)", name, sym.what, c.accNames())
			}
			return expr.Unknown, fmt.Sprintf("%q is a matmul operand: formulas see its product through the accumulator (%s, A·B at the element's row and column)", name, c.accNames())
		}
		if sym.kind == RefLet && sym.index >= 0 && sym.index >= i {
			c.used[name] = true // used, though too early: reported once, here
			return expr.Unknown, c.laterLet(name, i)
		}
		c.used[name] = true
		return sym.typ, ""
	}
	if pos, ok := c.outputs[name]; ok {
		return expr.Unknown, fmt.Sprintf("%q is an output (%s); formulas can use inputs, params, constants, pi and earlier let bindings — compute it in a let and use that", name, pos)
	}
	// Said once per name, and not at all when the spec's declarations could
	// not be read whole: that error is the cause (spec.Spec.Damaged).
	if c.undefined[name] || len(c.s.Damaged) > 0 {
		return expr.Unknown, ""
	}
	c.undefined[name] = true
	if meant := diag.Closest(name, c.names(i)); meant != "" {
		c.suggested[meant] = true
		return expr.Unknown, fmt.Sprintf("undefined name %q (did you mean %q?)", name, meant)
	}
	return expr.Unknown, fmt.Sprintf("undefined name %q", name)
}

// laterLet explains a use of a let that is not defined yet, naming the
// cycle when the later binding leads back here.
func (c *formulaChecker) laterLet(name string, i int) string {
	if c.lets[name] == i {
		return fmt.Sprintf("let %s refers to itself", name)
	}
	if i < len(c.s.Let) {
		if path := c.cycle(c.lets[name], i, nil); path != nil {
			return "let cycle: " + strings.Join(append([]string{c.s.Let[i].Name.Name}, path...), " -> ")
		}
	}
	return fmt.Sprintf("let %s is defined later (%s); a formula can use only earlier let bindings", name, c.symbols[name].pos)
}

// cycle returns the names from let `from` back to let `target`, or nil.
func (c *formulaChecker) cycle(from, target int, seen map[int]bool) []string {
	if seen == nil {
		seen = map[int]bool{}
	}
	if seen[from] || c.trees[from] == nil {
		return nil
	}
	seen[from] = true
	here := c.s.Let[from].Name.Name
	for _, ref := range expr.Refs(c.trees[from]) {
		j, isLet := c.lets[ref]
		if !isLet {
			continue
		}
		if j == target {
			return []string{here, ref}
		}
		if rest := c.cycle(j, target, seen); rest != nil {
			return append([]string{here}, rest...)
		}
	}
	return nil
}

// names lists what formula i could have meant, for suggestions.
func (c *formulaChecker) names(i int) []string {
	out := []string{"pi", expr.Inf}
	for n, sym := range c.symbols {
		if sym.kind != RefLet || sym.index < i {
			out = append(out, n)
		}
	}
	return out
}

// checkNumbers rejects literals that overflow a compute type.
func (c *formulaChecker) checkNumbers(f spec.Formula, tree expr.Node) {
	types := c.k.ComputeTypes()
	expr.Walk(tree, func(n expr.Node) {
		num, ok := n.(*expr.Number)
		if !ok {
			return
		}
		if num.Int {
			if v, err := strconv.ParseInt(num.Text, 10, 32); err != nil || v > math.MaxInt32 {
				c.diags.Addf(f.Map.At(num.Off), "integer %s does not fit in 32 bits", num.Text)
			}
			return
		}
		for _, t := range types {
			if v, err := dtype.Literal(num.Text, t); err != nil || math.IsInf(v, 0) {
				c.diags.Addf(f.Map.At(num.Off), "number %s overflows the compute type %s", num.Text, t)
				return
			}
		}
	})
}

// checkPairs accepts pair_interleaved(x) and pair_half(x) only on a float
// [rows, cols] or [cols] input of a rowwise kernel, one layout per kernel; false
// when one was refused (reported), so the formula is not converted.
func (c *formulaChecker) checkPairs(f spec.Formula, tree expr.Node) bool {
	ok := true
	expr.Walk(tree, func(n expr.Node) {
		call, isCall := n.(*expr.Call)
		layout, isPair := expr.PairFuncs[fnName(call, isCall)]
		if !isPair {
			return
		}
		id, isIdent := (*expr.Ident)(nil), false
		if len(call.Args) == 1 || len(call.Args) == 2 && layout == "half" {
			id, isIdent = call.Args[0].(*expr.Ident)
		}
		if !isIdent || c.k.Kind != Rowwise {
			ok = false // reported by the checker
			return
		}
		if !c.checkWidth(f, call) {
			ok = false
			return
		}
		sym := c.symbols[id.Name]
		if sym == nil || sym.kind != RefInput {
			if sym != nil {
				c.diags.Addf(f.Map.At(id.Off), "%s takes a float [rows, cols] or [cols] input; %s is a %s", call.Fn, id.Name, sym.what)
			}
			ok = false
			return
		}
		if in := c.s.Inputs[sym.index]; len(in.Dims) == 1 && in.Dims[0] != "cols" || in.DType.Type.IsInt() || in.Quant != nil {
			c.diags.Addf(f.Map.At(id.Off), "%s takes a float [rows, cols] or [cols] input; %s is %s", call.Fn, id.Name, describeInput(in))
			ok = false
			return
		}
		if c.pairLayout == "" {
			c.pairLayout, c.pairAt = layout, f.Map.At(call.Off)
		} else if c.pairLayout != layout {
			c.diags.Addf(f.Map.At(call.Off), "%s mixes pair layouts: this kernel already pairs %s (%s)", call.Fn, c.pairLayout, c.pairAt)
			ok = false
		}
	})
	return ok
}

// checkWidth checks pair_half(x, w)'s width: one value per row, computed
// before the row's passes (Rows.PairWidth), so w may use literals, params,
// constants, the sizes and row, and lets of those — not col, an input's
// elements, a reduction or another pair read; and every pair_half of a
// kernel pairs across the same width. false when it was refused (reported).
func (c *formulaChecker) checkWidth(f spec.Formula, call *expr.Call) bool {
	width, at := "", f.Map.At(call.Off)
	if len(call.Args) == 2 {
		w := call.Args[1]
		if !c.convert(w).Int {
			return false // not an integer: reported by the checker
		}
		if why := c.varying(w, map[string]bool{}); why != "" {
			c.diags.Addf(f.Map.At(w.Offset()), "the width of %s is one value per row (params, constants, sizes and lets of those); it may not use %s", call.Fn, why)
			return false
		}
		width, at = c.k.FormatExpr(c.convert(w)), f.Map.At(w.Offset())
	}
	if c.pairLayout == "" || c.pairLayout != "half" {
		c.pairWidth, c.pairWidthAt = width, at
		return true
	}
	if width != c.pairWidth {
		was := "the whole row"
		if c.pairWidth != "" {
			was = c.pairWidth
		}
		c.diags.Addf(at, "%s mixes pair widths: this kernel already pairs across %s (%s)", call.Fn, was, c.pairWidthAt)
		return false
	}
	return true
}

// varying says what in n changes along a row or is not a value of the row
// alone (col, an input's element, a reduction, a pair read), following
// lets; "" when nothing does. seen holds the lets already followed.
func (c *formulaChecker) varying(n expr.Node, seen map[string]bool) string {
	why := ""
	expr.Walk(n, func(n expr.Node) {
		if why != "" {
			return
		}
		switch v := n.(type) {
		case *expr.Index:
			why = v.Name + "[…] (a tensor's element)"
		case *expr.Call:
			if _, isPair := expr.PairFuncs[v.Fn]; isPair {
				why = v.Fn + " (an element of the row)"
			} else if fn, ok := funcs.Lookup(v.Fn); ok && fn.Reduction {
				why = v.Fn + " (a reduction over the row's elements)"
			}
		case *expr.Ident:
			sym := c.symbols[v.Name]
			switch {
			case sym == nil:
			case sym.kind == RefIndex && v.Name == "col":
				why = "col, which changes along the row"
			case sym.kind == RefInput:
				why = "input " + v.Name + " (a tensor's elements)"
			case sym.kind == RefLet && sym.index >= 0 && !seen[v.Name]:
				seen[v.Name] = true
				if t := c.trees[sym.index]; t != nil {
					if inner := c.varying(t, seen); inner != "" {
						why = "let " + v.Name + ", which uses " + inner
					}
				}
			}
		}
	})
	return why
}

func fnName(call *expr.Call, isCall bool) string {
	if !isCall {
		return ""
	}
	return call.Fn
}

// describeInput says what an input that cannot be paired is.
func describeInput(in spec.Input) string {
	if in.Quant != nil {
		return "quantized (" + in.Quant.String() + "), read by element (bare or by subscript), not in pairs"
	}
	if in.DType.Type.IsInt() {
		return "an integer tensor (" + in.DType.Type.String() + ")"
	}
	return "a [" + strings.Join(in.Dims, ", ") + "] tensor"
}

// checkUnused reports inputs, params, constants and lets no output depends
// on — but not what follows from an error reported already: nothing when a
// declaring field is damaged (outputs misspelt leave everything unused), not
// a name an undefined name was suggested to mean, not a let whose own
// formula does not parse.
func (c *formulaChecker) checkUnused() {
	if len(c.s.Damaged) > 0 {
		return
	}
	for name, sym := range c.symbols {
		if c.used[name] || c.suggested[name] || sym.kind == RefLet && sym.index >= 0 && c.trees[sym.index] == nil {
			continue
		}
		switch sym.kind {
		case RefInput, RefParam, RefConstant, RefLet, RefAcc:
			c.diags.Addf(sym.pos, "%s %s is never used", sym.what, name)
		}
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// refOperand marks a matmul operand's name: declared so that a formula
// using it gets a precise message, never a value.
const refOperand RefKind = -1

// declareMatmul declares a matmul's operands (not usable in formulas) and
// its accumulators (RefAcc, by B index).
func (c *formulaChecker) declareMatmul() {
	m := c.s.Matmul
	if m == nil || c.s.Kind != spec.Matmul {
		return
	}
	c.add(m.A.Name, refOperand, 0, "matmul operand")
	for i, b := range m.B {
		c.add(b.Name, refOperand, 1+i, "matmul operand")
		if q := b.Quant; q != nil && q.HasTables() {
			c.add(q.Scales, refOperand, 1+i, "quantized operand's scales")
			c.add(q.Biases, refOperand, 1+i, "quantized operand's biases")
		}
	}
	for i, b := range m.B {
		c.add(b.Acc, RefAcc, i, "accumulator")
	}
	if t := m.Then; t != nil { // a chain: the second product, acc2 = weights · V
		c.add(t.Name, refOperand, 1+len(m.B), "matmul operand")
		c.add(t.Acc, RefAcc, len(m.B), "accumulator")
	}
}

// accNames lists a matmul's accumulator names, for messages.
func (c *formulaChecker) accNames() string {
	var out []string
	for _, b := range c.s.Matmul.B {
		out = append(out, b.Acc.Name)
	}
	if t := c.s.Matmul.Then; t != nil {
		out = append(out, t.Acc.Name)
	}
	return strings.Join(out, ", ")
}
