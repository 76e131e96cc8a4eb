package lsp

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSameErrorsAsGen: for every case of the bad-spec catalog, the
// server's diagnostics of each spec, read as an editor buffer, are the
// lines gen prints for that file (testdata/bad/<case>/stderr.txt), position
// and message alike.
func TestSameErrorsAsGen(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "bad")
	cases, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0 // specs with at least one error compared
	for _, c := range cases {
		dir, err := filepath.Abs(filepath.Join(root, c.Name()))
		if err != nil {
			t.Fatal(err)
		}
		stderr, err := os.ReadFile(filepath.Join(dir, "stderr.txt"))
		if err != nil {
			continue
		}
		filepath.WalkDir(filepath.Join(dir, "specs"), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || (filepath.Ext(p) != ".yaml" && filepath.Ext(p) != ".yml") {
				return err
			}
			text, err := os.ReadFile(p)
			if err != nil {
				return nil // unreadable on purpose: gen's folder walk reports it
			}
			a := analyze(p, string(text), env{disk: newDiskSpecs()})
			var got []string
			for _, d := range a.diags {
				got = append(got, d.String())
			}
			var want []string
			for _, l := range strings.Split(string(stderr), "\n") {
				if strings.HasPrefix(l, a.rel+":") {
					want = append(want, l)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s %s:\n got %s\nwant %s", c.Name(), a.rel, fmt.Sprintf("%q", got), fmt.Sprintf("%q", want))
			}
			if len(want) > 0 {
				checked++
			}
			return nil
		})
	}
	if checked < 100 {
		t.Errorf("compared the errors of %d specs of the catalog; want at least 100", checked)
	}
}
