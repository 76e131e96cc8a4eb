package spec

import (
	"regexp"
	"sort"
	"strings"
)

// MaxNameLen bounds every kernel and value name.
const MaxNameLen = 64

var identRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// reserved holds the words a kernel or value name may not be: keywords and
// type names of C++, MSL and Go, and names the generated code uses itself.
var reserved = func() map[string]bool {
	words := []string{
		// C++ keywords and alternative tokens.
		"alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
		"case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
		"const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
		"co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
		"else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
		"if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
		"nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
		"reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
		"static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
		"throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
		"virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
		// MSL keywords, address spaces and scalar types.
		"kernel", "vertex", "fragment", "visible", "device", "constant", "thread", "threadgroup",
		"threadgroup_imageblock", "ray_data", "object_data", "half", "bfloat", "uint", "ushort",
		"uchar", "ulong", "size_t", "ptrdiff_t", "metal", "as_type", "vec",
		// Go keywords, and the predeclared names generated Go code calls.
		"chan", "defer", "fallthrough", "func", "go", "import", "interface", "map", "package",
		"range", "select", "type", "var", "error", "string", "len", "nil", "any", "append",
		"copy", "make", "panic", "byte", "float32", "float64", "uint16", "uint32", "int32",
		// Names the generated kernels and launchers use.
		"args", "gid", "base", "count", "n", "rows", "cols", "pi", "main",
		// The indices rowwise formulas read (the generated code declares
		// them beside user names).
		"row", "col",
	}
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}()

// CheckName returns "" when name may name a value (an input, param,
// constant, let, output or segment), else why not. Formula-function names
// are refused for values later, by the formula checker, which knows the
// functions.
func CheckName(name string) string {
	if why, ok := cReserved[name]; ok && !reserved[name] {
		return why
	}
	switch {
	case name == "":
		return "must not be empty"
	case len(name) > MaxNameLen:
		return "is longer than 64 characters"
	case !identRE.MatchString(name):
		return "must match ^[a-z][a-z0-9_]*$ (lower case letters, digits and _, starting with a letter)"
	case strings.HasPrefix(name, "kgen"):
		return "must not start with \"kgen\" (reserved for generated code)"
	case reserved[name]:
		return "is a reserved word (a keyword or name of C++, MSL or Go, or one kgen's generated code uses)"
	}
	return ""
}

// CheckKernelName is CheckName for the kernel name, which becomes a global
// of the generated MSL (see metalLibrary).
func CheckKernelName(name string) string {
	if why := CheckName(name); why != "" {
		return why
	}
	return reservedKernel[name]
}

// sortedKeys returns a map's keys in order, for suggestions and messages.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
