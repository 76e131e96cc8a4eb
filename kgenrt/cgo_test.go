package kgenrt

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// No Mac runs these tests, so the Go half of the darwin cgo code is checked
// here against its C header: the darwin files are copied with their build
// lines and framework flags stripped (and the Objective-C left out) into a
// scratch copy of the package, which `go vet` then type-checks with cgo on
// this host's C compiler. What stays unchecked is metal_darwin.m itself.
func TestDarwinCgoGoSideTypeChecks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds with cgo")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	cc := strings.TrimSpace(run(t, goBin, ".", nil, "env", "CC"))
	if _, err := exec.LookPath(strings.Fields(cc + " gcc")[0]); err != nil {
		t.Skipf("no C compiler (%s)", cc)
	}
	root := t.TempDir()
	pkg := filepath.Join(root, "kgenrt")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"../go.mod", "../go.sum"} {
		copyFile(t, f, filepath.Join(root, filepath.Base(f)), nil)
	}
	// kgenrt imports the leaf package launch; the scratch module carries it.
	if err := os.MkdirAll(filepath.Join(root, "launch"), 0o755); err != nil {
		t.Fatal(err)
	}
	leaf, _ := filepath.Glob("../launch/*.go")
	for _, f := range leaf {
		if !strings.HasSuffix(f, "_test.go") {
			copyFile(t, f, filepath.Join(root, "launch", filepath.Base(f)), nil)
		}
	}
	strip := regexp.MustCompile(`(?m)^(//go:build .*|#cgo .*)$`)
	files, _ := filepath.Glob("*")
	for _, f := range files {
		switch {
		case f == "metal_other.go" || f == "cuda_other.go" || f == "rocm_other.go" || strings.HasSuffix(f, "_test.go") || strings.HasSuffix(f, ".m"):
			continue
		case strings.HasSuffix(f, ".go") || strings.HasSuffix(f, ".h"):
			dst := f
			if strings.HasSuffix(f, ".go") {
				dst = strings.Replace(f, "_darwin", "_cgo", 1) // a _darwin suffix would exclude it
			}
			copyFile(t, f, filepath.Join(pkg, dst), strip)
		}
	}
	env := []string{"CGO_ENABLED=1", "GOFLAGS=-mod=mod", "GOWORK=off"}
	run(t, goBin, root, env, "vet", "./kgenrt")
}

func copyFile(t *testing.T, src, dst string, strip *regexp.Regexp) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if strip != nil {
		data = strip.ReplaceAll(data, nil)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, bin, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	return string(out)
}
