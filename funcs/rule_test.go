package funcs

import (
	"strings"
	"testing"
)

// TestEveryRuleHasWords: hover shows each function's rule in words.
func TestEveryRuleHasWords(t *testing.T) {
	for _, f := range Table {
		if s := f.Bound.Rule.String(); s == "unknown rule" || !strings.Contains(s, ":") {
			t.Errorf("%s: rule %d has no words: %q", f.Name, f.Bound.Rule, s)
		}
	}
}
