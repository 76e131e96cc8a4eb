package dispatch

import (
	"fmt"
	"go/ast"
	"strings"

	"github.com/kgen-dev/kgen/diag"
)

// Inline exemptions sit next to the code they excuse, besides kgen.yaml's
// list:
//
//	err := kgenrt.MetalPort(d).Run(call) //kgen:ignore direct-port benchmarks the raw port
//
// A //kgen:ignore comment excuses findings of its rule on its own line or,
// alone on a line, on the next one. It must name a rule and give a reason;
// one that excuses nothing is itself a finding, as in kgen.yaml.

const ignorePrefix = "//kgen:ignore"

// ignore is one //kgen:ignore comment.
type ignore struct {
	pos    diag.Pos
	rule   string
	reason string
	lines  [2]int // the lines it covers
	used   bool
}

// ignores collects the package's //kgen:ignore comments.
func (c *checker) ignores() []*ignore {
	var out []*ignore
	for _, f := range c.pkg.Syntax {
		for _, g := range f.Comments {
			for _, cm := range g.List {
				if cm.Text != ignorePrefix && !strings.HasPrefix(cm.Text, ignorePrefix+" ") {
					continue
				}
				out = append(out, c.parseIgnore(f, cm))
			}
		}
	}
	return out
}

func (c *checker) parseIgnore(f *ast.File, cm *ast.Comment) *ignore {
	pos := c.position(cm.Pos())
	fields := strings.Fields(strings.TrimPrefix(cm.Text, ignorePrefix))
	ig := &ignore{pos: pos, lines: [2]int{pos.Line, pos.Line}}
	if len(fields) > 0 {
		ig.rule = fields[0]
		ig.reason = strings.Join(fields[1:], " ")
	}
	if c.aloneOnLine(f, cm) {
		ig.lines[1] = pos.Line + 1
	}
	return ig
}

// aloneOnLine reports whether no code precedes the comment on its line.
func (c *checker) aloneOnLine(f *ast.File, cm *ast.Comment) bool {
	line := c.pkg.Fset.Position(cm.Pos()).Line
	alone := true
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil || !alone {
			return false
		}
		if _, ok := n.(*ast.File); ok {
			return true
		}
		if n.Pos() < cm.Pos() && c.pkg.Fset.Position(n.End()).Line == line {
			if _, isComment := n.(*ast.CommentGroup); !isComment {
				alone = false
			}
		}
		return n.Pos() < cm.Pos()
	})
	return alone
}

// applyIgnores drops the findings an inline exemption excuses, counting
// them, and reports malformed and unused exemptions.
func (c *checker) applyIgnores(res *Result) {
	igs := c.ignores()
	var kept []Finding
	for _, f := range c.out {
		if ig := matchIgnore(igs, f); ig != nil {
			ig.used = true
			res.Exempt++
			continue
		}
		kept = append(kept, f)
	}
	for _, ig := range igs {
		switch {
		case !isRule(ig.rule):
			kept = append(kept, Finding{Pos: ig.pos, Rule: Exempt, Msg: fmt.Sprintf("//kgen:ignore names %q, not a port-dispatch rule%s; want //kgen:ignore <rule> <reason> with a rule of %s",
				ig.rule, diag.Suggest(ig.rule, Rules), strings.Join(Rules, ", "))})
		case ig.reason == "":
			kept = append(kept, Finding{Pos: ig.pos, Rule: Exempt, Msg: "//kgen:ignore " + ig.rule + " gives no reason: say why the code may break the rule"})
		case !ig.used:
			kept = append(kept, Finding{Pos: ig.pos, Rule: Exempt, Msg: "//kgen:ignore " + ig.rule + " excuses no " + ig.rule + " finding on its line or the next; remove it"})
		}
	}
	c.out = kept
}

// matchIgnore is the well-formed exemption excusing f, or nil.
func matchIgnore(igs []*ignore, f Finding) *ignore {
	for _, ig := range igs {
		if ig.rule == f.Rule && ig.reason != "" && ig.pos.Path == f.Pos.Path && f.Pos.Line >= ig.lines[0] && f.Pos.Line <= ig.lines[1] {
			return ig
		}
	}
	return nil
}
