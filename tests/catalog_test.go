package kgen_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// minBadCases keeps the catalog from shrinking by accident.
const minBadCases = 45

// TestBadSpecs runs `kgen gen` on every testdata/bad case: it must exit 1,
// print exactly stderr.txt (every diagnostic, sorted, then the count), and
// create, change or remove nothing. verify and list must fail with the same
// diagnostics.
func TestBadSpecs(t *testing.T) {
	root := filepath.Join("..", "testdata", "bad")
	cases := caseDirs(t, root)
	if len(cases) < minBadCases {
		t.Errorf("the catalog has %d cases; want at least %d", len(cases), minBadCases)
	}
	for _, name := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checkFailure(t, filepath.Join(root, name))
		})
	}
}

// TestBadConfigs does the same for broken kgen.yaml files.
func TestBadConfigs(t *testing.T) {
	root := filepath.Join("..", "testdata", "badconfig")
	for _, name := range caseDirs(t, root) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checkFailure(t, filepath.Join(root, name))
		})
	}
}

func checkFailure(t *testing.T, dir string) {
	if _, err := os.Stat(filepath.Join(dir, "specs")); err != nil {
		t.Fatalf("a case needs a specs/ folder: %v", err)
	}
	work := copyCase(t, dir)
	before := snapshot(t, work)
	code, stdout, stderr := kgen(work, "gen")
	if code != 1 {
		t.Errorf("kgen gen exited %d; want 1", code)
	}
	if stdout != "" {
		t.Errorf("kgen gen printed on stdout:\n%s", stdout)
	}
	if !strings.HasSuffix(stderr, "; nothing written\n") {
		t.Errorf("stderr does not end with the \"nothing written\" line:\n%s", stderr)
	}
	checkText(t, filepath.Join(dir, "stderr.txt"), stderr)

	// verify and list report the same diagnostics and write nothing either.
	diags := stderr[:strings.LastIndex(strings.TrimSuffix(stderr, "\n"), "\n")+1]
	for _, args := range [][]string{{"verify"}, {"verify", "--format", "github"}, {"list", "--json"}} {
		code, stdout, stderr := kgen(work, args...)
		if code != 1 {
			t.Errorf("kgen %s exited %d; want 1", strings.Join(args, " "), code)
		}
		if args[len(args)-1] == "github" {
			continue // same findings, other syntax: the scripts check it
		}
		if !strings.Contains(stdout+stderr, diags) {
			t.Errorf("kgen %s does not report the same diagnostics:\n%s%s\nwant:\n%s", strings.Join(args, " "), stdout, stderr, diags)
		}
	}
	compareSnapshots(t, before, snapshot(t, work))
}
