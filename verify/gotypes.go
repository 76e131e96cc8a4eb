package verify

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/internal/gocheck"
	"github.com/kgen-dev/kgen/internal/output"
	"github.com/kgen-dev/kgen/verify/dispatch"
)

// The gotypes check: the generated Go package on disk type-checks, so that
// verify never says ok over Go that does not build (a generator bug, a
// file broken by hand, a kgenrt older than the kgen that generated the
// package). Each error is a finding at the generated file's line and
// column that names the spec the file was generated from.
//
// The port-dispatch rules already load the whole module with go/packages,
// the generated package included and type-checked; that load's errors are
// reported, at no extra cost. Only where it did not load the package (the
// rules off, or the package outside the module's ./..., as in a nested
// module) are the files on disk checked on their own by gocheck.Check.

// goTypes reports the generated package's errors from the dispatch load
// d, or checks the package itself when d is nil or did not load it.
func (r *Report) goTypes(ctx context.Context, cfg *config.Config, d *dispatch.Result) error {
	read := func(p string) []byte {
		data, _ := os.ReadFile(filepath.Join(cfg.Dir, filepath.FromSlash(p)))
		return data
	}
	if d != nil && d.GenLoaded {
		r.Checks = append(r.Checks, "gotypes")
		r.addGoTypes(gocheck.Diagnose(cfg.OutGo, d.GenErrors, read))
		return nil
	}
	files, err := diskGoFiles(cfg)
	if err != nil {
		return err
	}
	res, err := gocheck.Check(ctx, cfg.Dir, cfg.OutGo, files)
	if err != nil {
		return err
	}
	if !res.Ran {
		r.Notes = append(r.Notes, "generated Go not type-checked: "+res.Note)
		return nil
	}
	r.Checks = append(r.Checks, "gotypes")
	r.addGoTypes(res.Diags)
	return nil
}

func (r *Report) addGoTypes(ds []diag.Diagnostic) {
	for _, d := range ds {
		r.Findings = append(r.Findings, Finding{Check: "gotypes", Pos: d.Pos, Msg: d.Msg})
	}
}

// diskGoFiles reads the Go files in the generated package's folder, kgen's
// or not: the package `go build` compiles.
func diskGoFiles(cfg *config.Config) ([]output.File, error) {
	entries, err := os.ReadDir(filepath.Join(cfg.Dir, filepath.FromSlash(cfg.OutGo)))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var files []output.File
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		p := path.Join(cfg.OutGo, e.Name())
		data, err := os.ReadFile(filepath.Join(cfg.Dir, filepath.FromSlash(p)))
		if err != nil {
			return nil, err
		}
		files = append(files, output.File{Path: p, Data: data})
	}
	return files, nil
}
