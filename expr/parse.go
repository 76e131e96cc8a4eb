package expr

import (
	"fmt"
	"strings"
)

// Error is a problem at a byte offset of the formula.
type Error struct {
	Off int
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("offset %d: %s", e.Off, e.Msg) }

// Limits on one formula, so that hostile input can neither exhaust the
// stack nor make any stage slow, and so that the generated code stays
// within what compilers accept (clang, and so Metal, refuses brackets
// nested deeper than 256; an f16 or bf16 level writes up to three).
const (
	// MaxHeight is the deepest an operator or call may sit over a value:
	// a + b + c is two levels, f(g(x)) two, and parentheses add none.
	// Every later walk of a formula costs at most MaxHeight per term.
	MaxHeight = 64
	// MaxTerms is the most numbers and names one formula may hold.
	MaxTerms = 10000
	// maxDepth bounds the parser's own recursion (parentheses included).
	maxDepth = 200
)

type parser struct {
	toks   []token
	i      int
	depth  int
	height int // the height of the node just parsed
	err    *Error
}

// Parse parses a formula. It stops at the first syntax error, which it
// returns with its offset.
func Parse(src string) (Node, *Error) {
	toks, lexErr := lex(src)
	if lexErr != nil {
		return nil, lexErr
	}
	p := &parser{toks: toks}
	n := p.expr(1)
	if p.err == nil && p.peek().kind != tokEOF {
		t := p.peek()
		p.fail(t.off, "unexpected %s after the end of the formula", t.describe())
	}
	if p.err != nil {
		return nil, p.err
	}
	return n, nil
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) fail(off int, format string, args ...any) {
	if p.err == nil {
		p.err = &Error{Off: off, Msg: fmt.Sprintf(format, args...)}
	}
}

// precedence follows Go: || 1, && 2, comparisons 3, + - | ^ 4,
// * / % << >> & 5.
func precedence(op string) int {
	switch op {
	case "||":
		return 1
	case "&&":
		return 2
	case "<", "<=", ">", ">=", "==", "!=":
		return 3
	case "+", "-", "|", "^":
		return 4
	case "*", "/", "%", "<<", ">>", "&":
		return 5
	}
	return 0
}

// expr parses binary operators of precedence >= min (precedence climbing).
func (p *parser) expr(min int) Node {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		p.fail(p.peek().off, "formula nests deeper than %d levels", maxDepth)
		return nil
	}
	x := p.unary()
	for p.err == nil {
		t := p.peek()
		prec := 0
		if t.kind == tokOp {
			prec = precedence(t.text)
		}
		if prec < min || prec == 0 {
			return x
		}
		p.next()
		xh := p.height
		y := p.expr(prec + 1)
		x = &Binary{X: x, Op: t.text, OpOff: t.off, Y: y}
		p.rise(max(xh, p.height), t.off)
	}
	return x
}

// rise sets the height of an operator or call over operands of height h,
// and refuses one over MaxHeight, at off.
func (p *parser) rise(h, off int) {
	p.height = h + 1
	if p.height > MaxHeight {
		p.fail(off, "formula nests deeper than %d levels (each operator and call over its operands is one: a + b + c is two); split it with let", MaxHeight)
	}
}

func (p *parser) unary() Node {
	t := p.peek()
	if t.kind == tokOp && (t.text == "-" || t.text == "!") {
		p.next()
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxDepth {
			p.fail(t.off, "formula nests deeper than %d levels", maxDepth)
			return nil
		}
		u := &Unary{Off: t.off, Op: t.text, X: p.unary()}
		p.rise(p.height, t.off)
		return u
	}
	return p.primary()
}

func (p *parser) primary() Node {
	t := p.next()
	p.height = 0
	switch t.kind {
	case tokNumber:
		return &Number{Off: t.off, Text: t.text}
	case tokIdent:
		if p.peek().kind == tokLParen {
			return p.call(t)
		}
		if p.peek().kind == tokLBrack {
			return p.index(t)
		}
		return &Ident{Off: t.off, Name: t.text}
	case tokLParen:
		x := p.expr(1)
		if p.err == nil && p.peek().kind == tokEOF {
			// Point at the '(' left open, not at the end of the formula.
			p.fail(t.off, "this `(` is never closed")
		}
		p.expect(tokRParen, "`)`")
		return &Paren{Off: t.off, X: x}
	case tokEOF:
		p.fail(t.off, "formula ends where a value was expected")
	default:
		p.fail(t.off, "expected a value, found %s", t.describe())
	}
	return nil
}

func (p *parser) call(name token) Node {
	p.next() // (
	c := &Call{Off: name.off, Fn: name.text}
	if p.peek().kind == tokRParen {
		p.next()
		p.rise(0, name.off)
		return c
	}
	h := 0
	defer func() { p.rise(h, name.off) }()
	for p.err == nil {
		c.Args = append(c.Args, p.expr(1))
		h = max(h, p.height)
		if p.peek().kind == tokComma {
			p.next()
			continue
		}
		p.expect(tokRParen, "`,` or `)` in the arguments of %s", name.text)
		break
	}
	return c
}

// index parses name[e1, …, eN] (at least one coordinate).
func (p *parser) index(name token) Node {
	open := p.next() // [
	x := &Index{Off: name.off, Name: name.text}
	if p.peek().kind == tokRBrack {
		p.fail(open.off, "subscript of %s has no coordinates: write one integer per dimension, e.g. %s[row, col]", name.text, name.text)
		return x
	}
	h := 0
	defer func() { p.rise(h, name.off) }()
	for p.err == nil {
		x.Args = append(x.Args, p.expr(1))
		h = max(h, p.height)
		if p.peek().kind == tokComma {
			p.next()
			continue
		}
		if p.err == nil && p.peek().kind == tokEOF {
			p.fail(open.off, "this `[` is never closed")
		}
		p.expect(tokRBrack, "`,` or `]` in the subscript of %s", name.text)
		break
	}
	return x
}

func (p *parser) expect(kind tokKind, format string, args ...any) {
	t := p.peek()
	if t.kind == kind {
		p.next()
		return
	}
	want := fmt.Sprintf(format, args...)
	p.fail(t.off, "expected %s, found %s", want, t.describe())
}

// String renders a tree back as formula text, in canonical spacing.
func String(n Node) string {
	var b strings.Builder
	write(&b, n)
	return b.String()
}

func write(b *strings.Builder, n Node) {
	switch v := n.(type) {
	case *Number:
		b.WriteString(v.Text)
	case *Ident:
		b.WriteString(v.Name)
	case *Unary:
		b.WriteString(v.Op)
		write(b, v.X)
	case *Binary:
		write(b, v.X)
		b.WriteString(" " + v.Op + " ")
		write(b, v.Y)
	case *Call:
		b.WriteString(v.Fn + "(")
		for i, a := range v.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			write(b, a)
		}
		b.WriteString(")")
	case *Paren:
		b.WriteString("(")
		write(b, v.X)
		b.WriteString(")")
	case *Index:
		b.WriteString(v.Name + "[")
		for i, a := range v.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			write(b, a)
		}
		b.WriteString("]")
	}
}
