package mslcpu

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzPrepass: emu's reading of a source before clang sees it (the
// pre-pass rewrites, kernel and host_name parsing, the threadgroup
// rewrite, --strict's host-code scan, line markers) never panics on any
// bytes, never moves a line (diagnostics keep their line numbers), and
// gives every error a position in the file.
func FuzzPrepass(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.metal")
	more, _ := filepath.Glob("testdata/realistic/*")
	for _, file := range append(files, more...) {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{clampmulSource, sandboxSource, "", "threadgroup", "{ threadgroup float a[4], b[2]; }",
		"void f() { threadgroup vec<T, 4> x[N], *p; threadgroup float y[2] = {}; }",
		"kernel void k(threadgroup float* t [[threadgroup(0)]], threadgroup float s[4],",
		`template [[host_name("a" "b")]] [[kernel]] decltype(f<float>) f<float>;`,
		"# 1 \"x.h\"\n{ threadgroup float q[8]; }\n# 2 \"k.metal\" 2\n", `extern "C" { __attribute__((constructor)) void f(); asm("") }`,
		"constant bool b [[function_constant(3)]];\n\"unterminated\n'", "/* open comment\n{ threadgroup int z; "} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		needsPreprocessor(src, SourceOptions{})
		newLineMap(src, kernelFile)
		out, err := prepass(src)
		if err == nil && bytes.Count(out, []byte("\n")) != bytes.Count(src, []byte("\n")) {
			t.Errorf("the pre-pass moved lines: %d in, %d out", bytes.Count(src, []byte("\n")), bytes.Count(out, []byte("\n")))
		}
		checkPositioned(t, err)
		p, err := parseProgram(src, map[string]string{"b": "true", "3": "1"}, nil)
		checkPositioned(t, err)
		if err != nil {
			return
		}
		if bytes.Count(p.text, []byte("\n")) != bytes.Count(src, []byte("\n")) {
			t.Errorf("parseProgram moved lines")
		}
		if err := hostConstructs(p); err != nil && !strings.HasPrefix(err.(*HostCodeError).Pos, kernelFile+":") {
			t.Errorf("host-code error without a position: %v", err)
		}
		translationUnit(p)
	})
}

// checkPositioned fails on a parse error that names no kernel.metal line.
func checkPositioned(t *testing.T, err error) {
	t.Helper()
	if err != nil && !strings.Contains(err.Error(), kernelFile+":") {
		t.Errorf("error without a position: %v", err)
	}
}
