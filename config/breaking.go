package config

import (
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/internal/yamlnode"
)

// Breaking configures `kgen breaking`.
type Breaking struct {
	// Exempt lists breaking changes a release makes on purpose, each with
	// a reason.
	Exempt []BreakingExemption
}

// BreakingExemption excuses one kernel's breaking changes (optionally of
// one rule) from `kgen breaking`. Package breaking checks the rule name
// and warns about an exemption that excuses nothing.
type BreakingExemption struct {
	Kernel string   // the kernel's name (the old name, for a removed kernel)
	Rule   string   // a rule ("kernel-removed" or "breaking/kernel-removed"), or "" for every rule
	Reason string   // required: why callers may be broken
	Pos    diag.Pos // where it is written in kgen.yaml
}

var breakingFields = []string{"exempt"}

// breaking reads the `breaking:` section.
func (r *reader) breaking(n ast.Node) {
	fs, ok := r.doc.Fields(n, "breaking", r.diags)
	if !ok {
		return
	}
	for _, f := range fs {
		if f.Key != "exempt" {
			r.diags.Addf(f.KeyPos, "unknown breaking field %q%s", f.Key, diag.Suggest(f.Key, breakingFields))
			continue
		}
		r.breakingExemptions(f.Value)
	}
}

var breakingExemptFields = []string{"kernel", "rule", "reason"}

func (r *reader) breakingExemptions(n ast.Node) {
	items, ok := r.doc.Seq(n, "breaking.exempt", r.diags)
	if !ok {
		return
	}
	for _, it := range items {
		fs, ok := r.doc.Fields(it, "an exemption ({kernel, rule, reason})", r.diags)
		if !ok {
			continue
		}
		e := BreakingExemption{Pos: r.doc.Pos(it)}
		for _, f := range fs {
			v, _ := yamlnode.Scalar(f.Value)
			switch f.Key {
			case "kernel":
				e.Kernel = strings.TrimSpace(v)
			case "rule":
				e.Rule = strings.TrimSpace(v)
			case "reason":
				e.Reason = strings.TrimSpace(v)
			default:
				r.diags.Addf(f.KeyPos, "unknown exemption field %q%s", f.Key, diag.Suggest(f.Key, breakingExemptFields))
			}
		}
		if e.Kernel == "" || e.Reason == "" {
			r.diags.Addf(e.Pos, "a breaking exemption needs a kernel and a reason (why callers may be broken)")
			continue
		}
		r.c.Breaking.Exempt = append(r.c.Breaking.Exempt, e)
	}
}
