package expr

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

type tokKind int

const (
	tokEOF tokKind = iota
	tokNumber
	tokIdent
	tokOp
	tokLParen
	tokRParen
	tokComma
	tokLBrack
	tokRBrack
)

type token struct {
	kind tokKind
	off  int
	text string
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "the end of the formula"
	case tokNumber:
		return "number " + t.text
	case tokIdent:
		return "name " + t.text
	}
	return "`" + t.text + "`"
}

// operators, longest first so that "<=" wins over "<" and "<<" over both.
var operators = []string{"<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+", "-", "*", "/", "%", "&", "|", "^", "<", ">", "!"}

// lex splits a formula into tokens; the last is always tokEOF.
func lex(src string) ([]token, *Error) {
	var toks []token
	terms := 0
	for i := 0; i < len(src); {
		if c := src[i]; (isDigit(c) || isLetter(c) || c == '.') && terms == MaxTerms {
			return nil, &Error{Off: i, Msg: fmt.Sprintf("formula has more than %d terms (numbers and names); split it with let", MaxTerms)}
		}
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			n, err := lexNumber(src, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{tokNumber, i, src[i : i+n]})
			terms++
			i += n
		case isLetter(c):
			j := i + 1
			for j < len(src) && (isLetter(src[j]) || isDigit(src[j])) {
				j++
			}
			toks = append(toks, token{tokIdent, i, src[i:j]})
			terms++
			i = j
		case c == '(':
			toks = append(toks, token{tokLParen, i, "("})
			i++
		case c == ')':
			toks = append(toks, token{tokRParen, i, ")"})
			i++
		case c == '[':
			toks = append(toks, token{tokLBrack, i, "["})
			i++
		case c == ']':
			toks = append(toks, token{tokRBrack, i, "]"})
			i++
		case c == ',':
			toks = append(toks, token{tokComma, i, ","})
			i++
		default:
			op := matchOperator(src[i:])
			if op == "" {
				return nil, unexpectedChar(src, i)
			}
			toks = append(toks, token{tokOp, i, op})
			i += len(op)
		}
	}
	return append(toks, token{tokEOF, len(src), ""}), nil
}

func matchOperator(s string) string {
	for _, op := range operators {
		if strings.HasPrefix(s, op) {
			return op
		}
	}
	return ""
}

func unexpectedChar(src string, i int) *Error {
	r, _ := utf8.DecodeRuneInString(src[i:])
	msg := fmt.Sprintf("unexpected character %q", r)
	if r == '=' {
		msg += " (did you mean \"==\"?)"
	}
	return &Error{Off: i, Msg: msg}
}

// lexNumber returns the length of the number literal at src[i:].
func lexNumber(src string, i int) (int, *Error) {
	j := i
	digits := func() int {
		k := j
		for j < len(src) && isDigit(src[j]) {
			j++
		}
		return j - k
	}
	digits()
	if j < len(src) && src[j] == '.' {
		j++
		digits()
	}
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
		j++
		if j < len(src) && (src[j] == '+' || src[j] == '-') {
			j++
		}
		if digits() == 0 {
			return 0, &Error{Off: i, Msg: fmt.Sprintf("malformed number %q: exponent has no digits", src[i:j])}
		}
	}
	if j < len(src) && (isLetter(src[j]) || src[j] == '.') {
		return 0, &Error{Off: i, Msg: fmt.Sprintf("malformed number starting %q (decimal and scientific literals only, no suffixes)", src[i:j+1])}
	}
	return j - i, nil
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
