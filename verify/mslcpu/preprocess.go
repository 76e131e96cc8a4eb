package mslcpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// MetalVersion is the value of __METAL_VERSION__ the harness defines: MSL
// 3.1, the language version kgenrt compiles with.
const MetalVersion = 310

// Source options that real projects' kernels need: their own headers, the
// macros their build passes, and function-constant values chosen when the
// pipeline is made.
type SourceOptions struct {
	// Path is where the source lives; `#include "x.h"` is searched next to
	// it first, and diagnostics name it. Empty: kernel.metal, no directory.
	Path string
	// IncludeDirs are searched by #include after Path's directory (-I).
	IncludeDirs []string
	// Defines are NAME or NAME=VALUE macros (-D).
	Defines []string
	// FunctionConstants maps a function constant's name or index (as in
	// [[function_constant(20)]]) to a C++ value, e.g. "has_w": "true".
	// Constants without a value are undefined: is_function_constant_defined
	// is false for them and they read as zero.
	FunctionConstants map[string]string
}

// metalHeaders are the <metal_*> headers a kernel may include; while
// preprocessing they are empty files (the shim is included once, whole).
var metalHeaders = []string{
	"metal_stdlib", "metal_math", "metal_integer", "metal_common", "metal_compute",
	"metal_simdgroup", "metal_simdgroup_matrix", "metal_atomic", "metal_limits",
	"metal_type_traits", "metal_geometric", "metal_relational", "metal_numeric",
	"metal_matrix", "metal_pack", "metal_types", "metal_array", "metal_utility",
	"metal_graphics", "metal_texture", "metal_quadgroup", "metal_logging",
}

// predefined are the macros Apple's compiler defines for every kernel.
func predefined() []string {
	return []string{fmt.Sprintf("-D__METAL_VERSION__=%d", MetalVersion), "-D__METAL__=1", "-D__HAVE_BFLOAT__=1",
		"-D__METAL_MACOS__=1"}
}

var directiveRe = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*(?:include|define|if|ifdef|ifndef)\b`)

// needsPreprocessor reports whether the source has directives beyond
// `#include <metal_*>`: kgen's generated kernels have none and skip the
// extra clang run.
func needsPreprocessor(src []byte, o SourceOptions) bool {
	if len(o.IncludeDirs) > 0 || len(o.Defines) > 0 {
		return true
	}
	for _, loc := range directiveRe.FindAllIndex(maskComments(src), -1) {
		line := src[loc[0]:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		if m := metalIncludeRe.FindStringSubmatch(string(line)); m == nil || !slices.Contains(shimFiles, m[1]) {
			return true // a header the shim has no file for (<metal_atomic>) is empty once preprocessed
		}
	}
	return false
}

var metalIncludeRe = regexp.MustCompile(`^\s*#\s*include\s*<(metal_\w+)>\s*$`)

func metalInclude(line string) bool { return metalIncludeRe.MatchString(line) }

// preprocess expands includes and macros with clang -E, keeping line
// markers so that diagnostics and the harness's own errors name the file
// and line the text came from. The <metal_*> headers expand to nothing.
func (tc *toolchain) preprocess(ctx context.Context, src []byte, o SourceOptions) ([]byte, error) {
	stubs, err := tc.metalStubs()
	if err != nil {
		return nil, err
	}
	args := append([]string{"-E", "-std=c++20", "-x", "c++", "-nostdinc++", "-nostdlibinc"}, predefined()...)
	if o.Path != "" {
		args = append(args, "-iquote", filepath.Dir(o.Path))
	}
	for _, d := range o.IncludeDirs {
		args = append(args, "-I", d)
	}
	for _, d := range o.Defines {
		args = append(args, "-D"+d)
	}
	args = append(args, "-isystem", stubs, "-")
	name := o.Path
	if name == "" {
		name = kernelFile
	}
	in := append([]byte(fmt.Sprintf("#line 1 %q\n", name)), src...)
	out, err := tc.preprocessed(ctx, args, in)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// lineMap maps lines of preprocessed text back to the files they came from.
type lineMap struct {
	// at[i] is the position of preprocessed line i+1; empty file = unmapped.
	at []srcPos
}

type srcPos struct {
	file string
	line int
}

var markerRe = regexp.MustCompile(`^#\s*(?:line\s+)?(\d+)\s+"((?:[^"\\]|\\.)*)"`)

// newLineMap reads clang's `# N "file"` markers.
func newLineMap(text []byte, defaultFile string) *lineMap {
	m := &lineMap{}
	cur := srcPos{defaultFile, 1}
	for _, line := range strings.Split(string(text), "\n") {
		if g := markerRe.FindStringSubmatch(line); g != nil {
			n, _ := strconv.Atoi(g[1])
			file, err := strconv.Unquote(`"` + g[2] + `"`)
			if err != nil {
				file = g[2]
			}
			m.at = append(m.at, cur)
			cur = srcPos{file, n}
			continue
		}
		m.at = append(m.at, cur)
		cur.line++
	}
	return m
}

// pos names preprocessed line n (1-based) as file:line.
func (m *lineMap) pos(n int) string {
	if m == nil || n < 1 || n > len(m.at) {
		return fmt.Sprintf("%s:%d", kernelFile, n)
	}
	p := m.at[n-1]
	return fmt.Sprintf("%s:%d", p.file, p.line)
}

// metalStubs returns a directory of empty <metal_*> headers for preprocess.
func (tc *toolchain) metalStubs() (string, error) {
	dir := filepath.Join(tc.cache, "stubs-"+tc.key("stubs", nil, metalHeaders...)[:16])
	for _, name := range metalHeaders {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err == nil {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		if err := writeAtomic(path, []byte("// empty while preprocessing: the shim is included once, whole\n"), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// preprocessed runs clang -E and returns its output: at most
// MaxPreprocessedBytes (more is a LimitError, and clang is stopped),
// diagnostics as a *CompileError.
func (tc *toolchain) preprocessed(ctx context.Context, args []string, stdin []byte) ([]byte, error) {
	c := child{what: "preprocessing", path: tc.cxx, args: args, stdin: stdin, memory: PreprocessorMemory,
		stdoutN: MaxPreprocessedBytes,
		outErr:  fmt.Sprintf("the preprocessed source is over %s (a macro or #include that expands without bound?)", Bytes(MaxPreprocessedBytes))}
	res, err := c.run(ctx)
	if err != nil {
		return nil, err
	}
	if res.err != nil {
		return nil, &CompileError{Diagnostics: compilerDiagnostics(res.stderr, res.err, PreprocessorMemory)}
	}
	return res.stdout, nil
}

// load turns a launch's source into a parsed program: preprocessed first
// when it has directives of its own or the launch passes -I or -D.
func (tc *toolchain) load(ctx context.Context, src []byte, o SourceOptions) (*program, error) {
	var lines *lineMap
	if needsPreprocessor(src, o) {
		text, err := tc.preprocess(ctx, src, o)
		if err != nil {
			return nil, err
		}
		src, lines = text, newLineMap(text, kernelFile) // linear: no deadline needed
	}
	p, err := within(ctx, "reading the source", func() (*program, error) { return parseRemembered(src, o.FunctionConstants, lines) })
	if err != nil {
		var se *StoppedError
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, fmt.Errorf("mslcpu: %w", err)
	}
	return p, nil
}
