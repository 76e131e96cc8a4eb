package kgen_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// TestGoldenGoBuilds compiles the Go packages of every golden want/ tree
// inside this module (so they can import kgen's runtime), through a build
// overlay: nothing is written into the repository.
func TestGoldenGoBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goCmd); err != nil {
		if goCmd, err = exec.LookPath("go"); err != nil {
			t.Skip("no go command")
		}
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	replace := map[string]string{}
	pkgs := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(repo, "testdata", "golden", "*", "want"))
	for _, want := range files {
		name := filepath.Base(filepath.Dir(want))
		for p := range readTree(t, want) {
			dst := filepath.Join(repo, "internal", "goldenbuild", name, filepath.FromSlash(p))
			switch {
			case strings.HasSuffix(p, ".go"):
				replace[dst] = filepath.Join(want, filepath.FromSlash(p))
				pkgs[filepath.Dir(dst)] = true
			case path.Base(path.Dir(p)) == "cudabin", path.Base(path.Dir(p)) == "hipbin":
				// The files the package's //go:embed cudabin (hipbin) needs.
				replace[dst] = filepath.Join(want, filepath.FromSlash(p))
			}
		}
	}
	if len(pkgs) == 0 {
		t.Fatal("no golden Go packages")
	}
	overlay, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		t.Fatal(err)
	}
	ovFile := filepath.Join(t.TempDir(), "overlay.json")
	if err := os.WriteFile(ovFile, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"build", "-overlay", ovFile}
	for dir := range pkgs {
		args = append(args, dir)
	}
	sort.Strings(args[3:])
	cmd := exec.Command(goCmd, args...)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the golden Go packages do not build: %v\n%s", err, out)
	}
}
