package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// goTool returns the go command, skipping the test when there is none.
func goTool(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the go command")
	}
	bin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: the go-command tests need it")
	}
	return bin
}

// goRun runs the go command in dir with extra environment and returns its
// combined output; err is the command's failure.
func goRun(t *testing.T, dir string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(goTool(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"GOWORK=off", "GOFLAGS="}, env...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustGo is goRun failing the test on error.
func mustGo(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	out, err := goRun(t, dir, env, args...)
	if err != nil {
		t.Fatalf("go %s (%v): %v\n%s", strings.Join(args, " "), env, err, out)
	}
	return out
}

// writeFiles writes name → content under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// copyDir copies the regular files of src (not recursing) into dst,
// skipping tests, with edit applied to each file's text.
func copyDir(t *testing.T, src, dst string, edit func(name, text string) string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		if e.IsDir() || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = edit(e.Name(), string(data))
	}
	writeFiles(t, dst, files)
}

func keep(_, text string) string { return text }
