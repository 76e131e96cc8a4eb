package dispatch

import (
	"context"
	"fmt"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/internal/gocheck"
)

// The rule names, as findings and exemptions spell them.
const (
	DirectPort     = "direct-port"
	BackendCompare = "backend-compare"
	OwnRefusal     = "own-refusal"
	BackendGate    = "backend-gate"
	PlatformGate   = "platform-gate"
	// Load marks a package the rules could not check; never exempt.
	Load = "load"
	// Exempt marks a problem with an exemption itself.
	Exempt = "exempt"
)

// Rules lists the four rules in the order of the package doc.
var Rules = []string{DirectPort, BackendCompare, OwnRefusal, BackendGate, PlatformGate}

// Options say what to check.
type Options struct {
	ConfigDir string // absolute folder of kgen.yaml: findings are relative to it
	GenDir    string // absolute folder of the generated Go package (out.go)
	Exempt    []config.Exemption
}

// Finding is one violation.
type Finding struct {
	Pos  diag.Pos // relative to ConfigDir
	End  diag.Pos // where the offending code ends; zero when unknown
	Rule string
	Msg  string
}

// Result is the outcome of Check.
type Result struct {
	Ran        bool   // false when there is no go.mod: see Note
	Note       string // why the rules did not run
	ModuleRoot string
	Packages   int // packages checked
	Launchers  int // launcher references found in checked code
	Exempt     int // findings excused by exemptions
	Findings   []Finding
	// GenLoaded reports whether the generated package was among the
	// packages loaded; GenErrors are then its parse, list and type errors,
	// positioned relative to ConfigDir, for verify to report (the rules
	// themselves skip the package).
	GenLoaded bool
	GenErrors []gocheck.Error
}

// ModuleRoot returns the nearest folder at or above dir holding a go.mod,
// or "" if there is none.
func ModuleRoot(dir string) string { return gocheck.ModuleRoot(dir) }

const loadMode = packages.NeedName | packages.NeedFiles | packages.NeedSyntax |
	packages.NeedTypes | packages.NeedTypesInfo

// Check loads the module around opts.ConfigDir once and applies the rules.
func Check(ctx context.Context, opts Options) (*Result, error) {
	root := ModuleRoot(opts.ConfigDir)
	if root == "" {
		return &Result{Note: "port dispatch not checked: no go.mod at or above kgen.yaml"}, nil
	}
	res := &Result{Ran: true, ModuleRoot: root}
	pkgs, err := packages.Load(&packages.Config{Context: ctx, Mode: loadMode, Dir: root}, "./...")
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		res.Findings = append(res.Findings, Finding{Pos: rel(opts.ConfigDir, filepath.Join(root, "go.mod"), 1, 1), Rule: Load,
			Msg: fmt.Sprintf("cannot load the module for the port-dispatch rules: %v", err)})
		return res, nil
	}
	if len(pkgs) == 0 {
		res.Findings = append(res.Findings, Finding{Pos: rel(opts.ConfigDir, filepath.Join(root, "go.mod"), 1, 1), Rule: Load,
			Msg: "`go list ./...` found no packages in the module (" + goListError(ctx, root) + "); the port-dispatch rules need code that loads"})
		return res, nil
	}
	m := newModel(pkgs, opts.GenDir)
	res.GenLoaded, res.GenErrors = genErrors(opts, pkgs)
	var found []Finding
	for _, p := range pkgs {
		if m.skip(p) {
			continue
		}
		res.Packages++
		if f, ok := loadError(opts.ConfigDir, p); !ok {
			found = append(found, f)
			continue
		}
		c := &checker{m: m, pkg: p, info: p.TypesInfo, dir: opts.ConfigDir}
		c.run()
		c.applyIgnores(res)
		res.Launchers += c.launchers
		found = append(found, c.out...)
	}
	res.Findings = applyExemptions(res, found, opts)
	sortFindings(res.Findings)
	return res, nil
}

// genErrors returns whether the package in opts.GenDir was loaded, and its
// errors: the load already type-checked it, so verify need not again.
func genErrors(opts Options, pkgs []*packages.Package) (bool, []gocheck.Error) {
	for _, p := range pkgs {
		if filepath.Clean(pkgDir(p)) != filepath.Clean(opts.GenDir) {
			continue
		}
		var errs []gocheck.Error
		for _, e := range p.Errors {
			if e.Kind == packages.ListError && hasSourceErrors(p) {
				continue // go list's compile of the package, repeating them unpositioned
			}
			errs = append(errs, gocheck.Error{Pos: posOf(opts.ConfigDir, e.Pos), Msg: e.Msg})
		}
		return true, errs
	}
	return false, nil
}

// hasSourceErrors reports whether p has parse or type errors.
func hasSourceErrors(p *packages.Package) bool {
	for _, e := range p.Errors {
		if e.Kind == packages.ParseError || e.Kind == packages.TypeError {
			return true
		}
	}
	return false
}

// goListError is why `go list ./...` fails in root, which go/packages
// does not always say.
func goListError(ctx context.Context, root string) string {
	cmd := exec.CommandContext(ctx, "go", "list", "-e", "./...")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err == nil {
		return "no Go files"
	}
	msg := strings.TrimSpace(string(out))
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimPrefix(msg, "go: ")
}

// loadError turns a package's first error into a finding (a type error
// with its position, if there is one); ok when there is none.
func loadError(dir string, p *packages.Package) (Finding, bool) {
	if len(p.Errors) == 0 {
		return Finding{}, true
	}
	e := p.Errors[0]
	for _, x := range p.Errors {
		if x.Kind == packages.TypeError {
			e = x
			break
		}
	}
	pos := posOf(dir, e.Pos)
	if pos.Path == "" {
		pos = diag.Pos{Path: relPath(dir, pkgDir(p)), Line: 1, Col: 1}
	}
	msg := strings.Join(strings.Fields(e.Msg), " ")
	return Finding{Pos: pos, Rule: Load, Msg: fmt.Sprintf("package %s does not type-check (%s); the port-dispatch rules need code that compiles", p.PkgPath, msg)}, false
}

// posOf parses go/packages' "file:line:col" error position.
func posOf(dir, s string) diag.Pos {
	parts := strings.Split(s, ":")
	if len(parts) < 3 {
		return diag.Pos{}
	}
	line, err1 := strconv.Atoi(parts[len(parts)-2])
	col, err2 := strconv.Atoi(parts[len(parts)-1])
	if err1 != nil || err2 != nil {
		return diag.Pos{}
	}
	return rel(dir, strings.Join(parts[:len(parts)-2], ":"), line, col)
}

func pkgDir(p *packages.Package) string {
	for _, f := range append(p.GoFiles, p.CompiledGoFiles...) {
		return filepath.Dir(f)
	}
	return ""
}

// rel is a position with its path relative to dir, slash-separated.
func rel(dir, file string, line, col int) diag.Pos {
	return diag.Pos{Path: relPath(dir, file), Line: line, Col: col}
}

func relPath(dir, file string) string {
	r, err := filepath.Rel(dir, file)
	if err != nil {
		return filepath.ToSlash(file)
	}
	return filepath.ToSlash(r)
}

// position converts a token.Pos of the checked code.
func (c *checker) position(p token.Pos) diag.Pos {
	tp := c.pkg.Fset.Position(p)
	return rel(c.dir, tp.Filename, tp.Line, tp.Column)
}

// applyExemptions drops excused findings, counting them, and adds a finding
// for every exemption that names an unknown rule or excuses nothing.
func applyExemptions(res *Result, found []Finding, opts Options) []Finding {
	used := make([]bool, len(opts.Exempt))
	var out []Finding
	for _, f := range found {
		i := exemptionFor(f, opts.Exempt)
		if i < 0 {
			out = append(out, f)
			continue
		}
		used[i] = true
		res.Exempt++
	}
	for i, e := range opts.Exempt {
		switch {
		case e.Rule != "" && !isRule(e.Rule):
			out = append(out, Finding{Pos: e.Pos, Rule: Exempt, Msg: fmt.Sprintf("exemption for %s names rule %q, which is not a port-dispatch rule%s; want one of %s, or no rule for all",
				e.Path, e.Rule, diag.Suggest(e.Rule, Rules), strings.Join(Rules, ", "))})
		case !used[i]:
			out = append(out, Finding{Pos: e.Pos, Rule: Exempt, Msg: unusedMsg(opts.ConfigDir, e)})
		}
	}
	return out
}

func unusedMsg(dir string, e config.Exemption) string {
	what := "no port-dispatch finding"
	if e.Rule != "" {
		what = "no " + e.Rule + " finding"
	}
	where := e.Path
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(e.Path))); err != nil {
		where += " (no such file or folder)"
	}
	return fmt.Sprintf("exemption excuses nothing: %s in %s; remove it, or it will silently excuse the next violation", what, where)
}

// exemptionFor returns the index of the first exemption covering f, or -1.
// Load and exemption findings are never excused.
func exemptionFor(f Finding, ex []config.Exemption) int {
	if !isRule(f.Rule) {
		return -1
	}
	for i, e := range ex {
		if (e.Rule == "" || e.Rule == f.Rule) && under(f.Pos.Path, e.Path) {
			return i
		}
	}
	return -1
}

// under reports whether file is p or lies in folder p.
func under(file, p string) bool {
	p = path.Clean(p)
	return p == "." || file == p || strings.HasPrefix(file, p+"/")
}

func isRule(r string) bool {
	for _, x := range Rules {
		if r == x {
			return true
		}
	}
	return false
}

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i].Pos, fs[j].Pos
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Col != b.Col {
			return a.Col < b.Col
		}
		return fs[i].Rule < fs[j].Rule
	})
}
