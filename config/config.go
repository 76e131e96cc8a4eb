// Package config finds and reads kgen.yaml. Every path in it resolves
// relative to the config file's folder, never the working directory, so a
// check run from any folder checks the same files.
package config

import (
	"errors"
	"fmt"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/kgen-dev/kgen/backend"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/internal/yamlnode"
)

// FileName is the config file kgen looks for.
const FileName = "kgen.yaml"

// Config is a loaded kgen.yaml.
type Config struct {
	Path  string // absolute path of the config file
	Dir   string // absolute folder of the config file; the root of every path below
	Specs string // specs folder, relative to Dir, slash-separated
	// Out is each backend's folder of kernel sources (out.msl, out.cuda,
	// out.hip: backend.Sources), relative to Dir.
	Out       [backend.NumBackends]string
	OutGo     string // folder of the generated Go package, relative to Dir
	GoPackage string // package name of OutGo
	// HeaderVersion puts kgen's version in generated headers (default true);
	// turn it off to keep outputs unchanged across kgen upgrades.
	HeaderVersion bool
	Verify        Verify
	Breaking      Breaking
}

// Verify configures `kgen verify`.
type Verify struct {
	// Parity is "auto" (run where a C++ compiler exists, say so where not),
	// "required" (fail without a compiler) or "off".
	Parity string
	// Exempt lists code the port-dispatch rules skip, each with a reason.
	Exempt []Exemption
}

// Exemption excuses one file (optionally one rule) from the port-dispatch
// rules. An exemption that matches nothing is itself a finding.
type Exemption struct {
	Path   string   // a file or folder, relative to the config folder like every path here
	Rule   string   // a rule name, or "" for every rule
	Reason string   // required: why this code may break the rule
	Pos    diag.Pos // where it is written in kgen.yaml
}

// Default returns the configuration `kgen init` writes.
func Default() Config {
	c := Config{Specs: "specs", OutGo: "gen/kernels", GoPackage: "kernels", HeaderVersion: true,
		Verify: Verify{Parity: "auto"}}
	for b, src := range backend.Sources {
		c.Out[b] = src.Dir
	}
	return c
}

// ErrNotFound means no kgen.yaml exists in the folder or any parent.
var ErrNotFound = errors.New("no " + FileName + " found in this folder or any parent (run `kgen init` to create one, or pass --config)")

// Find walks up from dir to the nearest kgen.yaml.
func Find(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	start := dir
	for {
		p := filepath.Join(dir, FileName)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		} else if err == nil {
			if rel, err := filepath.Rel(start, p); err == nil {
				p = rel
			}
			return "", fmt.Errorf("%s is a folder, not kgen's config file; rename it, or pass --config", p)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNotFound
		}
		dir = parent
	}
}

var fields = []string{"version", "specs", "out", "go", "header_version", "verify", "breaking"}

// Load reads and checks the config at path. Problems are diagnostics
// positioned in the file (reported by name, relative to its own folder).
func Load(file string) (*Config, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	src, err := yamlnode.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read: %s", file, diag.OSReason(err))
	}
	c := Default()
	c.Path, c.Dir = abs, filepath.Dir(abs)
	var diags diag.List
	r := reader{c: &c, diags: &diags}
	doc, ok := yamlnode.Parse(filepath.Base(abs), src, &diags)
	if ok {
		r.doc = doc
		r.read(doc.Root)
	}
	if err := diags.Err(); err != nil {
		return nil, err
	}
	return &c, nil
}

type reader struct {
	c     *Config
	doc   *yamlnode.Doc
	diags *diag.List
}

func (r *reader) read(root ast.Node) {
	if root == nil {
		r.diags.Addf(diag.Pos{Path: r.doc.Path, Line: 1, Col: 1}, "empty config: expected `version: 1`")
		return
	}
	fs, ok := r.doc.Fields(root, "the config", r.diags)
	if !ok {
		return
	}
	hasVersion := false
	goPackageSet := false
	for _, f := range fs {
		switch f.Key {
		case "version":
			hasVersion = true
			if v, _ := yamlnode.Scalar(f.Value); v != "1" {
				r.diags.Addf(r.doc.Pos(f.Value), "unsupported config version %q: this kgen reads version 1", v)
			}
		case "specs":
			r.c.Specs = r.folder(f.Value, "specs")
		case "out":
			r.out(f.Value)
		case "go":
			goPackageSet = r.goSection(f.Value)
		case "verify":
			r.verify(f.Value)
		case "breaking":
			r.breaking(f.Value)
		case "header_version":
			v, _ := yamlnode.Scalar(f.Value)
			r.c.HeaderVersion = v != "false"
			if v != "true" && v != "false" {
				r.diags.Addf(r.doc.Pos(f.Value), "header_version must be true or false")
			}
		default:
			r.diags.Addf(f.KeyPos, "unknown config field %q%s", f.Key, diag.Suggest(f.Key, fields))
		}
	}
	if !hasVersion {
		r.diags.Addf(r.doc.Pos(root), "missing required field \"version\" (use version: 1)")
	}
	if !goPackageSet {
		r.c.GoPackage = defaultPackage(r.c.OutGo)
	}
}

func (r *reader) out(n ast.Node) {
	fs, ok := r.doc.Fields(n, "out", r.diags)
	if !ok {
		return
	}
	keys := []string{"go"}
	for _, src := range backend.Sources {
		keys = append(keys, src.OutKey)
	}
fields:
	for _, f := range fs {
		if f.Key == "go" {
			r.c.OutGo = r.folder(f.Value, "out.go")
			continue
		}
		for b, src := range backend.Sources {
			if f.Key == src.OutKey {
				r.c.Out[b] = r.folder(f.Value, "out."+src.OutKey)
				continue fields
			}
		}
		r.diags.Addf(f.KeyPos, "unknown out field %q%s", f.Key, diag.Suggest(f.Key, keys))
	}
}

var goIdentRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func (r *reader) goSection(n ast.Node) bool {
	fs, ok := r.doc.Fields(n, "go", r.diags)
	set := false
	if !ok {
		return false
	}
	for _, f := range fs {
		if f.Key != "package" {
			r.diags.Addf(f.KeyPos, "unknown go field %q%s", f.Key, diag.Suggest(f.Key, []string{"package"}))
			continue
		}
		v, _ := yamlnode.Scalar(f.Value)
		if !goIdentRE.MatchString(v) || token.IsKeyword(v) {
			r.diags.Addf(r.doc.Pos(f.Value), "go.package %q is not a valid Go package name", v)
			continue
		}
		r.c.GoPackage, set = v, true
	}
	return set
}

// folder checks a configured folder: relative, inside the config folder,
// and returns it cleaned and slash-separated.
func (r *reader) folder(n ast.Node, what string) string {
	v, ok := yamlnode.Scalar(n)
	pos := r.doc.Pos(n)
	if !ok || v == "" {
		r.diags.Addf(pos, "%s must be a folder path", what)
		return ""
	}
	if why := CheckRelative(v); why != "" {
		r.diags.Addf(pos, "%s %q %s", what, v, why)
		return ""
	}
	clean := path.Clean(filepath.ToSlash(v))
	if err := checkNoEscape(r.c.Dir, clean); err != nil {
		r.diags.Addf(pos, "%s %q %v", what, v, err)
		return ""
	}
	return clean
}

// CheckRelative returns "" if p is a relative path that stays inside its
// base folder, else why not.
func CheckRelative(p string) string {
	s := filepath.ToSlash(p)
	if filepath.IsAbs(p) || path.IsAbs(s) || filepath.VolumeName(p) != "" {
		return "must be relative to the config folder, not absolute"
	}
	for _, part := range strings.Split(s, "/") {
		if part == ".." {
			return "must not contain `..`: kgen writes only inside the config folder"
		}
	}
	return ""
}

// checkNoEscape rejects an existing folder whose real path (symlinks
// resolved) lies outside the config folder.
func checkNoEscape(root, rel string) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil
	}
	p := filepath.Join(root, filepath.FromSlash(rel))
	for q := p; ; q = filepath.Dir(q) {
		real, err := filepath.EvalSymlinks(q)
		if err == nil {
			inside, _ := filepath.Rel(realRoot, real)
			if inside == ".." || strings.HasPrefix(inside, ".."+string(filepath.Separator)) {
				return fmt.Errorf("leads outside the config folder (through a symlink)")
			}
			return nil
		}
		if q == root || filepath.Dir(q) == q {
			return nil
		}
	}
}

func defaultPackage(outGo string) string {
	base := path.Base(outGo)
	base = strings.ToLower(strings.NewReplacer("-", "", ".", "").Replace(base))
	if !goIdentRE.MatchString(base) || token.IsKeyword(base) {
		return "kernels"
	}
	return base
}

var verifyFields = []string{"parity", "exempt"}

// verify reads the `verify:` section.
func (r *reader) verify(n ast.Node) {
	fs, ok := r.doc.Fields(n, "verify", r.diags)
	if !ok {
		return
	}
	for _, f := range fs {
		switch f.Key {
		case "parity":
			v, _ := yamlnode.Scalar(f.Value)
			switch v {
			case "auto", "required", "off":
				r.c.Verify.Parity = v
			default:
				r.diags.Addf(r.doc.Pos(f.Value), "verify.parity must be auto, required or off, not %q", v)
			}
		case "exempt":
			r.exemptions(f.Value)
		default:
			r.diags.Addf(f.KeyPos, "unknown verify field %q%s", f.Key, diag.Suggest(f.Key, verifyFields))
		}
	}
}

var exemptFields = []string{"path", "rule", "reason"}

func (r *reader) exemptions(n ast.Node) {
	items, ok := r.doc.Seq(n, "verify.exempt", r.diags)
	if !ok {
		return
	}
	for _, it := range items {
		fs, ok := r.doc.Fields(it, "an exemption ({path, rule, reason})", r.diags)
		if !ok {
			continue
		}
		e := Exemption{Pos: r.doc.Pos(it)}
		for _, f := range fs {
			v, _ := yamlnode.Scalar(f.Value)
			switch f.Key {
			case "path":
				if why := CheckRelative(v); why != "" || v == "" {
					r.diags.Addf(r.doc.Pos(f.Value), "exemption path %q %s", v, why)
				}
				e.Path = path.Clean(filepath.ToSlash(v))
			case "rule":
				e.Rule = v
			case "reason":
				e.Reason = strings.TrimSpace(v)
			default:
				r.diags.Addf(f.KeyPos, "unknown exemption field %q%s", f.Key, diag.Suggest(f.Key, exemptFields))
			}
		}
		if e.Path == "" || e.Reason == "" {
			r.diags.Addf(e.Pos, "an exemption needs a path and a reason (why this code may break the rule)")
			continue
		}
		r.c.Verify.Exempt = append(r.c.Verify.Exempt, e)
	}
}
