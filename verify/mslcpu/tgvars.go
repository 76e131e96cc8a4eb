package mslcpu

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// Kernel-scope threadgroup arrays. The shim's `threadgroup` macro would make
// `threadgroup float x[N];` a function static in one shared section, where
// an overrun lands silently in the next array and no sanitizer looks. The
// pre-pass rewrites each such declaration, on its own line, to
//
//	using kgen_tg_x = float[N]; static_assert(sizeof(kgen_tg_x) <= KGEN_TG_LIMIT, "…");
//	static auto& x = ::kgen_rt::tg_var<kgen_tg_x>("x", "k.metal:12");
//
// so that every declaration (and template instantiation) gets storage of
// its own between guard zones (runtime.cc, alloc_guarded), an array over
// Metal's threadgroup memory is a compile error at its line, and the
// runtime adds up the kernel's threadgroup memory. Declarations of another
// shape (an initializer, attributes, a pointer declarator in the list) keep
// the macro's static storage.

var (
	tgDeclNameRe = regexp.MustCompile(`^(.*?)\b([A-Za-z_]\w*)\s*$`)
	identOnlyRe  = regexp.MustCompile(`^\s*([A-Za-z_]\w*)\s*$`)
	// tgTypeRe is what a declaration's type may hold: names, template
	// arguments, ::, spaces (no pointer, reference or call).
	tgTypeRe = regexp.MustCompile(`^[\w\s:<>,]+$`)
	// tgStorageRe: words that make a declaration something else.
	tgStorageRe = regexp.MustCompile(`\b(?:static|extern|constexpr|typedef|using|thread_local|inline)\b`)
)

// maxDeclScan bounds how far a threadgroup declaration is read (longer ones
// keep the macro's storage): reading stays linear in the source.
const maxDeclScan = 4096

// tgDecl is one declarator of a threadgroup declaration: its name and
// where the name is.
type tgDecl struct {
	name               string
	nameStart, nameEnd int
}

// threadgroupVars returns the edits that give kernel-scope threadgroup
// declarations storage of their own.
func (p *program) threadgroupVars(masked []byte) []edit {
	var edits []edit
	locs := tgKeywordRe.FindAllIndex(masked, -1)
	code := inCode(masked, locs)
	for i, loc := range locs {
		if !code[i] || !beginsStatement(masked, loc[0]) {
			continue
		}
		end := declEnd(masked, loc[1])
		if end < 0 {
			continue
		}
		typ, decls := parseTgDecl(masked, loc[1], end)
		if decls == nil {
			continue
		}
		where := p.pos(p.lineAt(loc[0]))
		edits = append(edits, tgEdits(masked, loc, end, typ, decls, where)...)
	}
	return edits
}

// tgEdits rewrites one declaration without moving its text: the keyword
// becomes the first alias, each name is removed, each comma starts the next
// alias, and the references follow the semicolon.
func tgEdits(masked []byte, kw []int, end int, typ string, decls []tgDecl, where string) []edit {
	edits := []edit{{kw[0], kw[1], "using kgen_tg_" + decls[0].name + " ="}}
	var refs strings.Builder
	for i, d := range decls {
		edits = append(edits, edit{d.nameStart, d.nameEnd, ""})
		if i > 0 {
			comma := bytes.LastIndexByte(masked[:d.nameStart], ',')
			edits = append(edits, edit{comma, comma + 1, fmt.Sprintf("; using kgen_tg_%s = %s", d.name, typ)})
		}
		alias := "kgen_tg_" + d.name
		fmt.Fprintf(&refs, " static_assert(sizeof(%s) <= KGEN_TG_LIMIT, \"threadgroup variable %s is over Metal's %s of threadgroup memory\");",
			alias, d.name, Bytes(ThreadgroupMemoryLimit))
		fmt.Fprintf(&refs, " static auto& %s = ::kgen_rt::tg_var<%s>(%q, %q);", d.name, alias, d.name, where)
	}
	return append(edits, edit{end + 1, end + 1, refs.String()})
}

// parseTgDecl reads `T a[N], b[M]` (masked[start:end]): the type and the
// declarators, or nil when the declaration has another shape.
func parseTgDecl(masked []byte, start, end int) (string, []tgDecl) {
	var decls []tgDecl
	typ := ""
	for i, part := range splitDeclarators(masked, start, end) {
		text := string(masked[part[0]:part[1]])
		head, dims := text, ""
		if k := strings.IndexByte(text, '['); k >= 0 {
			head, dims = text[:k], text[k:]
		}
		if !balancedDims(dims) {
			return "", nil
		}
		var m []int
		if i == 0 {
			m = tgDeclNameRe.FindStringSubmatchIndex(head)
			if m == nil {
				return "", nil
			}
			typ = strings.TrimSpace(head[m[2]:m[3]])
			if typ == "" || !tgTypeRe.MatchString(typ) || tgStorageRe.MatchString(typ) || strings.HasSuffix(typ, "::") {
				return "", nil
			}
			m = m[4:6]
		} else {
			m = identOnlyRe.FindStringSubmatchIndex(head)
			if m == nil {
				return "", nil
			}
			m = m[2:4]
		}
		decls = append(decls, tgDecl{name: head[m[0]:m[1]], nameStart: part[0] + m[0], nameEnd: part[0] + m[1]})
	}
	return typ, decls
}

// balancedDims reports whether dims is only [..][..] groups (whose insides
// may hold any expression) and spaces.
func balancedDims(dims string) bool {
	depth := 0
	for _, c := range dims {
		switch {
		case c == '[':
			depth++
		case c == ']':
			depth--
		case depth == 0 && c != ' ' && c != '\t' && c != '\n' && c != '\r':
			return false
		}
	}
	return depth == 0
}

// splitDeclarators splits masked[start:end] at commas outside (), [], {}
// and (outside brackets) <>.
func splitDeclarators(masked []byte, start, end int) [][2]int {
	var parts [][2]int
	depth, angle, from := 0, 0, start
	for i := start; i < end; i++ {
		switch c := masked[i]; {
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case depth == 0 && c == '<':
			angle++
		case depth == 0 && c == '>':
			angle--
		case depth == 0 && angle == 0 && c == ',':
			parts = append(parts, [2]int{from, i})
			from = i + 1
		}
	}
	return append(parts, [2]int{from, end})
}

// declEnd returns the `;` ending the declaration that starts at from, or
// -1 when a top-level `=`, `(` or brace comes first (an initializer,
// attributes, a function: shapes left alone).
func declEnd(masked []byte, from int) int {
	depth := 0
	for i := from; i < min(len(masked), from+maxDeclScan); i++ {
		switch c := masked[i]; c {
		case '[':
			depth++
		case ']':
			depth--
		case '"', '\'':
			return -1
		case '=', '(', ')', '{', '}':
			if depth == 0 {
				return -1
			}
		case ';':
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// beginsStatement reports whether pos begins a statement: after `;`, `{` or
// `}`, skipping blanks and preprocessor lines (line markers).
func beginsStatement(masked []byte, pos int) bool {
	i := pos - 1
	for i >= 0 {
		switch masked[i] {
		case ' ', '\t', '\r', '\n':
			i--
			continue
		}
		lineStart := bytes.LastIndexByte(masked[:i+1], '\n') + 1
		if t := bytes.TrimLeft(masked[lineStart:i+1], " \t"); len(t) > 0 && t[0] == '#' {
			i = lineStart - 1
			continue
		}
		c := masked[i]
		return c == ';' || c == '{' || c == '}'
	}
	return true
}

// codeWords, like `)` and `]`, may precede the `{` of a function body (or
// a lambda's, or a statement's).
var codeWords = setOf("else", "do", "try", "const", "noexcept", "mutable", "override", "final")

// opensCode reports whether a `{` after before opens code.
func opensCode(before []byte) bool {
	t := bytes.TrimRight(before, " \t\r\n")
	if len(t) == 0 {
		return false
	}
	if c := t[len(t)-1]; c == ')' || c == ']' {
		return true
	}
	i := len(t)
	for i > 0 && isIdent(t[i-1]) {
		i--
	}
	return codeWords[string(t[i:])]
}

// inCode reports, for each location (in order), whether it is inside a
// function body: braces opened after `)` (and the other openers) are code,
// and so is every brace inside code.
func inCode(masked []byte, locs [][]int) []bool {
	out := make([]bool, len(locs))
	var stack []bool
	k := 0
	for i := 0; i < len(masked) && k < len(locs); i++ {
		for k < len(locs) && locs[k][0] == i {
			out[k] = len(stack) > 0 && stack[len(stack)-1]
			k++
		}
		switch masked[i] {
		case '"', '\'':
			i = skipQuoted(masked, i)
		case '{':
			outer := len(stack) > 0 && stack[len(stack)-1]
			stack = append(stack, outer || opensCode(masked[max(0, i-64):i]))
		case '}':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	return out
}
