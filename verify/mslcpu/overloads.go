package mslcpu

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Two more rewrites of real projects' MSL, kept apart from source.go's.
//
// Half and bfloat literals: Metal writes `1.0h` (half) and `1.0bf`
// (bfloat). clang accepts `1.0f16` for _Float16, which the literal's
// decimal text rounds to once, as Metal's does; bfloat has no suffix in
// clang, so `1.0bf` becomes `((bfloat)1.0)`: the decimal text rounded to
// double and then to bfloat (a double rounding that can differ from
// Metal's only for decimal strings within 2^-53 relative of a bfloat
// rounding boundary; no short literal is).
//
// Address-space overloads: Metal lets a member function be qualified by
// the address space of its object (`complex_t() threadgroup : ...`,
// `T get() const device {...}`) and overloads free functions on the address
// space of a reference (`thread T& a` vs `threadgroup T& a`). On the CPU
// every address space is one memory, so those overloads collapse into
// redefinitions. The qualifiers are blanked, and of the variants that
// collapse into one C++ signature in one scope, the `thread` one (else the
// first) is kept and the others get a false requires-clause (`requires (1 < 0)`): C++20 treats them as
// distinct, never-viable overloads, so nothing else about the code changes.
// A collapsed pair in a scope that is not a template cannot take a
// requires-clause; clang then reports it at the file and line.

var (
	literalRe = regexp.MustCompile(`(^|[^\w.])((?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)(h|H|bf|BF)\b`)
	// qualRe finds a parameter list's `)` followed by qualifiers with at
	// least one address space, then the start of a body or initialiser.
	qualRe       = regexp.MustCompile(`\)((?:\s*\b(?:const|volatile|thread|threadgroup|device|constant)\b)+)\s*(?:[:{]|=\s*default\b)`)
	asWordRe     = regexp.MustCompile(`\b(?:thread|threadgroup|device|constant|KGEN_TG_PTR)\b`)
	bodyRe       = regexp.MustCompile(`\)\s*(?:const\s*)?(?:\{|=\s*default\b)`)
	accessSpecRe = regexp.MustCompile(`^\s*(?:public|private|protected)\s*:`)
	qualAS       = regexp.MustCompile(`\b(?:thread|threadgroup|device|constant)\b`)
	nonThread    = regexp.MustCompile(`\b(?:threadgroup|device|constant)\b`)
	// defaultCtorRe is a defaulted default constructor, address-space
	// qualified or not (`constexpr MD<T>() threadgroup = default;`).
	defaultCtorRe = regexp.MustCompile(`(?:\b(?:constexpr|inline|explicit)\s+)*\b(\w+)\s*(?:<[^<>;{}()]*>)?\s*\(\s*\)(?:\s*\b(?:const|thread|threadgroup|device|constant)\b)*\s*=\s*default\s*;`)
)

// defaultedCtors blanks the defaulted default constructors of classes that
// declare no other constructor. Metal's language is C++14's, where such a
// class (`struct indexed { constexpr indexed<T>() threadgroup = default;
// uint i; T val; }`) is still an aggregate and `indexed<T>{0, v}` works;
// C++20 makes any user-declared constructor end aggregate initialisation.
// Without them the implicit default constructor is the same one.
func defaultedCtors(masked []byte) []edit {
	var edits []edit
	scopes := enclosingBraces(masked)
	for _, m := range defaultCtorRe.FindAllSubmatchIndex(masked, -1) {
		body := scopes[m[0]]
		if body < 0 {
			continue
		}
		end := body + 1
		for end < len(masked) && scopes[end] != scopes[body] {
			end++
		}
		name := string(masked[m[2]:m[3]])
		ctor := regexp.MustCompile(`(?:^|[^~\w])` + regexp.QuoteMeta(name) + `\s*(?:<[^<>;{}()]*>)?\s*\(`)
		all, defaulted := 0, 0
		for _, c := range ctor.FindAllIndex(masked[body:end], -1) {
			if scopes[body+c[0]+1] == body {
				all++
			}
		}
		for _, d := range defaultCtorRe.FindAllSubmatchIndex(masked[body:end], -1) {
			if scopes[body+d[0]] == body && string(masked[body+d[2]:body+d[3]]) == name {
				defaulted++
			}
		}
		if all == defaulted {
			edits = append(edits, edit{m[0], m[1], keepLines(masked[m[0]:m[1]], "")})
		}
	}
	return edits
}

// literalSuffixes rewrites Metal's half and bfloat literal suffixes.
func literalSuffixes(masked []byte) []edit {
	var edits []edit
	for _, m := range literalRe.FindAllSubmatchIndex(masked, -1) {
		num := string(masked[m[4]:m[5]])
		if strings.EqualFold(string(masked[m[6]:m[7]]), "h") {
			edits = append(edits, edit{m[4], m[7], num + "f16"})
		} else {
			edits = append(edits, edit{m[4], m[7], "((bfloat)" + num + ")"})
		}
	}
	return edits
}

// addressSpaceOverloads blanks address-space qualifiers of member functions
// and disables the variants that collapse into one signature (see above).
func addressSpaceOverloads(masked []byte) []edit {
	type variant struct {
		at     int  // where `requires false` would go
		thread bool // written for thread memory (or no address space)
	}
	var edits []edit
	groups := map[string][]variant{}
	var order []string
	scopes := enclosingBraces(masked)
	add := func(close, at int, quals string) {
		open := matchParenBack(masked, close)
		if open < 0 || quals == "" && !asWordRe.Match(masked[open:close]) {
			return // a body after parameters without address spaces
		}
		start := statementStart(masked, open)
		sig := string(masked[start : close+1])
		if !asWordRe.MatchString(sig) && !qualAS.MatchString(quals) {
			return
		}
		thread := !nonThread.MatchString(sig) && !nonThread.MatchString(quals)
		sig = accessSpecRe.ReplaceAllString(sig, "")
		sig = strings.ReplaceAll(sig, "constant", "const")
		sig = asWordRe.ReplaceAllString(sig, "")
		q := strings.Join(strings.Fields(qualAS.ReplaceAllString(quals, "")), " ")
		key := strconv.Itoa(scopes[start]) + "|" + strings.Join(strings.Fields(sig), " ") + "|" + q
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], variant{at, thread})
	}
	seen := map[int]bool{}
	for _, m := range qualRe.FindAllSubmatchIndex(masked, -1) {
		for _, w := range qualAS.FindAllIndex(masked[m[2]:m[3]], -1) {
			edits = append(edits, edit{m[2] + w[0], m[2] + w[1], strings.Repeat(" ", w[1]-w[0])})
		}
		add(m[0], bodyAt(masked, m[0], m[1]), string(masked[m[2]:m[3]]))
		seen[m[0]] = true
	}
	for _, m := range bodyRe.FindAllIndex(masked, -1) {
		if !seen[m[0]] {
			add(m[0], bodyAt(masked, m[0], m[1]), "")
		}
	}
	for _, key := range order {
		vs := groups[key]
		if len(vs) < 2 {
			continue
		}
		keep := 0
		for i, v := range vs {
			if v.thread {
				keep = i
				break
			}
		}
		for i, v := range vs {
			if i != keep { // distinct constraints: identical ones would redeclare
				edits = append(edits, edit{v.at, v.at, fmt.Sprintf(" requires (%d < 0) ", i)})
			}
		}
	}
	return edits
}

// bodyAt is where a requires-clause goes in a match ending in the body's
// `{`, an initialiser's `:` or `= default`: before that token.
func bodyAt(b []byte, start, end int) int {
	if b[end-1] == '{' || b[end-1] == ':' {
		return end - 1
	}
	return start + bytes.LastIndexByte(b[start:end], '=')
}

// enclosingBraces maps each offset to the offset of the innermost `{`
// around it (-1 at file scope), so that overloads are grouped per scope.
func enclosingBraces(b []byte) []int {
	out := make([]int, len(b)+1)
	stack := []int{-1}
	for i := 0; i < len(b); i++ {
		out[i] = stack[len(stack)-1]
		switch b[i] {
		case '"', '\'':
			j := skipQuoted(b, i)
			for k := i; k <= j && k < len(b); k++ {
				out[k] = stack[len(stack)-1]
			}
			i = j
		case '{':
			stack = append(stack, i)
		case '}':
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	out[len(b)] = stack[len(stack)-1]
	return out
}

// matchParenBack returns the `(` matching the `)` at close, or -1.
func matchParenBack(b []byte, close int) int {
	depth := 0
	for i := close; i >= 0; i-- {
		switch b[i] {
		case ')':
			depth++
		case '(':
			depth--
			if depth == 0 {
				return i
			}
		case ';', '{', '}':
			return -1
		}
	}
	return -1
}

// afterOperator reports whether the code before pos ends in `operator`.
func afterOperator(b []byte, pos int) bool {
	i := pos
	for i > 0 && (b[i-1] == ' ' || b[i-1] == '\t' || b[i-1] == '\n') {
		i--
	}
	const kw = "operator"
	return i >= len(kw) && string(b[i-len(kw):i]) == kw && (i == len(kw) || !isIdent(b[i-len(kw)-1]))
}

func isIdent(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// statementStart returns the offset after the `;`, `{` or `}` that precedes
// pos: the start of the declaration a parameter list belongs to.
func statementStart(b []byte, pos int) int {
	for i := pos - 1; i >= 0; i-- {
		if b[i] == ';' || b[i] == '{' || b[i] == '}' {
			return i + 1
		}
	}
	return 0
}
