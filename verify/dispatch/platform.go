package dispatch

import (
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
)

// Rule platform-gate: deciding whether to launch a kernel by the operating
// system — `runtime.GOOS == "darwin"`, or a build constraint (a
// `//go:build darwin` line or a `_darwin.go` file name) on code that
// launches — is a backend gate by another name. Metal can be missing on
// darwin (no cgo, no device) and present ports elsewhere can be missed;
// Select knows, and says so with ErrNoPort.

const platformFix = "whether a kernel can run here is Select's to say: call K.Run(b, …) and take the fallback when errors.Is(err, kgenrt.ErrNoPort)"

// platformTags are the build tags that name a platform: every GOOS, the
// unix group, and cgo (which kgenrt's Metal path needs).
var platformTags = map[string]bool{
	"aix": true, "android": true, "darwin": true, "dragonfly": true, "freebsd": true, "hurd": true,
	"illumos": true, "ios": true, "js": true, "linux": true, "nacl": true, "netbsd": true, "openbsd": true,
	"plan9": true, "solaris": true, "wasip1": true, "windows": true, "zos": true, "unix": true, "cgo": true,
}

// goosUses reports runtime.GOOS read in a declaration that launches.
func (c *checker) goosUses(d ast.Decl) {
	inspect(d, func(n ast.Node, _ []ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if obj := c.info.Uses[sel.Sel]; obj != nil && obj.Pkg() != nil && obj.Pkg().Path() == "runtime" && obj.Name() == "GOOS" {
			c.report(sel, PlatformGate, "reads runtime.GOOS in code that launches kernels: "+platformFix)
		}
		return true
	})
}

// fileGate reports a platform build constraint on a file that launches.
func (c *checker) fileGate(f *ast.File) {
	name := c.pkg.Fset.Position(f.Pos()).Filename
	if tag, pos := platformConstraint(f, name); tag != "" {
		p := c.pkg.Fset.Position(pos)
		c.out = append(c.out, Finding{Pos: rel(c.dir, p.Filename, p.Line, p.Column), Rule: PlatformGate,
			Msg: "launches kernels only in builds for " + tag + ": " + platformFix})
	}
}

// skippedGates reports files this build skips (another platform's) that
// import the generated package under a platform constraint: the build
// that compiles them launches kernels by platform.
func (c *checker) skippedGates() {
	if c.m.genPath == "" {
		return
	}
	for _, name := range c.pkg.IgnoredFiles {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil || !imports(f, c.m.genPath) {
			continue
		}
		if tag, pos := platformConstraint(f, name); tag != "" {
			p := fset.Position(pos)
			c.out = append(c.out, Finding{Pos: rel(c.dir, name, p.Line, p.Column), Rule: PlatformGate,
				Msg: "uses the generated kernels only in builds for " + tag + ": " + platformFix})
		}
	}
}

// platformConstraint returns the first platform tag of f's //go:build line
// (at its position) or of its file name (at the package clause).
func platformConstraint(f *ast.File, filename string) (string, token.Pos) {
	for _, g := range f.Comments {
		if g.Pos() > f.Package {
			break
		}
		for _, cm := range g.List {
			expr, err := constraint.Parse(cm.Text)
			if err != nil {
				continue
			}
			tag := ""
			expr.Eval(func(t string) bool {
				if tag == "" && platformTags[t] {
					tag = t
				}
				return true
			})
			if tag != "" {
				return tag, cm.Pos()
			}
		}
	}
	base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(filename), ".go"), "_test")
	parts := strings.Split(base, "_")
	for i := len(parts) - 1; i >= 1 && i >= len(parts)-2; i-- {
		if platformTags[parts[i]] && parts[i] != "unix" && parts[i] != "cgo" {
			return parts[i], f.Package
		}
	}
	return "", token.NoPos
}

func imports(f *ast.File, path string) bool {
	for _, im := range f.Imports {
		if p, err := strconv.Unquote(im.Path.Value); err == nil && p == path {
			return true
		}
	}
	return false
}
