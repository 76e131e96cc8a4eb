// Package gocheck type-checks kgen's generated Go package, so that neither
// `kgen gen` nor `kgen verify` says ok over Go that does not build: a
// generator bug (a variable declared for a case that never uses it) or a
// kgen binary newer than the kgenrt the module builds against.
//
// # Why go/types over sources in memory
//
// gen checks before it writes anything (all or nothing), so the files it
// checks exist only in memory. go/packages type-checks what the go command
// sees on disk; an overlay can add or replace files but cannot hide the
// stale files gen is about to remove, and the folder may not exist yet. So
// Check parses the files from memory and type-checks them with go/types
// directly. Their imports — kgenrt and a few standard packages, never the
// user's code — come from the compiler's export data, which
// `go list -export` produces in the module that will build the package: the
// same kgenrt version, build tags and toolchain as `go build`, from the
// build cache after the first run (about 0.1 s). Export data is
// self-contained (it carries every type the package's API reaches), so only
// the direct imports are listed.
//
// Outside a module, or where the module cannot resolve an import (a module
// that does not require kgen yet), the package cannot be built as it stands
// and Check says why instead of checking; gen prints that as a note, because
// `go get`/`go mod tidy` after gen is a normal workflow.
//
// verify reads the generated files from disk. Where it already loads the
// whole module with go/packages for the port-dispatch rules, it reports that
// load's errors for the generated package through Diagnose and does not call
// Check: one load, and the errors are those of the package as `go build`
// sees it, hand-written files in the folder included.
package gocheck

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/internal/output"
)

// MaxErrors caps the errors reported for one package, as the Go compiler
// does: past the first few, errors are mostly consequences of them.
const MaxErrors = 10

// Result is the outcome of Check.
type Result struct {
	Ran      bool   // false: the package could not be checked, Note says why
	Note     string // why it was not checked
	NoModule bool   // not checked because no go.mod is at or above the package
	Diags    []diag.Diagnostic
}

// Check type-checks the Go files of files that lie directly in pkgDir, as
// one package. Paths are relative to root (the config folder) and
// slash-separated, and so are the diagnostics' positions. It returns an
// error only when ctx ends.
func Check(ctx context.Context, root, pkgDir string, files []output.File) (*Result, error) {
	srcs := goFiles(pkgDir, files)
	if len(srcs) == 0 {
		return &Result{Ran: true}, nil
	}
	dir := existingDir(filepath.Join(root, filepath.FromSlash(pkgDir)))
	if ModuleRoot(dir) == "" {
		return &Result{Note: "no go.mod at or above " + pkgDir, NoModule: true}, nil
	}
	fset := token.NewFileSet()
	parsed, errs := parse(fset, srcs)
	if len(errs) > 0 {
		return &Result{Ran: true, Diags: Diagnose(pkgDir, errs, headerOf(srcs))}, nil
	}
	imp, note, err := exportImporter(ctx, dir, fset, importsOf(parsed))
	if err != nil || note != "" {
		return &Result{Note: note}, err
	}
	errs = typeCheck(fset, imp, parsed)
	return &Result{Ran: true, Diags: Diagnose(pkgDir, errs, headerOf(srcs))}, nil
}

// goFiles picks the package's non-test Go files, sorted by path as the go
// command orders them.
func goFiles(pkgDir string, files []output.File) []output.File {
	var out []output.File
	for _, f := range files {
		if path.Dir(f.Path) == pkgDir && strings.HasSuffix(f.Path, ".go") && !strings.HasSuffix(f.Path, "_test.go") {
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// existingDir is dir or its nearest existing ancestor: gen checks a folder
// it has not created yet, inside the module that will hold it.
func existingDir(dir string) string {
	for {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}

// ModuleRoot returns the nearest folder at or above dir holding a go.mod,
// or "" if there is none.
func ModuleRoot(dir string) string {
	for {
		if st, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !st.IsDir() {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Error is one error at a position relative to the config folder (Line 0
// when the error has no position in a file).
type Error struct {
	Pos diag.Pos
	Msg string
}

// parse parses every file; syntax errors come back positioned.
func parse(fset *token.FileSet, srcs []output.File) ([]*ast.File, []Error) {
	var files []*ast.File
	var errs []Error
	for _, f := range srcs {
		af, err := parser.ParseFile(fset, f.Path, f.Data, parser.SkipObjectResolution)
		var list scanner.ErrorList
		switch {
		case errors.As(err, &list):
			for _, e := range list {
				errs = append(errs, Error{Pos: diag.Pos{Path: e.Pos.Filename, Line: e.Pos.Line, Col: e.Pos.Column}, Msg: e.Msg})
			}
		case err != nil:
			errs = append(errs, Error{Pos: diag.Pos{Path: f.Path}, Msg: err.Error()})
		}
		files = append(files, af)
	}
	return files, errs
}

// importsOf lists the import paths of files, sorted, without unsafe (which
// has no export data: go/types knows it).
func importsOf(files []*ast.File) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range files {
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil || p == "unsafe" || seen[p] {
				continue
			}
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// exportImporter returns an importer reading the export data of paths as
// the module around dir builds them, or a note saying why there is none.
func exportImporter(ctx context.Context, dir string, fset *token.FileSet, paths []string) (types.Importer, string, error) {
	for _, p := range paths {
		if p == "C" {
			return nil, "it uses cgo", nil
		}
	}
	exports := map[string]string{}
	if len(paths) > 0 {
		pkgs, err := packages.Load(&packages.Config{Context: ctx, Dir: dir, Mode: packages.NeedName | packages.NeedExportFile}, paths...)
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		if err != nil {
			return nil, "cannot list its imports: " + oneLine(err.Error()), nil
		}
		for _, p := range pkgs {
			if len(p.Errors) > 0 || p.ExportFile == "" {
				return nil, "cannot load its import " + p.PkgPath + loadWhy(p), nil
			}
			exports[p.PkgPath] = p.ExportFile
		}
	}
	lookup := func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	}
	return importer.ForCompiler(fset, "gc", lookup), "", nil
}

func loadWhy(p *packages.Package) string {
	if len(p.Errors) == 0 {
		return " (no export data)"
	}
	return ": " + oneLine(p.Errors[0].Msg)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// typeCheck runs go/types over the package and returns every error it
// reports, unused variables and imports included (the compiler rejects
// those too).
func typeCheck(fset *token.FileSet, imp types.Importer, files []*ast.File) []Error {
	var errs []Error
	conf := types.Config{Importer: imp, Error: func(err error) {
		var te types.Error
		if errors.As(err, &te) {
			p := te.Fset.Position(te.Pos)
			errs = append(errs, Error{Pos: diag.Pos{Path: p.Filename, Line: p.Line, Col: p.Column}, Msg: te.Msg})
			return
		}
		errs = append(errs, Error{Msg: err.Error()})
	}}
	_, _ = conf.Check(files[0].Name.Name, fset, files, nil)
	return errs
}

// headerOf returns a lookup of the header bytes of srcs by path.
func headerOf(srcs []output.File) func(string) []byte {
	return func(p string) []byte {
		for _, f := range srcs {
			if f.Path == p {
				return f.Data
			}
		}
		return nil
	}
}

// Diagnose turns errors in the package in pkgDir into kgen's diagnostics,
// sorted: each names the spec its file was generated from, read from the
// file's header through read (nil for no such file), because the fix is
// in kgen or in how the spec is used, never in the generated file; past
// MaxErrors the rest are counted in one diagnostic at the folder.
func Diagnose(pkgDir string, errs []Error, read func(path string) []byte) []diag.Diagnostic {
	var l diag.List
	for _, e := range errs {
		if e.Pos.Path == "" {
			e.Pos = diag.Pos{Path: pkgDir}
		}
		msg := "the generated Go does not type-check: " + oneLine(e.Msg)
		if from := output.Source(read(e.Pos.Path)); from != "" {
			msg += " (generated from " + from + ")"
		}
		l.Addf(e.Pos, "%s", msg)
	}
	out := l.Sorted()
	if len(out) > MaxErrors {
		more := diag.Diagnostic{Pos: diag.Pos{Path: pkgDir},
			Msg: fmt.Sprintf("the generated Go package has %d more errors than the %d listed", len(out)-MaxErrors, MaxErrors)}
		out = append([]diag.Diagnostic{more}, out[:MaxErrors]...)
	}
	return out
}
