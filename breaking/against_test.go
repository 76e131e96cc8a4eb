package breaking

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/config"
)

// gitRepo makes a repository whose kgen.yaml lies in sub/, commits the
// specs, then rewrites them as cur; it returns the current config.
func gitRepo(t *testing.T, old, cur map[string]string) *config.Config {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q")
	write(t, dir, "sub/kgen.yaml", kgenYAML)
	for name, text := range old {
		write(t, dir, "sub/specs/"+name, text)
	}
	run("add", "-A")
	run("commit", "-q", "-m", "v1")
	run("rm", "-q", "-r", "sub/specs")
	for name, text := range cur {
		write(t, dir, "sub/specs/"+name, text)
	}
	cfg, err := config.Load(filepath.Join(dir, "sub", "kgen.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestAgainstGitRef(t *testing.T) {
	cfg := gitRepo(t, map[string]string{"gelu.yaml": gelu, "nested/swiglu.yaml": swiglu},
		map[string]string{"swiglu.yaml": strings.Replace(swiglu, "[gate, up]", "[up, gate]", 1)})
	old, err := Against(cfg, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	before, err := old.Load()
	if err != nil {
		t.Fatal(err)
	}
	now, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := Check(before, now, old.Label, nil)
	var got []string
	for _, f := range r.Findings {
		got = append(got, f.Pos.String()+" "+f.Rule)
	}
	want := []string{"specs/swiglu.yaml:3:10 " + BindingReordered, "specs/gelu.yaml:1:9 " + KernelRemoved}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestAgainstUnknownRefIsAUsageError(t *testing.T) {
	cfg := gitRepo(t, map[string]string{"gelu.yaml": gelu}, map[string]string{"gelu.yaml": gelu})
	for _, ref := range []string{"no-such-branch", "--output=x"} {
		_, err := Against(cfg, ref)
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), ref) {
			t.Errorf("Against(%q) = %v, want a usage error naming it", ref, err)
		}
	}
}

func TestAgainstFolder(t *testing.T) {
	oldCfg := project(t, map[string]string{"gelu.yaml": gelu})
	cur := project(t, map[string]string{"gelu.yaml": strings.Replace(gelu, "[f32, f16]", "[f16]", 1)})
	for _, arg := range []string{oldCfg.Dir, oldCfg.Path} {
		old, err := Against(cur, arg)
		if err != nil {
			t.Fatal(err)
		}
		before, err := old.Load()
		if err != nil {
			t.Fatal(err)
		}
		now, _ := Load(cur)
		if fs := Compare(before, now, arg); len(fs) != 1 || fs[0].Rule != DTypeRemoved {
			t.Errorf("against %s: %v", arg, fs)
		}
	}
	_, err := Against(cur, t.TempDir())
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "holds no kgen.yaml") {
		t.Errorf("a folder without kgen.yaml: %v", err)
	}
}

func TestAgainstTreeWithoutSpecs(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "kgen.yaml", kgenYAML)
	cur := project(t, map[string]string{"gelu.yaml": gelu})
	old, err := Against(cur, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(old.NoSpecs, "has no spec files in specs") {
		t.Errorf("NoSpecs = %q", old.NoSpecs)
	}
	if s, err := old.Load(); err != nil || len(s.Kernels) != 0 {
		t.Errorf("Load = %v, %v", s, err)
	}
}

func TestAgainstBrokenOldSpecs(t *testing.T) {
	oldCfg := project(t, map[string]string{"gelu.yaml": "kernel: gelu\ndtypes: [f99]\n"})
	cur := project(t, map[string]string{"gelu.yaml": gelu})
	old, err := Against(cur, oldCfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Load(); err == nil || !strings.Contains(err.Error(), "its specs do not load") {
		t.Errorf("Load = %v", err)
	}
}

func TestAgainstRefOutsideGit(t *testing.T) {
	cur := project(t, map[string]string{"gelu.yaml": gelu})
	if _, _, err := repoPath(cur); err == nil {
		t.Skip("the temporary folder is inside a git repository")
	}
	_, err := Against(cur, "main")
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--against main: no such folder") {
		t.Errorf("Against outside git = %v, want a usage error", err)
	}
}
