package breaking

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/diag"
)

// UsageError is an --against that names nothing to compare with: no such
// folder or git ref, or a tree without kgen.yaml. The command exits 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error { return &UsageError{fmt.Sprintf(format, args...)} }

// Old is the older tree of a comparison, read from another checkout or
// from a git ref (written to a temporary folder; Close removes it).
type Old struct {
	Label  string         // as the user named it: "main", "../old"
	Config *config.Config // its kgen.yaml
	// NoSpecs, when set, says why there is nothing to compare: the tree
	// has no spec files.
	NoSpecs string
	temp    string
}

// Close removes the temporary copy of a git ref's specs.
func (o *Old) Close() error {
	if o.temp == "" {
		return nil
	}
	return os.RemoveAll(o.temp)
}

// Load builds the older tree's kernels. Its spec errors come back as one
// plain error naming the tree, never as diagnostics of the current specs.
func (o *Old) Load() (*Specs, error) {
	if o.NoSpecs != "" {
		return &Specs{}, nil
	}
	s, err := Load(o.Config)
	if de, ok := diag.AsError(err); ok {
		return nil, fmt.Errorf("--against %s: its specs do not load with this kgen (compare against a later tree, or fix them there):\n    %s",
			o.Label, strings.ReplaceAll(de.Error(), "\n", "\n    "))
	}
	return s, err
}

// Against finds the older tree cur is compared with: arg is a folder (a
// checkout holding kgen.yaml, or holding it at the same path, relative to
// the repository root, as cur's) or a kgen.yaml in one, else a git ref of
// the repository cur's kgen.yaml is in (main, HEAD~1, origin/main, a
// commit).
func Against(cur *config.Config, arg string) (*Old, error) {
	if arg == "" {
		return nil, usagef("--against is required: a git ref (main, HEAD~1, origin/main, a commit) or a folder holding the older kgen.yaml")
	}
	if st, err := os.Stat(arg); err == nil {
		file := arg
		if st.IsDir() {
			if file, err = configInFolder(cur, arg); err != nil {
				return nil, err
			}
		}
		return fromFile(arg, file)
	}
	return fromGit(cur, arg)
}

// configInFolder is the older kgen.yaml inside folder dir.
func configInFolder(cur *config.Config, dir string) (string, error) {
	name := filepath.Base(cur.Path)
	tried := []string{filepath.Join(dir, name)}
	if top, rel, err := repoPath(cur); err == nil && top != "" && rel != "." {
		tried = append(tried, filepath.Join(dir, filepath.FromSlash(rel), name))
	}
	for _, p := range tried {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", usagef("--against %s: the folder holds no %s (looked for %s); name the older checkout's kgen.yaml or its folder",
		dir, name, strings.Join(tried, " and "))
}

// fromFile reads an older kgen.yaml on disk.
func fromFile(label, file string) (*Old, error) {
	cfg, err := config.Load(file)
	if err != nil {
		return nil, fmt.Errorf("--against %s: its %s does not load: %v", label, filepath.Base(file), err)
	}
	o := &Old{Label: label, Config: cfg}
	if !hasSpecFiles(filepath.Join(cfg.Dir, filepath.FromSlash(cfg.Specs))) {
		o.NoSpecs = fmt.Sprintf("%s has no spec files in %s: nothing to compare", label, cfg.Specs)
	}
	return o, nil
}

// hasSpecFiles reports whether dir holds a *.yaml or *.yml file at any
// depth.
func hasSpecFiles(dir string) bool {
	found := errors.New("found")
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && isSpecFile(p) {
			return found
		}
		return nil
	})
	return err == found
}

func isSpecFile(p string) bool { return strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml") }

// repoPath is the root of the git repository cur's kgen.yaml is in, and
// the config folder relative to it (slash-separated, "." at the root).
func repoPath(cur *config.Config) (top, rel string, err error) {
	out, err := git(cur.Dir, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", "", err
	}
	top = strings.TrimSpace(string(out))
	realTop, err1 := filepath.EvalSymlinks(top)
	realDir, err2 := filepath.EvalSymlinks(cur.Dir)
	if err1 != nil || err2 != nil {
		realTop, realDir = top, cur.Dir
	}
	r, err := filepath.Rel(realTop, realDir)
	if err != nil {
		return "", "", err
	}
	return top, filepath.ToSlash(r), nil
}

// git runs git in dir and returns its standard output; its error carries
// git's own message.
func git(dir string, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Stdin = dir, stdin
	cmd.Env = append(os.Environ(), "GIT_LITERAL_PATHSPECS=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return nil, fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
		}
		return nil, fmt.Errorf("git %s: %v", strings.Join(args, " "), err)
	}
	return out, nil
}
