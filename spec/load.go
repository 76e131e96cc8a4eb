package spec

import (
	"errors"
	"github.com/kgen-dev/kgen/internal/usertext"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/internal/yamlnode"
)

// LoadDir reads every *.yaml and *.yml file under root/dir (recursively, in
// path order) and checks names across files. Paths in the result and in the
// diagnostics are relative to root.
func LoadDir(root, dir string, diags *diag.List) []*Spec {
	files, err := findSpecFiles(root, dir)
	if err != nil {
		var pe *fs.PathError
		switch {
		case errors.Is(err, fs.ErrNotExist):
			diags.Addf(diag.Pos{Path: dir}, "the specs folder named in kgen.yaml does not exist")
		case errors.As(err, &pe): // its path is absolute; messages stay relative
			diags.Addf(diag.Pos{Path: dir}, "cannot read the specs folder: %s", diag.OSReason(pe.Err))
		default:
			diags.Addf(diag.Pos{Path: dir}, "cannot read the specs folder: %v", err)
		}
		return nil
	}
	if len(files) == 0 {
		diags.Addf(diag.Pos{Path: dir}, "no *.yaml spec files in the specs folder; if you deleted the last spec, `kgen gen --prune` removes the files kgen generated from earlier ones")
		return nil
	}
	var specs []*Spec
	for _, rel := range files {
		if _, what, bad := usertext.Problem(rel, false); bad {
			diags.Addf(diag.Pos{Path: strconv.Quote(rel)}, "the spec file's name contains %s; rename the file", what)
			continue
		}
		src, err := yamlnode.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			diags.Addf(diag.Pos{Path: rel}, "cannot read spec: %s", diag.OSReason(err))
			continue
		}
		if s := Parse(rel, src, diags); s != nil {
			specs = append(specs, s)
		}
	}
	CheckUnique(specs, diags)
	return specs
}

// findSpecFiles lists spec files, relative to root and slash-separated.
func findSpecFiles(root, dir string) ([]string, error) {
	var files []string
	base := filepath.Join(root, filepath.FromSlash(dir))
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != base && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		ext := filepath.Ext(p)
		if d.IsDir() || (ext != ".yaml" && ext != ".yml") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	sort.Strings(files)
	return files, err
}

// CheckUnique reports kernels that share a name, or whose generated files
// would collide on a case-insensitive file system.
func CheckUnique(specs []*Spec, diags *diag.List) {
	first := map[string]*Spec{}
	for _, s := range specs {
		if s.Kernel.Name == "" {
			continue
		}
		key := strings.ToLower(s.Kernel.Name)
		if prev, dup := first[key]; dup {
			if prev.Kernel.Name != s.Kernel.Name {
				diags.Addf(s.Kernel.Pos, "kernel %q collides with kernel %q (%s): their files would differ only in case", s.Kernel.Name, prev.Kernel.Name, prev.Kernel.Pos)
				continue
			}
			diags.Addf(s.Kernel.Pos, "kernel %q is already defined in %s", s.Kernel.Name, prev.Kernel.Pos)
			continue
		}
		first[key] = s
	}
}

// Dir returns the folder of a spec's path (for messages).
func (s *Spec) Dir() string { return path.Dir(s.Path) }
