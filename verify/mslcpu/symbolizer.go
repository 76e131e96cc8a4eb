package mslcpu

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
)

// llvmVersionRe reads an LLVM tool's --version ("LLVM version 19.1.7").
var llvmVersionRe = regexp.MustCompile(`LLVM version (\d+)`)

func llvmMajor(version string) int {
	m := llvmVersionRe.FindStringSubmatch(version)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// Symbolizer returns the llvm-symbolizer of the same LLVM major version as
// the compiler cxx. Sanitizer reports name kernel.metal lines only when the
// symbolizer reads the compiler's debug information; an older one (the
// unversioned llvm-symbolizer of an older LLVM, first on PATH) fails on
// newer DWARF, so one of another version is never used. It looks next to
// the compiler (after symlinks), then for llvm-symbolizer-<major> on PATH
// and in /usr/lib/llvm-<major>/bin, then at an unversioned llvm-symbolizer
// on PATH whose --version matches. The error names the version needed,
// what was found instead, and the Debian package to install.
func Symbolizer(cxx string) (string, error) {
	v, err := compilerVersion(cxx)
	if err != nil {
		return "", err
	}
	major := clangMajor(v)
	var candidates []string
	if real, err := filepath.EvalSymlinks(cxx); err == nil {
		candidates = append(candidates, filepath.Join(filepath.Dir(real), "llvm-symbolizer"))
	}
	if p, err := exec.LookPath("llvm-symbolizer-" + strconv.Itoa(major)); err == nil {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, fmt.Sprintf("/usr/lib/llvm-%d/bin/llvm-symbolizer", major))
	if p, err := exec.LookPath("llvm-symbolizer"); err == nil {
		candidates = append(candidates, p)
	}
	var wrong []string
	for _, c := range candidates {
		if st, err := os.Stat(c); err != nil || st.IsDir() {
			continue
		}
		got, err := compilerVersion(c)
		if err != nil {
			continue
		}
		if m := llvmMajor(got); m == major {
			return c, nil
		} else {
			wrong = append(wrong, fmt.Sprintf("%s (LLVM %d)", c, m))
		}
	}
	msg := fmt.Sprintf("mslcpu: no llvm-symbolizer of LLVM %d, the version of %s", major, cxx)
	if len(wrong) > 0 {
		msg += fmt.Sprintf("; found only %v, which cannot read its debug information", wrong)
	}
	return "", fmt.Errorf("%s: install it (on Debian: apt-get install llvm-%d)", msg, major)
}
