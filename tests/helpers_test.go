// Package kgen_test holds kgen's end-to-end suites: the bad-spec catalog
// (testdata/bad, testdata/badconfig), the golden outputs (testdata/golden)
// and the JSON Schema checks. Each case is a folder with a kgen.yaml and a
// specs/ folder; the suites run kgen in-process on a temporary copy.
//
// go test ./tests -update rewrites the expected files from kgen's output;
// read the diff before committing it.
package kgen_test

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/kgen-dev/kgen/internal/cli"
)

var update = flag.Bool("update", false, "rewrite expected files (stderr.txt, want/) from kgen's output")

// caseDirs lists the case folders under root, in name order.
func caseDirs(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// copyCase copies a case's inputs (kgen.yaml and specs/) to a fresh temp
// folder and returns it.
func copyCase(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	for _, name := range []string{"kgen.yaml", "specs"} {
		if err := copyTree(filepath.Join(src, name), filepath.Join(dst, name)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	return dst
}

// copyTree copies a file or a folder recursively.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// fileState is what a snapshot remembers of one file.
type fileState struct {
	sum   [32]byte
	mtime time.Time
}

// snapshot records every file and folder under root: content hash and mtime.
func snapshot(t *testing.T, root string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[rel+"/"] = fileState{mtime: info.ModTime()}
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = fileState{sum: sha256.Sum256(data), mtime: info.ModTime()}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// compareSnapshots reports every path created, removed or changed.
func compareSnapshots(t *testing.T, before, after map[string]fileState) {
	t.Helper()
	var diffs []string
	for p, a := range after {
		b, ok := before[p]
		switch {
		case !ok:
			diffs = append(diffs, "created "+p)
		case b != a:
			diffs = append(diffs, "changed "+p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			diffs = append(diffs, "removed "+p)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("the file tree changed:\n  %s", strings.Join(diffs, "\n  "))
	}
}

// kgen runs the CLI in-process on the project at dir.
func kgen(dir string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	full := append([]string{"--config", filepath.Join(dir, "kgen.yaml")}, args...)
	code = cli.Main(full, &out, &errb)
	// Messages that are not diagnostics may name the temp folder.
	clean := func(s string) string { return strings.ReplaceAll(s, dir, "$WORK") }
	return code, clean(out.String()), clean(errb.String())
}

// checkText compares got with the file want, rewriting it under -update.
func checkText(t *testing.T, wantFile, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(wantFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(wantFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(wantFile)
	if err != nil {
		t.Fatalf("%v (run go test ./tests -update to create it)", err)
	}
	if d := unifiedDiff(wantFile, string(want), got); d != "" {
		t.Errorf("%s differs from kgen's output (-want +got):\n%s", wantFile, d)
	}
}

// unifiedDiff is "" when a == b, else their unified diff.
func unifiedDiff(name, a, b string) string {
	if a == b {
		return ""
	}
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(a), B: difflib.SplitLines(b),
		FromFile: name + " (want)", ToFile: name + " (got)", Context: 3,
	})
	if err != nil {
		return fmt.Sprintf("diff failed: %v", err)
	}
	if d == "" { // differences difflib does not show, e.g. a missing final newline
		d = fmt.Sprintf("want %q\n got %q", a, b)
	}
	return d
}
