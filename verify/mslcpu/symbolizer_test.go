package mslcpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSymbolizerMatchesTheCompiler: the symbolizer found is of the
// compiler's LLVM, even where an older unversioned one is first on PATH.
func TestSymbolizerMatchesTheCompiler(t *testing.T) {
	cxx, err := Compiler()
	if err != nil {
		t.Skip(err)
	}
	v, _ := compilerVersion(cxx)
	sym, err := Symbolizer(cxx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := compilerVersion(sym)
	if err != nil || llvmMajor(got) != clangMajor(v) {
		t.Fatalf("%s is LLVM %d; %s is clang %d", sym, llvmMajor(got), cxx, clangMajor(v))
	}
}

// fakeTool writes an executable script printing version.
func fakeTool(t *testing.T, dir, name, version string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho '"+version+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSymbolizerOfAnotherVersionIsRefused is the case: clang-19
// with only an older llvm-symbolizer. The message names the version
// needed, the one found, and what to install.
func TestSymbolizerOfAnotherVersionIsRefused(t *testing.T) {
	bin := t.TempDir()
	cxx := fakeTool(t, bin, "clang++-97", "Debian clang version 97.0.1")
	fakeTool(t, bin, "llvm-symbolizer", "LLVM (http://llvm.org/):\n  LLVM version 14.0.6")
	t.Setenv("PATH", bin)
	_, err := Symbolizer(cxx)
	if err == nil {
		t.Fatal("an LLVM 14 symbolizer was accepted for clang 97")
	}
	for _, want := range []string{"LLVM 97", "(LLVM 14)", "apt-get install llvm-97"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	fakeTool(t, bin, "llvm-symbolizer-97", "LLVM version 97.0.1")
	if sym, err := Symbolizer(cxx); err != nil || filepath.Base(sym) != "llvm-symbolizer-97" {
		t.Errorf("with llvm-symbolizer-97 on PATH: %q, %v", sym, err)
	}
}
