package ir_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/spec"
)

// build writes one spec into a temporary specs folder, loads it with the
// real loader (spec.LoadDir) and builds it with ir.Build; it returns the
// kernel (nil when the spec has errors) and the diagnostics.
func build(t *testing.T, yaml string) (*ir.Kernel, []diag.Diagnostic) {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "specs"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := strings.TrimLeft(yaml, "\n")
	if err := os.WriteFile(filepath.Join(root, "specs", "k.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var diags diag.List
	specs := spec.LoadDir(root, "specs", &diags)
	if diags.Len() > 0 {
		return nil, diags.Sorted()
	}
	ks := ir.Build(specs, &diags)
	if diags.Len() > 0 || len(ks) != 1 {
		return nil, diags.Sorted()
	}
	return ks[0], nil
}

// mustBuild is build for specs that must be valid.
func mustBuild(t *testing.T, yaml string) *ir.Kernel {
	t.Helper()
	k, diags := build(t, yaml)
	if k == nil {
		t.Fatalf("the spec does not build: %v\n%s", diags, yaml)
	}
	return k
}

// withThreadgroup returns a spec with a threadgroup line appended.
func withThreadgroup(yaml string, tg int) string {
	return strings.TrimRight(yaml, "\n") + "\nthreadgroup: " + strconv.Itoa(tg) + "\n"
}
