package kgen_test

import (
	"bytes"
	"go/format"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/spec"
)

// TestGolden runs `kgen gen` and `kgen list --json` on every
// testdata/golden case and compares everything they produce with want/,
// byte for byte. It also checks that output does not depend on the folder
// it is generated in, that a second gen changes nothing (not even an
// mtime), and that verify then passes.
func TestGolden(t *testing.T) {
	root := filepath.Join("..", "testdata", "golden")
	for _, name := range caseDirs(t, root) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checkGolden(t, filepath.Join(root, name))
		})
	}
}

func checkGolden(t *testing.T, dir string) {
	work := copyCase(t, dir)
	got := generateTree(t, work)
	want := filepath.Join(dir, "want")
	if *update {
		if err := os.RemoveAll(want); err != nil {
			t.Fatal(err)
		}
		for p, data := range got {
			full := filepath.Join(want, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		compareTrees(t, want, readTree(t, want), got)
	}

	// The same inputs in another folder give the same bytes.
	other := copyCase(t, dir)
	compareTrees(t, "a second folder", got, generateTree(t, other))

	// A second gen writes nothing and keeps every mtime.
	before := snapshot(t, work)
	code, stdout, stderr := kgen(work, "gen")
	if code != 0 || !strings.Contains(stdout, " 0 written, 0 removed,") {
		t.Errorf("second kgen gen: exit %d, stdout %q, stderr %q; want 0 written, 0 removed", code, stdout, stderr)
	}
	compareSnapshots(t, before, snapshot(t, work))

	if code, stdout, stderr := kgen(work, "verify"); code != 0 {
		t.Errorf("kgen verify after gen exited %d:\n%s%s", code, stdout, stderr)
	}
	for p, data := range got {
		if strings.HasSuffix(p, ".go") {
			if formatted, err := format.Source(data); err != nil || !bytes.Equal(formatted, data) {
				t.Errorf("%s is not gofmt-formatted Go (err %v)", p, err)
			}
		}
	}
}

// generateTree runs gen and list --json in work and returns every file gen
// created (relative to work) plus list.json.
func generateTree(t *testing.T, work string) map[string][]byte {
	t.Helper()
	code, stdout, stderr := kgen(work, "gen")
	if code != 0 {
		t.Fatalf("kgen gen exited %d:\n%s", code, stderr)
	}
	if stderr != "" {
		t.Errorf("kgen gen wrote to stderr:\n%s", stderr)
	}
	tree := readTree(t, work)
	delete(tree, "kgen.yaml")
	for p := range tree {
		if strings.HasPrefix(p, "specs/") {
			delete(tree, p)
		}
	}
	code, stdout, stderr = kgen(work, "list", "--json")
	if code != 0 {
		t.Fatalf("kgen list --json exited %d:\n%s", code, stderr)
	}
	tree["list.json"] = []byte(stdout)
	return tree
}

// readTree reads every file under root, keyed by slash-separated path.
func readTree(t *testing.T, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		t.Fatalf("%v (run go test ./tests -run TestGolden -update to create want/)", err)
	}
	return out
}

// compareTrees reports files missing from or extra in got, and a unified
// diff of every file that differs.
func compareTrees(t *testing.T, wantName string, want, got map[string][]byte) {
	t.Helper()
	paths := map[string]bool{}
	for p := range want {
		paths[p] = true
	}
	for p := range got {
		paths[p] = true
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	for _, p := range sorted {
		w, inWant := want[p]
		g, inGot := got[p]
		switch {
		case !inGot:
			t.Errorf("%s: in %s but not generated", p, wantName)
		case !inWant:
			t.Errorf("%s: generated but not in %s", p, wantName)
		case !bytes.Equal(w, g):
			t.Errorf("%s differs from %s (-want +got):\n%s", p, wantName, unifiedDiff(p, string(w), string(g)))
		}
	}
}

// TestGoldenCoversLanguage keeps the golden specs using every function of
// the formula language (the rowwise reductions aside until rowwise kernels
// are generated) and every operator.
func TestGoldenCoversLanguage(t *testing.T) {
	var text strings.Builder
	dirs, _ := filepath.Glob(filepath.Join("..", "testdata", "golden", "*", "specs"))
	for _, dir := range dirs {
		for _, f := range specFiles(t, dir) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			text.Write(data)
		}
	}
	all := text.String()
	for _, name := range funcs.Names() {
		if !strings.Contains(all, name+"(") {
			t.Errorf("no golden spec calls %s", name)
		}
	}
	for _, op := range []string{" + ", " - ", " * ", " / ", " < ", " <= ", " > ", " >= ", " == ", " != ", " && ", " || ", "!", "-(", " % ", " & ", " | ", " ^ ", " << ", " >> "} {
		if !strings.Contains(all, op) {
			t.Errorf("no golden spec uses %q", strings.TrimSpace(op))
		}
	}
	for _, field := range spec.Fields {
		if !strings.Contains(all, "\n"+field+":") {
			t.Errorf("no golden spec sets %s", field)
		}
	}
}
