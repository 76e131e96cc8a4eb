package verify_test

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/internal/cli"
)

var update = flag.Bool("update", false, "rewrite the fixtures' want.txt from verify's output")

// repoRoot is this checkout, which fixture modules replace kgen with.
func repoRoot(tb testing.TB) string {
	tb.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		tb.Fatal(err)
	}
	return root
}

const fixtures = "testdata/dispatch"

// project lays out fixture name in a temporary folder: the shared specs
// and kgen.yaml, the fixture's own files over them (none for ""), a go.mod replacing kgen
// with this checkout (unless noModule), and the outputs of `kgen gen`.
func project(tb testing.TB, name string, noModule bool) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "m")
	copyTree(tb, filepath.Join(fixtures, "specs"), filepath.Join(dir, "specs"))
	copyFile(tb, filepath.Join(fixtures, "kgen.yaml"), filepath.Join(dir, "kgen.yaml"))
	if name != "" {
		copyTree(tb, filepath.Join(fixtures, name), dir)
	}
	_ = os.Remove(filepath.Join(dir, "want.txt"))
	if !noModule {
		writeModule(tb, dir)
	}
	if out, code := kgen(dir, "gen"); code != 0 {
		tb.Fatalf("kgen gen: exit %d\n%s", code, out)
	}
	return dir
}

// writeModule makes dir the module example.com/fixture using this checkout
// of kgen.
func writeModule(tb testing.TB, dir string) {
	tb.Helper()
	root := repoRoot(tb)
	mod := "module example.com/fixture\n\ngo 1.24\n\nrequire (\n\tgithub.com/kgen-dev/kgen v0.0.0\n" + requirements(tb, root) +
		")\n\nreplace github.com/kgen-dev/kgen => " + root + "\n"
	writeFile(tb, filepath.Join(dir, "go.mod"), mod)
	copyFile(tb, filepath.Join(root, "go.sum"), filepath.Join(dir, "go.sum"))
}

// requirements lists kgen's own requirements as indirect ones, so that the
// fixture's go.mod is complete whatever kgenrt imports (go list refuses a
// go.mod that needs updates).
func requirements(tb testing.TB, root string) string {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		tb.Fatal(err)
	}
	var b strings.Builder
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		switch f := strings.Fields(line); {
		case line == "require (":
			in = true
		case line == ")":
			in = false
		case in && len(f) >= 2:
			fmt.Fprintf(&b, "\t%s %s // indirect\n", f[0], f[1])
		case len(f) >= 3 && f[0] == "require":
			fmt.Fprintf(&b, "\t%s %s // indirect\n", f[1], f[2])
		}
	}
	return b.String()
}

// kgen runs the command line in-process on the project in dir.
func kgen(dir string, args ...string) (string, int) {
	var out bytes.Buffer
	code := cli.Main(append(args, "--config", filepath.Join(dir, "kgen.yaml")), &out, &out)
	return out.String(), code
}

func copyTree(tb testing.TB, from, to string) {
	tb.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		copyFile(tb, p, filepath.Join(to, rel))
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

func copyFile(tb testing.TB, from, to string) {
	tb.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		tb.Fatal(err)
	}
	writeFile(tb, to, string(data))
}

func writeFile(tb testing.TB, p, data string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// edit is one textual change to a project file.
type edit struct{ file, old, new string }

func applyEdits(tb testing.TB, dir string, edits []edit) {
	tb.Helper()
	for _, e := range edits {
		p := filepath.Join(dir, filepath.FromSlash(e.file))
		data, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		if !bytes.Contains(data, []byte(e.old)) {
			tb.Fatalf("%s does not contain %q", e.file, e.old)
		}
		writeFile(tb, p, strings.Replace(string(data), e.old, e.new, 1))
	}
}

// checkOutput compares verify's output with the fixture's want.txt, or
// rewrites it under -update.
func checkOutput(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join(fixtures, name, "want.txt")
	if *update {
		writeFile(t, p, got)
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("kgen verify in fixture %s:\n--- got\n%s--- want\n%s", name, got, want)
	}
}
