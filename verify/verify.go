// Package verify is `kgen verify`, the CI gate: it regenerates everything in
// memory and reports drift against the disk (drift.go), then checks what the
// disk says against the specs — dtype keys and key collisions (keys.go),
// ports and launchers (ports.go), CUDA modules (cuda_check.go) — then the
// module's own Go code against the port-dispatch rules (package dispatch)
// and the generated package's type check (gotypes.go), over one load, then,
// where a C++ compiler exists, numerical parity (parity_check.go). It never
// writes. The checks that compare read the files as they are on disk,
// because that is what gets built and shipped: regenerating them would only
// ever agree with itself. The checks that compile and run code (the Metal
// compile, the strict check, parity, the CUDA compile) take the bytes kgen
// regenerates in memory, and only for files the drift check found
// byte-identical on disk, so that they test what ships and never run a file
// kgen did not write: a hand-edited kernel is reported, never executed.
package verify

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/verify/dispatch"
)

// Finding is one failed check at one position.
type Finding struct {
	Check string // "spec", "drift", "keys", "ports", "cuda", "dispatch", "strict", "parity", …
	Pos   diag.Pos
	// End is where the finding's text ends (exclusive column); it equals
	// Pos where only the start is known.
	End  diag.Pos
	Rule string // the port-dispatch rule ("direct-port", …), or ""
	// ID is the stable rule id ("drift/stale", "keys/mismatch",
	// "dispatch/direct-port", …) that machine-readable formats carry; see
	// RuleID for the default.
	ID   string
	Msg  string
	Diff string // drift: unified diff from the disk to what kgen would write
	// Folded are the findings this one stands for: those that follow from
	// a spec edited without `kgen gen` (see rootcause.go).
	Folded []Finding
}

// SeverityError is the severity of every finding: each one fails verify.
const SeverityError = "error"

// defaultIDs is the rule id of a check's findings that set none.
var defaultIDs = map[string]string{
	"spec": "spec/invalid", "keys": "keys/mismatch", "ports": "ports/mismatch", "cuda": "cuda/mismatch",
	"gotypes": "gotypes/error", "strict": "strict/error", "parity": "parity/mismatch", "metal": "metal/error",
}

// RuleID is the finding's stable rule id: ID, else "dispatch/<rule>" for
// the port-dispatch rules, else the check's default.
func (f Finding) RuleID() string {
	switch {
	case f.ID != "":
		return f.ID
	case f.Rule != "":
		return f.Check + "/" + f.Rule
	case defaultIDs[f.Check] != "":
		return defaultIDs[f.Check]
	}
	return f.Check
}

// EndPos is End, or Pos when End is unset.
func (f Finding) EndPos() diag.Pos {
	if f.End.Line == 0 {
		return f.Pos
	}
	return f.End
}

// String is the finding's text line: "path:line:col: [rule: ]message".
func (f Finding) String() string {
	if f.Rule != "" {
		return fmt.Sprintf("%s: %s: %s", f.Pos, f.Rule, f.Msg)
	}
	return fmt.Sprintf("%s: %s", f.Pos, f.Msg)
}

// Report is the outcome of a verify run. Fields are only ever added.
type Report struct {
	Kernels  int
	Variants int
	Files    int
	Checks   []string // the checks that ran, in order
	Findings []Finding
	Notes    []string // checks skipped, and why
	// Warnings are skipped checks a CI gate must not pass over silently:
	// parity on auto with no C++ compiler. verify still exits 0; every
	// output format shows them as warnings.
	Warnings []string
	Parity   []*ParityReport // the lane-level report of every kernel × dtype, when parity ran

	// Launchers counts launcher references in the module's Go code, Exempt
	// the port-dispatch findings excused by kgen.yaml; both are meaningful
	// when "dispatch" is in Checks.
	Launchers int
	Exempt    int
	// ParityOK counts the variants whose parity report passed, of
	// len(Parity), when "parity" is in Checks.
	ParityOK int

	// drifted holds the paths of the wanted files that the drift check
	// found not byte-identical on disk (missing, stale, hand-edited,
	// foreign): parity runs no kernel whose .metal is among them.
	drifted map[string]bool
}

// Options select what verify runs.
type Options struct {
	OutDirs []string // the folders kgen owns
	// Parity is "auto" (run where a C++ compiler exists), "on" (fail
	// without one) or "off".
	Parity string
	// Mutate is a parity mutation ("first-input" or "zero"; see
	// parity.Mutate): every kernel × dtype must then fail.
	Mutate string
	// NoDispatch skips the port-dispatch rules (they load the module's Go
	// code with the go command); the summary says so.
	NoDispatch bool
}

// OK reports whether nothing failed.
func (r *Report) OK() bool { return len(r.Findings) == 0 }

// HasCheck reports whether the check ran.
func (r *Report) HasCheck(name string) bool {
	for _, c := range r.Checks {
		if c == name {
			return true
		}
	}
	return false
}

// Summary is the one line verify ends with, e.g. "kgen verify: 14 kernels,
// 38 variants, 14 launchers, 0 exempt, 38 parity ok; ok".
func (r *Report) Summary() string {
	parts := []string{plural(r.Kernels, "kernel"), plural(r.Variants, "variant")}
	if r.HasCheck("dispatch") {
		parts = append(parts, plural(r.Launchers, "launcher"), fmt.Sprintf("%d exempt", r.Exempt))
	}
	if r.HasCheck("parity") {
		ok := fmt.Sprintf("%d parity ok", r.ParityOK)
		if r.ParityOK != r.Variants { // failed, or not run (no .metal on disk)
			ok = fmt.Sprintf("%d/%d parity ok", r.ParityOK, r.Variants)
		}
		parts = append(parts, ok)
	}
	parts = append(parts, r.Notes...)
	status := "ok"
	if !r.OK() {
		status = "FAILED with " + plural(len(r.Findings), "finding")
	}
	return fmt.Sprintf("kgen verify: %s; %s", strings.Join(parts, ", "), status)
}

func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Run verifies the project of cfg.
func Run(ctx context.Context, cfg *config.Config, opts Options) (*Report, error) {
	r := &Report{}
	res, err := generate.Run(cfg)
	if err != nil {
		return r.specErrors(err)
	}
	r.Kernels, r.Files = len(res.Kernels), len(res.Files)
	for _, k := range res.Kernels {
		r.Variants += len(k.Variants)
	}
	if err := r.disk(cfg, opts, res); err != nil {
		return nil, err
	}
	r.cudaPorts(ctx, cfg, res)
	r.hipPorts(ctx, res)
	if err := r.goCode(ctx, cfg, opts); err != nil {
		return nil, err
	}
	if err := r.parity(ctx, cfg, res, opts); err != nil {
		return nil, err
	}
	for _, p := range r.Parity {
		if p.OK() {
			r.ParityOK++
		}
	}
	r.rootCauses(res)
	sortFindings(r.Findings)
	return r, nil
}

// specErrors turns spec diagnostics into findings; nothing else can run.
func (r *Report) specErrors(err error) (*Report, error) {
	de, ok := diag.AsError(err)
	if !ok {
		return nil, err
	}
	r.Checks = []string{"spec"}
	for _, d := range de.Diagnostics {
		r.Findings = append(r.Findings, Finding{Check: "spec", Pos: d.Pos, Msg: d.Msg})
	}
	return r, nil
}

// disk runs the checks that compare the files on disk with the specs.
func (r *Report) disk(cfg *config.Config, opts Options, res *generate.Result) error {
	r.Checks = []string{"spec", "drift", "keys", "ports"}
	if err := r.drift(cfg, opts.OutDirs, res.Files); err != nil {
		return err
	}
	pkg, err := readGoPackage(cfg.Dir, cfg.OutGo)
	if err != nil {
		return err
	}
	if err := r.dtypeKeys(cfg, res, pkg); err != nil {
		return err
	}
	r.ports(cfg, res, pkg)
	return nil
}

// goCode checks the module's Go code: the port-dispatch rules, and that
// the generated package type-checks (gotypes.go), over one load of the
// module. Without a go.mod neither can run, and one note says so.
func (r *Report) goCode(ctx context.Context, cfg *config.Config, opts Options) error {
	if dispatch.ModuleRoot(cfg.Dir) == "" {
		r.Notes = append(r.Notes, "port dispatch and generated Go not checked: no go.mod at or above kgen.yaml")
		return nil
	}
	res, err := r.dispatch(ctx, cfg, opts)
	if err != nil {
		return err
	}
	return r.goTypes(ctx, cfg, res)
}

// dispatch runs the port-dispatch rules over the module's Go code; the
// result is nil when they did not run.
func (r *Report) dispatch(ctx context.Context, cfg *config.Config, opts Options) (*dispatch.Result, error) {
	if opts.NoDispatch {
		r.Notes = append(r.Notes, "port dispatch not checked")
		return nil, nil
	}
	res, err := dispatch.Check(ctx, dispatch.Options{
		ConfigDir: cfg.Dir, GenDir: filepath.Join(cfg.Dir, filepath.FromSlash(cfg.OutGo)), Exempt: cfg.Verify.Exempt,
	})
	if err != nil {
		return nil, err
	}
	if !res.Ran {
		r.Notes = append(r.Notes, res.Note)
		return nil, nil
	}
	r.Checks = append(r.Checks, "dispatch")
	r.Launchers, r.Exempt = res.Launchers, res.Exempt
	for _, f := range res.Findings {
		r.Findings = append(r.Findings, Finding{Check: "dispatch", Pos: f.Pos, End: f.End, Rule: f.Rule, Msg: f.Msg})
	}
	return res, nil
}

// moduleOrConfigRoot is the folder the module-wide scans cover.
func moduleOrConfigRoot(cfg *config.Config) string {
	if root := dispatch.ModuleRoot(cfg.Dir); root != "" {
		return root
	}
	return cfg.Dir
}

// sortFindings orders findings by position, then check, stably.
func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i].Pos, fs[j].Pos
		switch {
		case a.Path != b.Path:
			return a.Path < b.Path
		case a.Line != b.Line:
			return a.Line < b.Line
		case a.Col != b.Col:
			return a.Col < b.Col
		}
		return fs[i].Check < fs[j].Check
	})
}
