package breaking

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/diag"
)

// applyExemptions drops the findings kgen.yaml's breaking.exempt excuses,
// counting them; an exemption naming an unknown rule is itself a finding,
// and one that excuses nothing is a warning: a breaking change is made
// once, so its exemption stops matching as soon as the older tree has it,
// and the warning says to remove it before it excuses the next one.
func applyExemptions(found []Finding, exempt []config.BreakingExemption) (kept []Finding, excused int, warnings []string) {
	used := make([]bool, len(exempt))
	for _, f := range found {
		i := exemptionFor(f, exempt)
		if i < 0 {
			kept = append(kept, f)
			continue
		}
		used[i] = true
		excused++
	}
	for i, e := range exempt {
		switch {
		case e.Rule != "" && !isRule(ruleID(e.Rule)):
			kept = append(kept, Finding{Rule: Exempt, Kernel: e.Kernel, Pos: e.Pos, Side: InNew, Msg: fmt.Sprintf(
				"breaking exemption for kernel %s names rule %q, which is not a breaking rule%s; want one of %s, or no rule for all",
				e.Kernel, e.Rule, diag.Suggest(shortRule(ruleID(e.Rule)), shortRules()), strings.Join(shortRules(), ", "))})
		case !used[i]:
			warnings = append(warnings, fmt.Sprintf("%s: breaking exemption excuses nothing: no %s of kernel %s; remove it, or it will silently excuse the next one",
				e.Pos, what(e.Rule), e.Kernel))
		}
	}
	return kept, excused, warnings
}

func what(rule string) string {
	if rule == "" {
		return "breaking change"
	}
	return shortRule(ruleID(rule)) + " finding"
}

// exemptionFor returns the index of the first exemption covering f, or -1.
func exemptionFor(f Finding, exempt []config.BreakingExemption) int {
	for i, e := range exempt {
		if e.Kernel != f.Kernel {
			continue
		}
		if e.Rule == "" || ruleID(e.Rule) == f.Rule {
			return i
		}
	}
	return -1
}

// ruleID is an exemption's rule as a rule id: "kernel-removed" and
// "breaking/kernel-removed" are one rule.
func ruleID(r string) string {
	if strings.HasPrefix(r, "breaking/") {
		return r
	}
	return "breaking/" + r
}

func shortRule(id string) string { return strings.TrimPrefix(id, "breaking/") }

func shortRules() []string {
	var out []string
	for _, r := range Rules {
		out = append(out, shortRule(r))
	}
	return out
}

func isRule(id string) bool {
	for _, r := range Rules {
		if r == id {
			return true
		}
	}
	return false
}
