package mslcpu

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// program is an MSL source as the harness sees it: the text rewritten so
// that clang accepts it (line numbers unchanged), plus the kernels and the
// host-named entry points the driver needs.
type program struct {
	text      []byte
	kernels   map[string]*kernelSig
	instances []instance
	// sync is set when the source calls barriers or simd functions, which
	// need the fiber scheduler.
	sync bool
	// lines maps lines of preprocessed text to their files (nil: the text
	// is the kernel file itself).
	lines *lineMap
	// masked is the text before the rewrites, comments blanked: what
	// CheckHost reads.
	masked []byte
	// newlines are the offsets of masked's line breaks (lineAt).
	newlines []int
}

// kernelSig is one kernel function definition.
type kernelSig struct {
	name     string
	line     int
	template bool
	params   []param
}

type paramKind int

const (
	paramBuffer paramKind = iota
	paramPosition
	paramThreadgroup // a threadgroup pointer: [[threadgroup(n)]], memory sized by the launch
)

// param is one kernel parameter: a [[buffer(i)]] binding or a position
// attribute such as [[thread_position_in_grid]].
type param struct {
	name  string
	kind  paramKind
	index int    // buffer index
	attr  string // position attribute name
	space string // "device", "constant", "threadgroup" or "" (cost.go tells constant buffers apart)
}

// instance is one host-visible entry point: a template instantiation with a
// [[host_name]], or a plain kernel under its own name.
type instance struct {
	host   string
	expr   string // the C++ function expression, e.g. softcap<float>
	kernel *kernelSig
	line   int
	ident  string // the constexpr function pointer naming the entry point
	// declared is set when the pre-pass declared ident (host_name lines);
	// the driver declares it for plain kernels.
	declared bool
}

// positionAttrs maps each supported position attribute to the field of
// kgen_rt::Lane (or constant) that the driver passes for it.
var positionAttrs = map[string]string{
	"thread_position_in_grid":          "l.tid_grid",
	"thread_position_in_threadgroup":   "l.tid_tg",
	"threadgroup_position_in_grid":     "l.tg_id",
	"threads_per_threadgroup":          "l.tg_size",
	"threads_per_grid":                 "l.grid_size",
	"threadgroups_per_grid":            "l.ngroups",
	"dispatch_threads_per_threadgroup": "l.dispatch_tg",
	"thread_index_in_threadgroup":      "l.index_tg",
	"thread_index_in_simdgroup":        "l.simd_lane",
	"simdgroup_index_in_threadgroup":   "l.simd_id",
	"simdgroups_per_threadgroup":       "l.nsimd",
	"threads_per_simdgroup":            "uint(kgen_rt::simd_width)",
	"thread_execution_width":           "uint(kgen_rt::simd_width)",
}

var (
	hostNameRe   = regexp.MustCompile(`^\s*template\s*\[\[\s*host_name\s*\(\s*"([^"]+)"\s*\)\s*\]\]\s*(?:\[\[\s*kernel\s*\]\]\s*)?decltype\s*\(\s*([^;]+?)\s*\)\s*([^;]+?)\s*;\s*$`)
	kernelRe     = regexp.MustCompile(`(?:\bkernel|\[\[\s*kernel\s*\]\])\s+void\s+([A-Za-z_]\w*)\s*\(`)
	syncRe       = regexp.MustCompile(`\b(?:threadgroup_barrier|simd_\w+|quad_\w+)\s*\(|\bsimdgroup_\w+`)
	tgKeywordRe  = regexp.MustCompile(`\bthreadgroup\b`)
	tgAttrRe     = regexp.MustCompile(`\[\[\s*(threadgroup)\s*\(`)
	vecCtorRe    = regexp.MustCompile(`(?:\bmetal\s*::\s*)?\bvec\s*<([^<>;(){}]*)>\s*\(`)
	attrRe       = regexp.MustCompile(`\[\[\s*([A-Za-z_]\w*)\s*(?:\(\s*([^)]*?)\s*\))?\s*\]\]`)
	identRe      = regexp.MustCompile(`[A-Za-z_]\w*`)
	spaceRe      = regexp.MustCompile(`\s+`)
	templateRe   = regexp.MustCompile(`^\s*template\b`)
	staticCastRe = regexp.MustCompile(`\bstatic_cast\s*<\s*((?:::)?[A-Za-z_][\w:]*)\s*>\s*\(`)
	// lineMarkerRe is a preprocessor line (`# 3 "unary.h" 2`): a header's
	// first template can follow one directly.
	lineMarkerRe = regexp.MustCompile(`(?m)^[ \t]*#.*$`)
)

// edit replaces src[start:end] with text; edits never add or remove lines.
type edit struct {
	start, end int
	text       string
}

// parseProgram reads the kernels and entry points of src (preprocessed
// text when lines is not nil) and rewrites the constructs clang rejects or
// that C++ reads differently.
func parseProgram(src []byte, fc map[string]string, lines *lineMap) (*program, error) {
	masked := maskComments(src)
	p := &program{kernels: map[string]*kernelSig{}, sync: syncRe.Match(masked), lines: lines, masked: masked, newlines: newlineOffsets(masked)}
	edits, err := p.edits(masked, fc)
	if err != nil {
		return nil, err
	}
	if err := p.parseKernels(masked); err != nil {
		return nil, err
	}
	if err := p.bindInstances(); err != nil {
		return nil, err
	}
	p.text = applyEdits(src, edits)
	return p, nil
}

// edits collects every rewrite of the source.
func (p *program) edits(masked []byte, fc map[string]string) ([]edit, error) {
	edits, err := p.instantiations(masked)
	if err != nil {
		return nil, err
	}
	fcEdits, unknown := functionConstants(masked, fc)
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%s: no [[function_constant]] named or numbered %s", p.pos(1), strings.Join(unknown, ", "))
	}
	edits = append(append(edits, fcEdits...), rewrites(masked)...)
	edits = append(append(edits, literalSuffixes(masked)...), defaultedCtors(masked)...)
	edits = append(edits, addressSpaceOverloads(masked)...)
	return append(edits, p.threadgroupVars(masked)...), nil
}

// pos names line n of the text being parsed as file:line.
func (p *program) pos(n int) string { return p.lines.pos(n) }

// prepass returns only the rewritten text; CheckSyntax uses it so that a
// syntax check does not depend on the driver's signature rules.
func prepass(src []byte) ([]byte, error) {
	masked := maskComments(src)
	p := &program{kernels: map[string]*kernelSig{}, newlines: newlineOffsets(masked)}
	edits, err := p.edits(masked, nil)
	if err != nil {
		return nil, err
	}
	return applyEdits(src, edits), nil
}

// instantiations turns every explicit instantiation that carries a
// [[host_name]], which clang rejects, into a constexpr function pointer that
// both instantiates the kernel and names it for the driver. It accepts the
// forms real code uses, after macro expansion (several may share a line):
//
//	template [[host_name("h")]] [[kernel]] decltype(f<T>) f<T>;
//	template [[host_name("h")]] kernel f_t f<T>;             (a typedef'd type)
//	template [[host_name("h")]] [[kernel]] void f<T>(device T* x [[buffer(0)]], ...);
//
// and host names spelled as adjacent string literals ("v_" "abs" "float32").
func (p *program) instantiations(masked []byte) ([]edit, error) {
	var edits []edit
	for _, loc := range hostNameStartRe.FindAllIndex(masked, -1) {
		line := p.lineAt(loc[0])
		host, rest, err := hostNameLiteral(masked, loc[1])
		if err != nil {
			return nil, fmt.Errorf("%s: %v", p.pos(line), err)
		}
		semi := statementEnd(masked, rest)
		if semi < 0 {
			return nil, fmt.Errorf("%s: host_name %q: no ';' ends the instantiation", p.pos(line), host)
		}
		expr, err := instantiated(string(masked[rest:semi]))
		if err != nil {
			return nil, fmt.Errorf("%s: host_name %q: %v", p.pos(line), host, err)
		}
		ident := fmt.Sprintf("kgen_host_%d", len(p.instances))
		p.instances = append(p.instances, instance{host: host, expr: expr, line: line, ident: ident, declared: true})
		text := fmt.Sprintf("constexpr auto %s = &%s;", ident, expr)
		edits = append(edits, edit{loc[0], semi + 1, keepLines(masked[loc[0]:semi+1], text)})
	}
	return edits, nil
}

var (
	hostNameStartRe = regexp.MustCompile(`\btemplate\s*\[\[\s*host_name\s*\(`)
	hostNameEndRe   = regexp.MustCompile(`^\s*\)\s*\]\]`)
	kernelAttrRe    = regexp.MustCompile(`^\s*(?:\[\[\s*kernel\s*\]\]|\bkernel\b)\s*`)
	decltypeRe      = regexp.MustCompile(`^\s*decltype\s*\(`)
	entityRe        = regexp.MustCompile(`([A-Za-z_][\w:]*)\s*$`)
)

// hostNameLiteral reads the (concatenated) string literals of a host_name
// attribute starting at pos, and returns the offset after its `)]]`. The
// literals were kept by maskComments; escapes other than \" are not used
// in host names.
func hostNameLiteral(b []byte, pos int) (string, int, error) {
	var name strings.Builder
	i := pos
	for {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
		if i >= len(b) || b[i] != '"' {
			break
		}
		end := skipQuoted(b, i)
		lit, err := strconv.Unquote(string(b[i : end+1]))
		if err != nil {
			return "", 0, fmt.Errorf("bad host_name literal %s", b[i:end+1])
		}
		name.WriteString(lit)
		i = end + 1
	}
	m := hostNameEndRe.FindIndex(b[i:])
	if name.Len() == 0 || m == nil {
		return "", 0, fmt.Errorf("unsupported host_name form: want template [[host_name(\"h\")]] followed by the instantiation")
	}
	return name.String(), i + m[1], nil
}

// statementEnd returns the offset of the ';' that ends the statement
// starting at pos, outside parentheses and braces.
func statementEnd(b []byte, pos int) int {
	depth := 0
	for i := pos; i < len(b); i++ {
		switch b[i] {
		case '(', '{':
			depth++
		case ')', '}':
			depth--
		case ';':
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// instantiated returns the function an instantiation names (f<T>), from
// the text after [[host_name(...)]]: an optional kernel attribute, the
// type (decltype(f<T>), a typedef, or a return type), the name, and in the
// last form a parameter list.
func instantiated(stmt string) (string, error) {
	stmt = kernelAttrRe.ReplaceAllString(stmt, "")
	var declared string
	if m := decltypeRe.FindStringIndex(stmt); m != nil {
		close, err := matchParen([]byte(stmt), m[1]-1)
		if err != nil {
			return "", err
		}
		declared = spaceRe.ReplaceAllString(stmt[m[1]:close], "")
		stmt = stmt[close+1:]
	}
	if open := strings.IndexByte(stmt, '('); open >= 0 {
		stmt = stmt[:open]
	}
	stmt = strings.TrimSpace(stmt)
	args := ""
	if strings.HasSuffix(stmt, ">") {
		lt := matchAngleBack(stmt)
		if lt < 0 {
			return "", fmt.Errorf("unbalanced <> in %q", stmt)
		}
		stmt, args = stmt[:lt], stmt[lt:]
	}
	m := entityRe.FindStringSubmatch(stmt)
	if m == nil {
		return "", fmt.Errorf("cannot find the instantiated kernel in %q", stmt)
	}
	expr := spaceRe.ReplaceAllString(m[1]+args, "")
	if declared != "" && declared != expr {
		return "", fmt.Errorf("decltype(%s) does not name %s", declared, expr)
	}
	return expr, nil
}

// matchAngleBack returns the index of the '<' that opens the final '>'.
func matchAngleBack(s string) int {
	depth := 0
	for i := len(s) - 1; i >= 0; i-- {
		switch s[i] {
		case '>':
			depth++
		case '<':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// keepLines returns text followed by as many newlines as orig holds, so that
// an edit never moves the lines after it.
func keepLines(orig []byte, text string) string {
	return text + strings.Repeat("\n", bytes.Count(orig, []byte("\n")))
}

// rewrites handles two constructs: `threadgroup T*` / `threadgroup T&`
// (a pointer qualifier, not the storage class the shim's macro provides) and
// `vec<T,N>(...)` (a functional cast that C++ would treat as a bit cast).
func rewrites(masked []byte) []edit {
	var edits []edit
	// [[threadgroup(n)]] would be mangled by the shim's threadgroup macro.
	for _, loc := range tgAttrRe.FindAllSubmatchIndex(masked, -1) {
		edits = append(edits, edit{loc[2], loc[3], "kgen_threadgroup"})
	}
	for _, loc := range tgKeywordRe.FindAllIndex(masked, -1) {
		rest := masked[loc[1]:min(len(masked), loc[1]+maxDeclScan)]
		if k := bytes.IndexAny(rest, "*&;[=(){},"); k >= 0 && (rest[k] == '*' || rest[k] == '&' || rest[k] == '[' && arrayParam(rest[k:]) && !beginsStatement(masked, loc[0])) {
			edits = append(edits, edit{loc[0], loc[1], "KGEN_TG_PTR"})
		}
	}
	edits = append(edits, bracedArgs(masked)...)
	// static_cast<T>(x) of a named type goes through ::kgen::cast (half <->
	// bfloat and vector conversions, which C++ lacks or reinterprets).
	for _, m := range staticCastRe.FindAllSubmatchIndex(masked, -1) {
		edits = append(edits, edit{m[0], m[1], "::kgen::cast<" + string(masked[m[2]:m[3]]) + ">("})
	}
	for _, m := range vecCtorRe.FindAllSubmatchIndex(masked, -1) {
		if afterOperator(masked, m[0]) {
			continue // a conversion function, `operator vec<T, 2>()`
		}
		args := string(masked[m[2]:m[3]])
		edits = append(edits, edit{m[0], m[1], "::kgen::make<::metal::vec<" + args + ">>("})
	}
	return edits
}

// bracedArgs rewrites a braced list that is a call's argument (`f({a, b},
// c)`: after `(` or `,` with a `(` as the innermost bracket) to
// ::kgen::braced(a, b): clang cannot convert a braced list to a vector
// parameter during overload resolution, which Metal's compiler does.
func bracedArgs(masked []byte) []edit {
	var edits []edit
	var stack []byte
	prevTok := byte(0)
	for i := 0; i < len(masked); i++ {
		c := masked[i]
		switch c {
		case '"', '\'':
			i = skipQuoted(masked, i)
			prevTok = '"'
			continue
		case '(', '[':
			stack = append(stack, c)
		case ')', ']', '}':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case '{':
			if len(stack) > 0 && stack[len(stack)-1] == '(' && (prevTok == '(' || prevTok == ',') {
				if end := matchBraceSimple(masked, i); end > 0 && bytes.IndexByte(masked[i:end], ';') < 0 {
					edits = append(edits, edit{i, i + 1, "::kgen::braced("}, edit{end, end + 1, ")"})
				}
			}
			stack = append(stack, c)
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			prevTok = c
		}
	}
	return edits
}

// matchBraceSimple returns the `}` matching the `{` at open, or -1.
func matchBraceSimple(b []byte, open int) int {
	depth := 0
	for i := open; i < len(b); i++ {
		switch b[i] {
		case '"', '\'':
			i = skipQuoted(b, i)
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// arrayParam reports whether b, starting at `[`, is a parameter's array
// declarator (`threadgroup T shared[N],` or `…[N])`): a pointer, as C++
// adjusts it, not the storage class of a kernel-scope array (`…[N];`).
func arrayParam(b []byte) bool {
	i := 0
	for i < len(b) && b[i] == '[' {
		j := bytes.IndexByte(b[i:], ']')
		if j < 0 {
			return false
		}
		i += j + 1
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
	}
	return i < len(b) && (b[i] == ',' || b[i] == ')')
}

// parseKernels finds every kernel definition and its parameters.
func (p *program) parseKernels(masked []byte) error {
	for _, m := range kernelRe.FindAllSubmatchIndex(masked, -1) {
		name := string(masked[m[2]:m[3]])
		open := m[1] - 1
		close, err := matchParen(masked, open)
		if err != nil {
			return fmt.Errorf("%s: kernel %s: %v", p.pos(p.lineAt(m[0])), name, err)
		}
		after := bytes.TrimLeft(masked[close+1:], " \t\r\n")
		if len(after) == 0 || after[0] != '{' {
			continue // a declaration; the definition carries the signature
		}
		k := &kernelSig{name: name, line: p.lineAt(m[0]), template: isTemplate(masked, m[0])}
		if err := p.parseParams(k, masked[open+1:close]); err != nil {
			return err
		}
		p.kernels[name] = k
	}
	return nil
}

// bindInstances ties each host name to its kernel and adds plain
// (non-template) kernels under their own names.
func (p *program) bindInstances() error {
	for i := range p.instances {
		in := &p.instances[i]
		name := identRe.FindString(in.expr)
		k := p.kernels[name]
		if k == nil {
			return fmt.Errorf("%s: host_name %q instantiates %s, but no kernel %s is defined", p.pos(in.line), in.host, in.expr, name)
		}
		in.kernel = k
	}
	names := make([]string, 0, len(p.kernels))
	for name := range p.kernels {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if k := p.kernels[name]; !k.template {
			ident := fmt.Sprintf("kgen_host_%d", len(p.instances))
			p.instances = append(p.instances, instance{host: name, expr: name, kernel: k, line: k.line, ident: ident})
		}
	}
	seen := map[string]bool{}
	for _, in := range p.instances {
		if seen[in.host] {
			return fmt.Errorf("%s: host name %q is defined twice", p.pos(in.line), in.host)
		}
		seen[in.host] = true
	}
	return nil
}

func (p *program) instance(host string) (*instance, error) {
	var names []string
	for i := range p.instances {
		if p.instances[i].host == host {
			return &p.instances[i], nil
		}
		names = append(names, p.instances[i].host)
	}
	return nil, fmt.Errorf("no kernel with host name %q (the source defines %s)", host, strings.Join(names, ", "))
}

// parseParams reads the parameters: `TYPE NAME [[attr]]`, or a device or
// constant pointer or reference without an attribute, which Metal binds
// to the next buffer index not used explicitly (in declaration order);
// threadgroup pointers likewise take [[threadgroup(n)]] indices.
func (p *program) parseParams(k *kernelSig, list []byte) error {
	for _, raw := range splitTopLevel(string(list)) {
		text := strings.TrimSpace(raw)
		if text == "" {
			continue
		}
		prm, err := readParam(text)
		if err != nil {
			return fmt.Errorf("%s: kernel %s: %v", p.pos(k.line), k.name, err)
		}
		k.params = append(k.params, prm)
	}
	assignImplicit(k.params, paramBuffer)
	assignImplicit(k.params, paramThreadgroup)
	return nil
}

var spaceKeywordRe = regexp.MustCompile(`\b(device|constant|threadgroup)\b`)

// readParam reads one kernel parameter.
func readParam(text string) (param, error) {
	m := attrRe.FindStringSubmatchIndex(text)
	decl := text
	if m != nil {
		decl = text[:m[0]]
	}
	names := identRe.FindAllString(decl, -1)
	if len(names) < 2 {
		return param{}, fmt.Errorf("cannot read parameter %q", text)
	}
	prm := param{name: names[len(names)-1], index: -1, space: spaceKeywordRe.FindString(decl)}
	if m == nil {
		space := spaceKeywordRe.FindString(decl)
		switch {
		case space == "threadgroup":
			prm.kind = paramThreadgroup
		case space != "" && strings.ContainsAny(decl, "*&["): // an array parameter is a pointer
			prm.kind = paramBuffer
		default:
			return param{}, fmt.Errorf("parameter %q has no [[attribute]] and is not a device, constant or threadgroup pointer or reference", text)
		}
		return prm, nil
	}
	prm.attr = text[m[2]:m[3]]
	switch {
	case (prm.attr == "buffer" || prm.attr == "threadgroup") && m[4] >= 0:
		idx, err := strconv.Atoi(text[m[4]:m[5]])
		if err != nil || idx < 0 || idx > 30 {
			return param{}, fmt.Errorf("parameter %s: bad index %q", prm.name, text[m[4]:m[5]])
		}
		prm.kind, prm.index = paramBuffer, idx
		if prm.attr == "threadgroup" {
			prm.kind = paramThreadgroup
		}
	case positionAttrs[prm.attr] != "" && m[4] < 0:
		prm.kind, prm.index = paramPosition, 0
	default:
		return param{}, fmt.Errorf("parameter %s: attribute [[%s]] is not supported by mslcpu", prm.name, text[m[2]:m[1]-2])
	}
	return prm, nil
}

// assignImplicit gives parameters of one kind without an index the lowest
// indices their kernel does not use explicitly, in declaration order.
func assignImplicit(params []param, kind paramKind) {
	used := map[int]bool{}
	for _, prm := range params {
		if prm.kind == kind && prm.index >= 0 {
			used[prm.index] = true
		}
	}
	next := 0
	for i := range params {
		if params[i].kind != kind || params[i].index >= 0 {
			continue
		}
		for used[next] {
			next++
		}
		params[i].index = next
		used[next] = true
	}
}

// maxBuffer returns the highest buffer index the kernel binds, or -1.
func (k *kernelSig) maxBuffer() int {
	hi := -1
	for _, prm := range k.params {
		if prm.kind == paramBuffer && prm.index > hi {
			hi = prm.index
		}
	}
	return hi
}

// maskComments blanks comments (keeping newlines) so that scans see code only.
func maskComments(src []byte) []byte {
	out := append([]byte(nil), src...)
	for i := 0; i < len(out); i++ {
		switch {
		case out[i] == '"' || out[i] == '\'':
			i = skipQuoted(out, i)
		case out[i] == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case out[i] == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			stop := len(out)
			if end >= 0 {
				stop = i + 2 + end + 2
			}
			for ; i < stop; i++ {
				if out[i] != '\n' {
					out[i] = ' '
				}
			}
			i--
		}
	}
	return out
}

func skipQuoted(b []byte, i int) int {
	q := b[i]
	for i++; i < len(b) && b[i] != q && b[i] != '\n'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i
}

func matchParen(b []byte, open int) (int, error) {
	depth := 0
	for i := open; i < len(b); i++ {
		switch b[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i, nil
			}
		}
	}
	return 0, fmt.Errorf("unbalanced parentheses in the parameter list")
}

// splitTopLevel splits a parameter list at commas outside (), <>, [].
func splitTopLevel(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '<', '[':
			depth++
		case ')', '>', ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// isTemplate reports whether the declaration that starts before pos (back to
// the previous ';', '{' or '}') begins with `template`.
func isTemplate(b []byte, pos int) bool {
	start := bytes.LastIndexAny(b[:pos], ";{}") + 1
	return templateRe.Match(lineMarkerRe.ReplaceAll(b[start:pos], nil))
}

func lineOf(b []byte, pos int) int { return bytes.Count(b[:pos], []byte("\n")) + 1 }

// newlineOffsets lists where b's line breaks are.
func newlineOffsets(b []byte) []int {
	var out []int
	for i, c := range b {
		if c == '\n' {
			out = append(out, i)
		}
	}
	return out
}

// lineAt is lineOf(p.masked, pos) in logarithmic time: sources with many
// kernels or declarations stay linear to read.
func (p *program) lineAt(pos int) int { return sort.SearchInts(p.newlines, pos) + 1 }

func applyEdits(src []byte, edits []edit) []byte {
	sort.Slice(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
	var out bytes.Buffer
	prev := 0
	for _, e := range edits {
		if e.start < prev {
			continue // overlapping edits cannot happen with the patterns above
		}
		out.Write(src[prev:e.start])
		out.WriteString(e.text)
		prev = e.end
	}
	out.Write(src[prev:])
	return out.Bytes()
}
