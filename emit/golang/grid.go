package golang

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/dave/jennifer/jen"
)

// gridExpr turns one of the inventory's grid expressions into Go, so that
// the launcher computes its dispatch from the very text the inventory shows.
// The grammar is the contract's:
//
//	expr   = term { ("+" | "-") term }
//	term   = factor { "*" factor }
//	factor = integer | size-field | "ceildiv(" expr "," expr ")" | "(" expr ")"
func gridExpr(src string, sizes map[string]bool) (jen.Code, error) {
	p := &gridParser{toks: gridTokens(src), sizes: sizes}
	code := p.expr()
	if p.err == nil && p.pos < len(p.toks) {
		p.err = fmt.Errorf("unexpected %q", p.toks[p.pos])
	}
	return code, p.err
}

// gridTokens splits an expression into integers, names and punctuation.
func gridTokens(src string) []string {
	var out []string
	for i := 0; i < len(src); {
		r := rune(src[i])
		switch {
		case unicode.IsSpace(r):
			i++
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_':
			j := i
			for j < len(src) && (unicode.IsLetter(rune(src[j])) || unicode.IsDigit(rune(src[j])) || src[j] == '_') {
				j++
			}
			out = append(out, src[i:j])
			i = j
		default:
			out = append(out, src[i:i+1])
			i++
		}
	}
	return out
}

type gridParser struct {
	toks  []string
	pos   int
	sizes map[string]bool
	err   error
}

func (p *gridParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *gridParser) expect(tok string) {
	if p.peek() != tok {
		p.fail("want %q, got %q", tok, p.peek())
		return
	}
	p.pos++
}

func (p *gridParser) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf(format, args...)
	}
}

func (p *gridParser) expr() *jen.Statement {
	code := p.term()
	for p.err == nil && (p.peek() == "+" || p.peek() == "-") {
		op := p.toks[p.pos]
		p.pos++
		code = jen.Add(code).Op(op).Add(p.term())
	}
	return code
}

func (p *gridParser) term() *jen.Statement {
	code := p.factor()
	for p.err == nil && p.peek() == "*" {
		p.pos++
		code = jen.Add(code).Op("*").Add(p.factor())
	}
	return code
}

func (p *gridParser) factor() *jen.Statement {
	tok := p.peek()
	p.pos++
	switch {
	case tok == "(":
		inner := p.expr()
		p.expect(")")
		return jen.Parens(inner)
	case tok == "ceildiv":
		p.expect("(")
		a := p.expr()
		p.expect(",")
		b := p.expr()
		p.expect(")")
		return rt("CeilDiv").Call(a, b)
	case tok != "" && strings.Trim(tok, "0123456789") == "":
		v, err := strconv.Atoi(tok)
		if err != nil {
			p.fail("integer %s: %v", tok, err)
		}
		return jen.Lit(v)
	case p.sizes[tok]:
		return jen.Id(tok)
	}
	p.fail("unexpected %q (grid expressions use integers, + - *, ceildiv and the size fields)", tok)
	return jen.Null()
}
