package mslcpu

import (
	"regexp"
)

// C-style casts to vector types. In MSL `(half4) x` with x a float4
// converts each component (spec 2.14.1 "Implicit Type Conversions" and
// 2.14.2 "Type Conversions" of vectors); in clang a C-style cast between
// ext vectors is a bit cast when the sizes agree and an error when they do
// not. Every `(T) operand` whose T is a type name — one of Metal's built-in
// scalar, vector and matrix names, or a name the file declares as a type
// (template parameter, typedef, using, struct or class), since a template's
// `(type4) x` may be a vector cast — becomes `::kgen::ccast<T>(operand)`,
// which converts vectors and otherwise casts as C++ does.

var (
	cCastRe = regexp.MustCompile(`\(\s*((?:::)?[A-Za-z_]\w*)\s*\)`)
	// typeDeclRe finds names the file declares as types.
	typeDeclRe    = regexp.MustCompile(`\b(?:typename|class|struct|union|enum)\s+([A-Za-z_]\w*)|\busing\s+([A-Za-z_]\w*)\s*=|\btypedef\b[^;{}]*?\b([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*;`)
	builtinTypeRe = regexp.MustCompile(`^(?:metal::|::)?(?:(?:float|half|bfloat|int|uint|short|ushort|char|uchar|long|ulong|bool)(?:[234]|[234]x[234])?|size_t|ptrdiff_t|u?int(?:8|16|32|64)_t|schar|signed|unsigned)$`)
)

// Functional casts `T(x)` whose T is a template type parameter are C-style
// casts too in C++ (a bit cast between same-sized vectors): they become
// `::kgen::fcast<T>(x)`, Metal's vector constructor when T is a vector.
var (
	templateListRe = regexp.MustCompile(`\btemplate\s*<((?:[^<>;{}]|<[^<>;{}]*>)*)>`)
	typeParamRe    = regexp.MustCompile(`\b(?:typename|class)\s+([A-Za-z_]\w*)`)
	callRe         = regexp.MustCompile(`\b([A-Za-z_]\w*)\s*\(`)
)

func functionalCasts(masked []byte) []edit {
	params := map[string]bool{}
	for _, m := range templateListRe.FindAllSubmatch(masked, -1) {
		for _, p := range typeParamRe.FindAllSubmatch(m[1], -1) {
			params[string(p[1])] = true
		}
	}
	var edits []edit
	for _, m := range callRe.FindAllSubmatchIndex(masked, -1) {
		if !params[string(masked[m[2]:m[3]])] || m[0] > 0 && (masked[m[0]-1] == '~' || masked[m[0]-1] == ':') {
			continue
		}
		if c := prevNonSpace(masked, m[0]); isIdent(c) && !exprKeywords[prevWord(masked, m[0])] || c == '.' || c == '>' && m[0] > 1 && prevNonSpace(masked, m[0]-1) == '-' {
			continue // a declaration (`static T(x)` is not C++ either), operator T(), p->T(
		}
		edits = append(edits, edit{m[0], m[1], "::kgen::fcast<" + string(masked[m[2]:m[3]]) + ">("})
	}
	return edits
}

// unrollPragmaRe is `#pragma unroll(N)`, whose N clang evaluates after the
// project's macros are gone (MIN(...) in llama.cpp): an optimisation hint,
// blanked.
var unrollPragmaRe = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*pragma[ \t]+unroll\b.*$`)

func unrollPragmas(masked []byte) []edit {
	var edits []edit
	for _, m := range unrollPragmaRe.FindAllIndex(masked, -1) {
		edits = append(edits, edit{m[0], m[1], ""})
	}
	return edits
}

// cStyleCasts rewrites C-style casts to type names (see above).
func cStyleCasts(masked []byte) []edit {
	types := map[string]bool{}
	for _, m := range typeDeclRe.FindAllSubmatch(masked, -1) {
		for _, g := range m[1:] {
			if g != nil {
				types[string(g)] = true
			}
		}
	}
	var edits []edit
	for _, m := range cCastRe.FindAllSubmatchIndex(masked, -1) {
		name := string(masked[m[2]:m[3]])
		if !types[name] && !builtinTypeRe.MatchString(name) {
			continue
		}
		if m[0] > 0 {
			// f(T), sizeof(T), decltype(T), a parameter list: not a cast.
			if c := prevNonSpace(masked, m[0]); isIdent(c) && !exprKeywords[prevWord(masked, m[0])] || c == ')' || c == ']' || c == '>' {
				continue
			}
		}
		end := castOperandEnd(masked, m[1], types)
		if end < 0 {
			continue
		}
		edits = append(edits, edit{m[0], m[1], "::kgen::ccast<" + name + ">("}, edit{end, end, ")"})
	}
	return edits
}

// exprKeywords are the keywords an expression may follow.
var exprKeywords = map[string]bool{"return": true, "else": true, "case": true, "do": true, "co_return": true, "co_yield": true, "throw": true}

// prevWord returns the identifier that ends before i (after spaces).
func prevWord(b []byte, i int) string {
	j := i
	for j > 0 && (b[j-1] == ' ' || b[j-1] == '\t' || b[j-1] == '\n' || b[j-1] == '\r') {
		j--
	}
	k := j
	for k > 0 && isIdent(b[k-1]) {
		k--
	}
	return string(b[k:j])
}

func prevNonSpace(b []byte, i int) byte {
	for i--; i >= 0; i-- {
		if c := b[i]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c
		}
	}
	return 0
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// castOperandEnd returns where the unary expression that starts at i ends
// (prefix operators, a primary expression, then postfix operators), or -1
// when none starts there (`(T)` was not a cast).
func castOperandEnd(b []byte, i int, types map[string]bool) int {
	i = skipSpace(b, i)
	for i < len(b) && (b[i] == '-' || b[i] == '+' || b[i] == '!' || b[i] == '~' || b[i] == '*' || b[i] == '&') {
		i = skipSpace(b, i+1)
	}
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '(':
		if m := cCastRe.FindSubmatchIndex(b[i:]); m != nil && m[0] == 0 {
			if name := string(b[i+m[2] : i+m[3]]); types[name] || builtinTypeRe.MatchString(name) {
				return castOperandEnd(b, i+m[1], types) // (T)(U) x
			}
		}
		j := matchForward(b, i)
		if j < 0 {
			return -1
		}
		i = j + 1
	case isIdent(c) || c == '.' && i+1 < len(b) && b[i+1] >= '0' && b[i+1] <= '9':
		i = identOrNumberEnd(b, i)
	default:
		return -1
	}
	// Postfix operators: calls, subscripts, members, scope.
	for {
		j := skipSpace(b, i)
		switch {
		case j < len(b) && (b[j] == '(' || b[j] == '['):
			k := matchForward(b, j)
			if k < 0 {
				return i
			}
			i = k + 1
		case j+1 < len(b) && b[j] == '.' && isIdent(b[j+1]):
			i = identOrNumberEnd(b, skipSpace(b, j+1))
		case j+2 < len(b) && (string(b[j:j+2]) == "->" || string(b[j:j+2]) == "::"):
			k := skipSpace(b, j+2)
			if k >= len(b) || !isIdent(b[k]) {
				return i
			}
			i = identOrNumberEnd(b, k)
		default:
			return i
		}
	}
}

// identOrNumberEnd skips an identifier or a numeric literal (with an
// exponent's sign: 1e-5f).
func identOrNumberEnd(b []byte, i int) int {
	number := b[i] >= '0' && b[i] <= '9' || b[i] == '.'
	for i < len(b) {
		c := b[i]
		switch {
		case isIdent(c):
			i++
		case number && c == '.':
			i++
		case number && (c == '-' || c == '+') && (b[i-1] == 'e' || b[i-1] == 'E' || b[i-1] == 'p' || b[i-1] == 'P') && !isHexNumber(b, i):
			i++
		default:
			return i
		}
	}
	return i
}

// isHexNumber reports whether the literal before i is hexadecimal with no
// p exponent yet (0x1e+2 is 0x1e plus 2).
func isHexNumber(b []byte, i int) bool {
	j := i - 1
	for j > 0 && (isIdent(b[j-1]) || b[j-1] == '.') {
		j--
	}
	lit := string(b[j:i])
	return len(lit) > 1 && (lit[1] == 'x' || lit[1] == 'X') && b[i-1] != 'p' && b[i-1] != 'P'
}

// matchForward returns the bracket matching the ( or [ at i, or -1.
func matchForward(b []byte, i int) int {
	depth := 0
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"', '\'':
			j = skipQuoted(b, j)
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				return j
			}
		case ';':
			return -1
		}
	}
	return -1
}
