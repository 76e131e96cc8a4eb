package mslcpu

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// HostCodeError is code that only a host program can run, found by
// CheckHost: Pos is file:line where it could be placed, else empty.
type HostCodeError struct {
	Pos     string
	Message string
}

func (e *HostCodeError) Error() string {
	if e.Pos == "" {
		return "mslcpu: " + e.Message
	}
	return "mslcpu: " + e.Pos + ": " + e.Message
}

// hostFlags build the object CheckHost reads: the run's own flags, with
// code that runs before or after the kernel (dynamic initialisation of a
// namespace-scope variable, a destructor at exit) a positioned error.
var hostFlags = []string{"-Werror=global-constructors", "-Werror=exit-time-destructors"}

// CheckHost refuses what Metal's compiler would never see in a kernel but a
// host C++ compiler accepts, so that the file does only kernel work when it
// runs (kgen emu --strict): inline assembly, `extern "C"` (and any other
// linkage specification), constructor, destructor, section, alias and
// similar attributes, static initialisers and exit-time destructors, and
// calls to any function that is neither defined in the file nor part of
// Metal's library (the harness's runtime, compiler support such as memcpy,
// and the C math functions behind metal::'s) — libc's system, printf or
// malloc, even through __builtin_printf. It loads the source as Run does
// (includes, macros, function constants) and compiles it to an object,
// whose undefined symbols it reads (ELF, so Linux only).
//
// CheckHost is a lint, not a security boundary: C++ can still reach the
// host (a function pointer made from an integer, say). The limits in
// sandbox.go bound what any run may cost; nothing stops a file from reading
// or writing what the user running it can.
func CheckHost(ctx context.Context, l Launch) error {
	tc, err := newToolchain()
	if err != nil {
		return err
	}
	p, err := tc.load(ctx, l.Source, l.SourceOptions)
	if err != nil {
		return err
	}
	if err := hostConstructs(p); err != nil {
		return err
	}
	obj, err := tc.object(ctx, p, hostFlags)
	if err != nil {
		return err
	}
	rt, err := tc.runtimeObject(ctx, NoSanitizer, nil)
	if err != nil {
		return err
	}
	return checkImports(p, obj, rt)
}

// object compiles a program's translation unit to an object (cached).
func (tc *toolchain) object(ctx context.Context, p *program, extra []string) (string, error) {
	flags := buildFlags(NoSanitizer, extra...)
	tu := translationUnit(p)
	base := filepath.Join(tc.cache, "o-"+tc.key("object", flags, tu))
	return cached(base+".o", func(tmp string) error {
		if err := writeAtomic(base+".cc", []byte(tu), 0o644); err != nil {
			return err
		}
		args := append(append([]string{}, flags...), "-I", tc.shim, "-c", "-x", "c++", base+".cc", "-o", tmp)
		return tc.compile(ctx, args, nil)
	})
}

var (
	asmRe     = regexp.MustCompile(`\b(?:asm|__asm|__asm__)\b`)
	linkageRe = regexp.MustCompile(`\bextern\s*"`)
	gnuAttrRe = regexp.MustCompile(`\b__attribute__\s*\(\(`)
	stdAttrRe = regexp.MustCompile(`\[\[\s*(?:gnu|clang)\s*::\s*(\w+)`)
	// hostAttrRe are the attributes that run code outside the kernel or
	// place it where the loader runs it.
	hostAttrRe = regexp.MustCompile(`\b_*(constructor|destructor|section|init_priority|alias|ifunc|weakref|naked)_*\b`)
)

// hostConstructs finds the host-only constructs a compile would accept.
func hostConstructs(p *program) error {
	text := maskStrings(p.masked)
	at := func(i int) string { return p.pos(p.lineAt(i)) }
	if loc := asmRe.FindIndex(text); loc != nil {
		return &HostCodeError{at(loc[0]), fmt.Sprintf("%s: inline assembly is host code (Metal has none)", text[loc[0]:loc[1]])}
	}
	if loc := linkageRe.FindIndex(text); loc != nil {
		return &HostCodeError{at(loc[0]), `extern "…": a linkage specification declares host functions (Metal has none)`}
	}
	for _, loc := range gnuAttrRe.FindAllIndex(text, -1) {
		end, err := matchParen(text, loc[1]-2)
		if err != nil {
			end = len(text) - 1
		}
		if m := hostAttrRe.FindSubmatch(text[loc[1]:end]); m != nil {
			return &HostCodeError{at(loc[0]), fmt.Sprintf("__attribute__((%s)) is host code (it runs or places code outside the kernel)", m[1])}
		}
	}
	for _, m := range stdAttrRe.FindAllSubmatchIndex(text, -1) {
		if a := hostAttrRe.FindSubmatch(text[m[2]:m[3]]); a != nil {
			return &HostCodeError{at(m[0]), fmt.Sprintf("[[%s]] is host code (it runs or places code outside the kernel)", text[m[2]:m[3]])}
		}
	}
	return nil
}

// maskStrings blanks the insides of string and character literals.
func maskStrings(masked []byte) []byte {
	out := append([]byte(nil), masked...)
	for i := 0; i < len(out); i++ {
		if out[i] == '"' || out[i] == '\'' {
			end := skipQuoted(out, i)
			for k := i + 1; k < end && k < len(out); k++ {
				out[k] = ' '
			}
			i = end
		}
	}
	return out
}

// initSections hold code the loader runs before main or at exit.
var initSections = []string{".init_array", ".preinit_array", ".ctors", ".fini_array", ".dtors"}

// checkImports reads the kernel object's undefined symbols and refuses
// those the runtime does not define and Metal's library does not need.
func checkImports(p *program, obj, rt string) error {
	f, err := elf.Open(obj)
	if err != nil {
		return fmt.Errorf("mslcpu: --strict reads ELF objects (Linux): %v", err)
	}
	defer f.Close()
	for _, name := range initSections {
		if s := f.Section(name); s != nil && s.Size > 0 {
			return &HostCodeError{Message: fmt.Sprintf("the file has code that runs before or after the kernel (an %s entry: a constructor attribute or a static initializer)", name)}
		}
	}
	provided, err := definedSymbols(rt)
	if err != nil {
		return err
	}
	syms, err := f.Symbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return fmt.Errorf("mslcpu: %s: %v", obj, err)
	}
	var bad []string
	for _, s := range syms {
		if s.Section == elf.SHN_UNDEF && s.Name != "" && !provided[s.Name] && !supportSymbol(s.Name) {
			bad = append(bad, s.Name)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	name := demangledName(bad[0])
	return &HostCodeError{Pos: callSite(p, name), Message: fmt.Sprintf(
		"the kernel calls %s, which is neither defined in the file nor part of Metal's library (host code; undefined: %s)",
		name, strings.Join(bad, ", "))}
}

// definedSymbols returns the global symbols an object defines.
func definedSymbols(path string) (map[string]bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mslcpu: %v", err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("mslcpu: %s: %v", path, err)
	}
	out := map[string]bool{}
	for _, s := range syms {
		bind := elf.ST_BIND(s.Info)
		if s.Section != elf.SHN_UNDEF && (bind == elf.STB_GLOBAL || bind == elf.STB_WEAK) {
			out[s.Name] = true
		}
	}
	return out, nil
}

// callSite is where the masked source first names fn, or "".
func callSite(p *program, fn string) string {
	re, err := regexp.Compile(`\b(?:__builtin_)?` + regexp.QuoteMeta(fn[strings.LastIndex(fn, ":")+1:]) + `\s*[(<]`)
	if err != nil {
		return ""
	}
	if loc := re.FindIndex(maskStrings(p.masked)); loc != nil {
		return p.pos(p.lineAt(loc[0]))
	}
	return ""
}

// demangledName reads the qualified name of an Itanium-mangled function
// (_ZN7kgen_rt7barrierEi: kgen_rt::barrier) as far as simple names go;
// other symbols come back as they are.
func demangledName(sym string) string {
	rest, ok := strings.CutPrefix(sym, "_Z")
	if !ok {
		return sym
	}
	rest = strings.TrimPrefix(rest, "N")
	var parts []string
	for len(rest) > 0 && rest[0] >= '0' && rest[0] <= '9' {
		k := 0
		for k < len(rest) && rest[k] >= '0' && rest[k] <= '9' {
			k++
		}
		n, _ := strconv.Atoi(rest[:k])
		if k+n > len(rest) {
			break
		}
		parts = append(parts, rest[k:k+n])
		rest = rest[k+n:]
	}
	if len(parts) == 0 {
		return sym
	}
	return strings.Join(parts, "::")
}

// supportSymbol reports whether an undefined symbol of a kernel object is
// compiler support or a C math function (what metal::'s functions lower
// to), not a way out to the host.
func supportSymbol(name string) bool {
	if compilerSupport[name] || compilerRuntimeRe.MatchString(name) {
		return true
	}
	base := name
	if len(base) > 1 && (strings.HasSuffix(base, "f") || strings.HasSuffix(base, "l")) && mathFuncs[base[:len(base)-1]] {
		return true
	}
	return mathFuncs[base]
}

// compilerSupport: what clang emits calls to by itself (block copies,
// guarded function statics, stack protection, unwinding through
// destructors).
var compilerSupport = setOf("memcpy", "memmove", "memset", "__cxa_guard_acquire", "__cxa_guard_release",
	"__cxa_guard_abort", "__stack_chk_fail", "_Unwind_Resume", "__gxx_personality_v0", "__cxa_begin_catch",
	"__cxa_end_catch", "_ZSt9terminatev", "__clang_call_terminate", "_GLOBAL_OFFSET_TABLE_")

// compilerRuntimeRe: compiler-rt / libgcc arithmetic helpers (half and
// bfloat conversions, 128-bit division, complex multiplication, …).
var compilerRuntimeRe = regexp.MustCompile(`^__(?:(?:extend|trunc)[a-z]+[a-z]f2|(?:mul|div)[sdxt]c3|(?:fix|float)(?:uns)?[a-z]+|u?(?:div|mod)[dt]i3|u?divmod[dt]i4|pow[sdx]i2|(?:clz|ctz|popcount|parity|ffs|bswap)[sdt]i2|a(?:dd|sh[lr])[dt]i3|lshr[dt]i3|[a-z]+[sd]f3)$`)

// mathFuncs are C's math functions (double names; the f and l forms too).
var mathFuncs = setOf("acos", "asin", "atan", "atan2", "cos", "sin", "tan", "acosh", "asinh", "atanh", "cosh",
	"sinh", "tanh", "exp", "exp2", "exp10", "expm1", "log", "log10", "log2", "log1p", "logb", "ilogb", "ldexp",
	"frexp", "modf", "scalbn", "scalbln", "cbrt", "fabs", "hypot", "pow", "sqrt", "erf", "erfc", "lgamma",
	"tgamma", "ceil", "floor", "nearbyint", "rint", "lrint", "llrint", "round", "lround", "llround", "trunc",
	"fmod", "remainder", "remquo", "copysign", "nan", "nextafter", "nexttoward", "fdim", "fmax", "fmin", "fma",
	"sincos", "roundeven")

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
