package breaking

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/kgen-dev/kgen/config"
)

// fromGit reads the older tree from git ref ref of the repository cur's
// kgen.yaml is in: its kgen.yaml at the same path and its specs folder,
// written to a temporary folder laid out as in the repository.
func fromGit(cur *config.Config, ref string) (*Old, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, usagef("--against %s: no such folder, and no git on PATH to read a ref with", ref)
	}
	top, rel, err := repoPath(cur)
	if err != nil {
		return nil, usagef("--against %s: no such folder, and %s is not in a git repository to read a ref from", ref, filepath.Base(cur.Path))
	}
	commit, err := resolveRef(top, ref)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(cur.Path)
	cfgPath := path.Join(rel, name)
	src, err := git(top, nil, "show", commit+":"+cfgPath)
	if err != nil {
		return nil, usagef("--against %s: %s has no %s: nothing to compare with (was kgen added after it?)", ref, ref, cfgPath)
	}
	temp, err := os.MkdirTemp("", "kgen-breaking-")
	if err != nil {
		return nil, err
	}
	old, err := writeOld(top, rel, commit, ref, temp, name, src)
	if err != nil {
		os.RemoveAll(temp)
		return nil, err
	}
	return old, nil
}

// resolveRef is the commit ref names; a ref git does not know is a usage
// error naming it.
func resolveRef(top, ref string) (string, error) {
	if strings.HasPrefix(ref, "-") {
		return "", usagef("--against %s: not a folder or a git ref", ref)
	}
	out, err := git(top, nil, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		return "", usagef("--against %s: no such folder, git branch, tag or commit", ref)
	}
	return strings.TrimSpace(string(out)), nil
}

// writeOld writes the older kgen.yaml and its spec files under temp and
// loads the config.
func writeOld(top, rel, commit, ref, temp, name string, cfgSrc []byte) (*Old, error) {
	file := filepath.Join(temp, name)
	if err := os.WriteFile(file, cfgSrc, 0o644); err != nil {
		return nil, err
	}
	cfg, err := config.Load(file)
	if err != nil {
		return nil, fmt.Errorf("--against %s: its %s does not load: %v", ref, path.Join(rel, name), err)
	}
	old := &Old{Label: ref, Config: cfg, temp: temp}
	specs := path.Join(rel, cfg.Specs)
	n, err := extractSpecs(top, commit, specs, rel, temp)
	if err != nil {
		return nil, fmt.Errorf("--against %s: reading %s: %v", ref, specs, err)
	}
	if n == 0 {
		old.NoSpecs = fmt.Sprintf("%s has no spec files in %s: nothing to compare", ref, specs)
	}
	return old, nil
}

// extractSpecs writes the spec files under specs at commit into temp, at
// their paths relative to rel, and counts them.
func extractSpecs(top, commit, specs, rel, temp string) (int, error) {
	listed, err := git(top, nil, "ls-tree", "-r", "--name-only", commit, "--", specs)
	if err != nil {
		return 0, err
	}
	if strings.TrimSpace(string(listed)) == "" {
		return 0, nil
	}
	archive, err := git(top, nil, "archive", "--format=tar", commit, "--", specs)
	if err != nil {
		return 0, err
	}
	return untarSpecs(bytes.NewReader(archive), rel, temp)
}

// untarSpecs writes the regular *.yaml and *.yml files of a tar stream
// under temp, their paths made relative to rel; links are skipped.
func untarSpecs(r io.Reader, rel, temp string) (int, error) {
	tr := tar.NewReader(r)
	n := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		name := path.Clean(h.Name)
		if rel != "." {
			name = strings.TrimPrefix(name, rel+"/")
		}
		if h.Typeflag != tar.TypeReg || !isSpecFile(name) || config.CheckRelative(name) != "" {
			continue
		}
		dst := filepath.Join(temp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return n, err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return n, err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return n, err
		}
		n++
	}
}
