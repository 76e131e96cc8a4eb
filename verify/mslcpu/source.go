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
)

// param is one kernel parameter: a [[buffer(i)]] binding or a position
// attribute such as [[thread_position_in_grid]].
type param struct {
	name  string
	kind  paramKind
	index int    // buffer index
	attr  string // position attribute name
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
	hostNameRe  = regexp.MustCompile(`^\s*template\s*\[\[\s*host_name\s*\(\s*"([^"]+)"\s*\)\s*\]\]\s*(?:\[\[\s*kernel\s*\]\]\s*)?decltype\s*\(\s*([^;]+?)\s*\)\s*([^;]+?)\s*;\s*$`)
	kernelRe    = regexp.MustCompile(`(?:\bkernel|\[\[\s*kernel\s*\]\])\s+void\s+([A-Za-z_]\w*)\s*\(`)
	syncRe      = regexp.MustCompile(`\b(?:threadgroup_barrier|simd_\w+|quad_\w+)\s*\(|\bsimdgroup_\w+`)
	tgKeywordRe = regexp.MustCompile(`\bthreadgroup\b`)
	vecCtorRe   = regexp.MustCompile(`(?:\bmetal\s*::\s*)?\bvec\s*<([^<>;(){}]*)>\s*\(`)
	attrRe      = regexp.MustCompile(`\[\[\s*([A-Za-z_]\w*)\s*(?:\(\s*([^)]*?)\s*\))?\s*\]\]`)
	identRe     = regexp.MustCompile(`[A-Za-z_]\w*`)
	spaceRe     = regexp.MustCompile(`\s+`)
	templateRe  = regexp.MustCompile(`^\s*template\b`)
)

// edit replaces src[start:end] with text; edits never add or remove lines.
type edit struct {
	start, end int
	text       string
}

// parseProgram reads the kernels and entry points of src and rewrites the
// constructs clang rejects or that C++ reads differently.
func parseProgram(src []byte) (*program, error) {
	masked := maskComments(src)
	p := &program{kernels: map[string]*kernelSig{}, sync: syncRe.Match(masked)}
	edits, err := p.instantiations(masked)
	if err != nil {
		return nil, err
	}
	edits = append(edits, rewrites(masked)...)
	if err := p.parseKernels(masked); err != nil {
		return nil, err
	}
	if err := p.bindInstances(); err != nil {
		return nil, err
	}
	p.text = applyEdits(src, edits)
	return p, nil
}

// prepass returns only the rewritten text; CheckSyntax uses it so that a
// syntax check does not depend on the driver's signature rules.
func prepass(src []byte) ([]byte, error) {
	masked := maskComments(src)
	p := &program{kernels: map[string]*kernelSig{}}
	edits, err := p.instantiations(masked)
	if err != nil {
		return nil, err
	}
	return applyEdits(src, append(edits, rewrites(masked)...)), nil
}

// instantiations turns each `template [[host_name("h")]] [[kernel]]
// decltype(f<T>) f<T>;` line, which clang rejects, into a constexpr
// function pointer that both instantiates f<T> and names it for the driver.
func (p *program) instantiations(masked []byte) ([]edit, error) {
	var edits []edit
	off := 0
	for i, line := range strings.SplitAfter(string(masked), "\n") {
		start := off
		off += len(line)
		if !strings.Contains(line, "host_name") {
			continue
		}
		m := hostNameRe.FindStringSubmatch(strings.TrimRight(line, "\r\n"))
		if m == nil {
			return nil, fmt.Errorf("line %d: unsupported host_name form (want `template [[host_name(\"h\")]] [[kernel]] decltype(f<T>) f<T>;` on one line)", i+1)
		}
		expr := spaceRe.ReplaceAllString(m[3], "")
		if spaceRe.ReplaceAllString(m[2], "") != expr {
			return nil, fmt.Errorf("line %d: host_name %q: decltype(%s) does not name %s", i+1, m[1], m[2], m[3])
		}
		ident := fmt.Sprintf("kgen_host_%d", len(p.instances))
		p.instances = append(p.instances, instance{host: m[1], expr: expr, line: i + 1, ident: ident, declared: true})
		body := strings.TrimRight(line, "\r\n")
		edits = append(edits, edit{start, start + len(body), fmt.Sprintf("constexpr auto %s = &%s; // host_name(%q)", ident, expr, m[1])})
	}
	return edits, nil
}

// rewrites handles two constructs: `threadgroup T*` / `threadgroup T&`
// (a pointer qualifier, not the storage class the shim's macro provides) and
// `vec<T,N>(...)` (a functional cast that C++ would treat as a bit cast).
func rewrites(masked []byte) []edit {
	var edits []edit
	for _, loc := range tgKeywordRe.FindAllIndex(masked, -1) {
		rest := masked[loc[1]:]
		if k := bytes.IndexAny(rest, "*&;[=(){},"); k >= 0 && (rest[k] == '*' || rest[k] == '&') {
			edits = append(edits, edit{loc[0], loc[1], "KGEN_TG_PTR"})
		}
	}
	for _, m := range vecCtorRe.FindAllSubmatchIndex(masked, -1) {
		args := string(masked[m[2]:m[3]])
		edits = append(edits, edit{m[0], m[1], "::kgen::make<::metal::vec<" + args + ">>("})
	}
	return edits
}

// parseKernels finds every kernel definition and its parameters.
func (p *program) parseKernels(masked []byte) error {
	for _, m := range kernelRe.FindAllSubmatchIndex(masked, -1) {
		name := string(masked[m[2]:m[3]])
		open := m[1] - 1
		close, err := matchParen(masked, open)
		if err != nil {
			return fmt.Errorf("line %d: kernel %s: %v", lineOf(masked, m[0]), name, err)
		}
		after := bytes.TrimLeft(masked[close+1:], " \t\r\n")
		if len(after) == 0 || after[0] != '{' {
			continue // a declaration; the definition carries the signature
		}
		k := &kernelSig{name: name, line: lineOf(masked, m[0]), template: isTemplate(masked, m[0])}
		if err := k.parseParams(masked[open+1 : close]); err != nil {
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
			return fmt.Errorf("line %d: host_name %q instantiates %s, but no kernel %s is defined", in.line, in.host, in.expr, name)
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
			return fmt.Errorf("line %d: host name %q is defined twice", in.line, in.host)
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

// parseParams reads `TYPE NAME [[attr]]` parameters.
func (k *kernelSig) parseParams(list []byte) error {
	for _, raw := range splitTopLevel(string(list)) {
		text := strings.TrimSpace(raw)
		if text == "" {
			continue
		}
		m := attrRe.FindStringSubmatchIndex(text)
		if m == nil {
			return fmt.Errorf("line %d: kernel %s: parameter %q has no [[attribute]]", k.line, k.name, text)
		}
		attr := text[m[2]:m[3]]
		names := identRe.FindAllString(text[:m[0]], -1)
		if len(names) < 2 {
			return fmt.Errorf("line %d: kernel %s: cannot read parameter %q", k.line, k.name, text)
		}
		prm := param{name: names[len(names)-1], attr: attr}
		switch {
		case attr == "buffer" && m[4] >= 0:
			idx, err := strconv.Atoi(text[m[4]:m[5]])
			if err != nil || idx < 0 || idx > 30 {
				return fmt.Errorf("line %d: kernel %s: parameter %s: bad buffer index %q", k.line, k.name, prm.name, text[m[4]:m[5]])
			}
			prm.kind, prm.index = paramBuffer, idx
		case positionAttrs[attr] != "" && m[4] < 0:
			prm.kind = paramPosition
		default:
			return fmt.Errorf("line %d: kernel %s: parameter %s: attribute [[%s]] is not supported by mslcpu", k.line, k.name, prm.name, text[m[2]:m[1]-2])
		}
		k.params = append(k.params, prm)
	}
	return nil
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
	return templateRe.Match(b[start:pos])
}

func lineOf(b []byte, pos int) int { return bytes.Count(b[:pos], []byte("\n")) + 1 }

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
