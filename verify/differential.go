package verify

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/mod/modfile"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/emit/golang"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/internal/gocheck"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/parity"
)

// samples collects parity's launches for the differential check; Check
// runs kernels concurrently.
type samples struct {
	mu  sync.Mutex
	all []*parity.Sample
}

func (s *samples) add(x *parity.Sample) {
	s.mu.Lock()
	s.all = append(s.all, x)
	s.mu.Unlock()
}

// differential runs the generated Go reference on every launch parity ran
// (see parity.GoReference) and reports each variant whose outputs differ
// from the MSL's beyond parity.Differ's rule. Where the generated package
// cannot be built in a module, it says why in a note and checks nothing.
func (r *Report) differential(ctx context.Context, cfg *config.Config, res *generate.Result, got *samples) {
	if len(got.all) == 0 {
		return
	}
	g, why := goReferenceOf(cfg, res)
	if why != "" {
		r.Notes = append(r.Notes, "differential check skipped: "+why)
		return
	}
	outs, err := g.Run(ctx, res.Kernels, got.all)
	if err != nil {
		r.Findings = append(r.Findings, Finding{Check: "differential", Pos: diag.Pos{Path: cfg.OutGo, Line: 1, Col: 1}, Msg: err.Error()})
		return
	}
	r.Checks = append(r.Checks, "differential")
	type tally struct {
		k            *ir.Kernel
		checked, bad int
		first        string
	}
	byVariant := map[string]*tally{}
	var order []string
	for i, s := range got.all {
		t, ok := byVariant[s.Variant.HostName]
		if !ok {
			t = &tally{k: s.Kernel}
			byVariant[s.Variant.HostName] = t
			order = append(order, s.Variant.HostName)
		}
		n, bad, diffs := parity.Differ(s, outs[i])
		t.checked += n
		t.bad += bad
		if len(diffs) > 0 && t.first == "" {
			t.first = diffs[0]
		}
	}
	lanes := 0
	for _, host := range order {
		t := byVariant[host]
		lanes += t.checked
		if t.bad == 0 {
			continue
		}
		rule := "bit for bit"
		if !parity.Exact(t.k) {
			rule = fmt.Sprintf("within %d ulps plus twice the rounding bound", parity.DiffUlps)
		}
		r.Findings = append(r.Findings, Finding{Check: "differential", Pos: diag.Pos{Path: t.k.SpecPath, Line: 1, Col: 1},
			Msg: fmt.Sprintf("%s: the generated Go reference and the MSL disagree (%s) on %d of %d lanes; first: %s", host, rule, t.bad, t.checked, t.first)})
	}
	r.Notes = append(r.Notes, fmt.Sprintf("differential: Go reference vs MSL on %d lanes of %d variants", lanes, len(order)))
}

// goReferenceOf locates the generated package in its module, or says why
// it cannot be built there.
func goReferenceOf(cfg *config.Config, res *generate.Result) (parity.GoReference, string) {
	pkgDir := filepath.Join(cfg.Dir, filepath.FromSlash(cfg.OutGo))
	mod := gocheck.ModuleRoot(existing(pkgDir))
	if mod == "" {
		return parity.GoReference{}, "no go.mod at or above " + cfg.OutGo
	}
	data, err := os.ReadFile(filepath.Join(mod, "go.mod"))
	if err != nil {
		return parity.GoReference{}, err.Error()
	}
	modPath := modfile.ModulePath(data)
	rel, err := filepath.Rel(mod, pkgDir)
	if modPath == "" || err != nil || strings.HasPrefix(rel, "..") {
		return parity.GoReference{}, "cannot name the import path of " + cfg.OutGo
	}
	g := parity.GoReference{ModuleDir: mod, PkgDir: pkgDir, ImportPath: path.Join(modPath, filepath.ToSlash(rel)),
		Files: map[string][]byte{}, GoNames: map[string]string{}}
	for _, f := range res.Files {
		if path.Dir(f.Path) == cfg.OutGo {
			g.Files[path.Base(f.Path)] = f.Data
		}
	}
	for _, k := range res.Kernels {
		g.GoNames[k.Name] = golang.GoName(k.Name)
	}
	return g, ""
}

// existing is dir or its nearest existing parent.
func existing(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}
