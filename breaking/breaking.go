// Package breaking is `kgen breaking`: it compares the public surface of
// an older set of specs (a git ref or another checkout, see against.go)
// with the current one and reports every change that breaks code built
// against the older: a kernel or a dtype gone, a host name changed, an
// input, output or param removed, added, renamed or moved, a tensor's
// shape or dtype changed, a param's type changed, a port no longer
// generated, the args struct laid out differently. Each finding has a
// stable rule id and a position, in the current spec, or for a removed
// kernel in the spec as it was in the older tree. New kernels, dtypes and
// ports break nothing. kgen.yaml's breaking.exempt excuses changes made on
// purpose (exempt.go).
package breaking

import (
	"fmt"
	"sort"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/diag"
)

// The rule ids, as findings, exemptions and every output format spell
// them. They are stable: a rule is only ever added.
const (
	KernelRemoved     = "breaking/kernel-removed"
	KindChanged       = "breaking/kind-changed"
	DTypeRemoved      = "breaking/dtype-removed"
	HostNameChanged   = "breaking/host-name-changed"
	BindingRemoved    = "breaking/binding-removed"
	BindingAdded      = "breaking/binding-added"
	BindingRenamed    = "breaking/binding-renamed"
	BindingReordered  = "breaking/binding-reordered"
	ShapeChanged      = "breaking/shape-changed"
	DTypeChanged      = "breaking/dtype-changed"
	ParamTypeChanged  = "breaking/param-type-changed"
	PortRemoved       = "breaking/port-removed"
	ArgsLayoutChanged = "breaking/args-layout-changed"
	// Exempt marks a problem with an exemption itself; it cannot be
	// exempted.
	Exempt = "breaking/exempt"
)

// Rules lists the rules an exemption may name, in the order a kernel is
// compared.
var Rules = []string{KernelRemoved, KindChanged, DTypeRemoved, HostNameChanged, BindingRemoved, BindingAdded, BindingRenamed,
	BindingReordered, ShapeChanged, DTypeChanged, ParamTypeChanged, PortRemoved, ArgsLayoutChanged}

// Where a finding's position is.
const (
	InNew = "new" // the current spec (or kgen.yaml)
	InOld = "old" // the spec as it was in the older tree: a removed kernel
)

// Finding is one breaking change.
type Finding struct {
	Rule   string // the stable rule id
	Kernel string // the kernel it breaks (its old name)
	Pos    diag.Pos
	Side   string // InNew or InOld: which tree Pos is in
	Msg    string
}

// String is the finding's text line: "path:line:col: rule: message".
func (f Finding) String() string { return fmt.Sprintf("%s: %s: %s", f.Pos, f.Rule, f.Msg) }

// Report is the outcome of one comparison. Fields are only ever added.
type Report struct {
	Against  string   // the older tree as the user named it ("main", "../old")
	Kernels  int      // the older tree's kernels, each compared
	Names    []string // their names, in the older tree's order
	Findings []Finding
	Exempt   int      // breaking changes excused by breaking.exempt
	Notes    []string // what the comparison could not see, and why
	// Warnings do not fail the run: an exemption that excuses nothing.
	Warnings []string
}

// OK reports whether nothing breaks.
func (r *Report) OK() bool { return len(r.Findings) == 0 }

// Summary is the line every format ends with, e.g. "kgen breaking: 3
// kernels compared against main: 2 breaking changes, 1 exempt".
func (r *Report) Summary() string {
	bad := 0 // exemptions that name no rule
	for _, f := range r.Findings {
		if f.Rule == Exempt {
			bad++
		}
	}
	s := fmt.Sprintf("kgen breaking: %s compared against %s: %s", plural(r.Kernels, "kernel"), r.Against, plural(len(r.Findings)-bad, "breaking change"))
	if bad > 0 {
		s += ", " + plural(bad, "bad exemption")
	}
	if r.Exempt > 0 {
		s += fmt.Sprintf(", %d exempt", r.Exempt)
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Check compares old with cur and applies the exemptions; against names
// the older tree in messages.
func Check(old, cur *Specs, against string, exempt []config.BreakingExemption) *Report {
	r := &Report{Against: against, Kernels: len(old.Kernels)}
	for _, k := range old.Kernels {
		r.Names = append(r.Names, k.Name)
	}
	found := Compare(old, cur, against)
	r.Findings, r.Exempt, r.Warnings = applyExemptions(found, exempt)
	sortFindings(r.Findings)
	return r
}

// sortFindings orders findings by side (the current specs first) and
// position, stably: one position's findings keep the order of comparison.
func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i].Pos, fs[j].Pos
		switch {
		case fs[i].Side != fs[j].Side:
			return fs[i].Side == InNew
		case a.Path != b.Path:
			return a.Path < b.Path
		case a.Line != b.Line:
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}
