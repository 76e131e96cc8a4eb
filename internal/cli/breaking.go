package cli

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kgen-dev/kgen/breaking"
	"github.com/kgen-dev/kgen/verify"
)

func breakingCmd(o *options) *cobra.Command {
	format, against := "text", ""
	cmd := &cobra.Command{
		Use:   "breaking --against REF|FOLDER",
		Short: "Report spec changes that break code built against an older tree (a git ref or a folder)",
		Long: `breaking compares the public surface of the specs with an older tree's:
kernel and host names, dtypes, the names, order, shapes and dtypes of
inputs and outputs, params and their types, ports, and the args struct's
layout. It reports every change that breaks code built against the older
tree — a kernel or dtype removed, an input renamed, reordered or added, a
shape or a pinned dtype changed, a port no longer generated — one a line
(path:line:col: rule: message), each with a stable rule id
(breaking/kernel-removed, breaking/dtype-removed, breaking/binding-reordered,
…), and ends with one summary line, e.g.
"kgen breaking: 14 kernels compared against main: 0 breaking changes".
New kernels, dtypes and ports break nothing. Positions are in the current
specs, except for a removed kernel: its spec as it was in the older tree.

--against is a git ref of the repository kgen.yaml is in (main, HEAD~1,
origin/main, a commit; read with git, the working tree untouched), or a
folder: another checkout holding kgen.yaml, or holding it at the same path
relative to the repository root. A folder of that name wins over a ref.

Changes made on purpose go in kgen.yaml's breaking.exempt, each with a
kernel and a reason (and optionally a rule); one that excuses nothing is a
warning. Exit code 1 when anything breaks, 2 when --against names nothing
to compare with.`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error { return runBreaking(o, against, format) },
	}
	cmd.Flags().StringVar(&against, "against", "", "the older tree: a git ref (main, HEAD~1, origin/main, a commit) or a folder holding its kgen.yaml")
	cmd.Flags().StringVar(&format, "format", "text", "output format: text, json, github (GitHub Actions annotations) or junit (JUnit XML)")
	return cmd
}

func runBreaking(o *options, against, format string) error {
	if format != "text" && format != "json" && format != "github" && format != "junit" {
		return usageError{fmt.Errorf("--format must be text, json, github or junit, not %q", format)}
	}
	if format != "junit" { // spec and config errors in the report's format
		o.format = format
	}
	cfg, err := o.loadConfig()
	if err != nil {
		return o.reportErr(err)
	}
	old, err := breaking.Against(cfg, against)
	var ue *breaking.UsageError
	if errors.As(err, &ue) {
		return usageError{err}
	} else if err != nil {
		return err
	}
	defer old.Close()
	before, err := old.Load()
	if err != nil {
		return err
	}
	now, err := breaking.Load(cfg)
	if err != nil {
		return o.reportErr(err)
	}
	rep := breaking.Check(before, now, old.Label, cfg.Breaking.Exempt)
	if old.NoSpecs != "" {
		rep.Notes = append(rep.Notes, old.NoSpecs)
	}
	if err := printBreaking(o, rep, format); err != nil {
		return err
	}
	if !rep.OK() {
		return failed
	}
	return nil
}

func printBreaking(o *options, rep *breaking.Report, format string) error {
	switch format {
	case "json":
		return printBreakingJSON(o, rep)
	case "junit":
		return printBreakingJUnit(o, rep)
	case "github":
		for _, n := range rep.Notes {
			fmt.Fprintf(o.stdout, "::notice title=%s::%s\n", ghProperty.Replace("kgen breaking"), ghData.Replace(n))
		}
		for _, w := range rep.Warnings {
			fmt.Fprintf(o.stdout, "::warning title=%s::%s\n", ghProperty.Replace("kgen breaking"), ghData.Replace(w))
		}
		for _, f := range rep.Findings {
			fmt.Fprintf(o.stdout, "::%s file=%s,line=%d,col=%d,endLine=%d,endColumn=%d,title=%s::%s\n", verify.SeverityError,
				ghProperty.Replace(f.Pos.Path), f.Pos.Line, f.Pos.Col, f.Pos.Line, f.Pos.Col, ghProperty.Replace("kgen "+f.Rule), ghData.Replace(f.Msg))
		}
	default:
		for _, n := range rep.Notes {
			fmt.Fprintln(o.stdout, "note: "+n)
		}
		for _, w := range rep.Warnings {
			fmt.Fprintln(o.stdout, "warning: "+w)
		}
		for _, f := range rep.Findings {
			fmt.Fprintln(o.stdout, f.String())
		}
	}
	fmt.Fprintln(o.stdout, rep.Summary())
	return nil
}

// breakingFinding is one finding in `kgen breaking --format json`: id is
// the stable rule id, kernel the kernel it breaks (its old name), in says
// whether the position is in the current spec ("new") or in the older
// tree's ("old": a removed kernel).
type breakingFinding struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
	Kernel   string `json:"kernel"`
	In       string `json:"in"`
	Path     string `json:"path"`
	Line     int    `json:"line"`
	Col      int    `json:"col"`
	EndLine  int    `json:"end_line"`
	EndCol   int    `json:"end_col"`
	Message  string `json:"message"`
}

// breakingReport is `kgen breaking --format json`.
type breakingReport struct {
	OK       bool              `json:"ok"`
	Against  string            `json:"against"`
	Kernels  int               `json:"kernels"`
	Exempt   int               `json:"exempt"`
	Notes    []string          `json:"notes"`
	Warnings []string          `json:"warnings"`
	Findings []breakingFinding `json:"findings"`
	Summary  string            `json:"summary"`
}

func printBreakingJSON(o *options, rep *breaking.Report) error {
	out := breakingReport{OK: rep.OK(), Against: rep.Against, Kernels: rep.Kernels, Exempt: rep.Exempt,
		Notes: append([]string{}, rep.Notes...), Warnings: append([]string{}, rep.Warnings...), Findings: []breakingFinding{}, Summary: rep.Summary()}
	for _, f := range rep.Findings {
		out.Findings = append(out.Findings, breakingFinding{f.Rule, verify.SeverityError, f.Kernel, f.Side,
			f.Pos.Path, f.Pos.Line, f.Pos.Col, f.Pos.Line, f.Pos.Col, f.Msg})
	}
	enc := json.NewEncoder(o.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// printBreakingJUnit writes one failing test case per breaking change and
// one passing case per kernel compared without one.
func printBreakingJUnit(o *options, rep *breaking.Report) error {
	s := junitSuite{Name: "kgen breaking", Out: rep.Summary()}
	broken := map[string]bool{}
	for _, f := range rep.Findings {
		broken[f.Kernel] = true
		s.Cases = append(s.Cases, junitCase{
			Name: fmt.Sprintf("%s %s", f.Rule, f.Pos), Classname: "kgen.breaking", File: f.Pos.Path, Line: f.Pos.Line,
			Failure: &junitFailure{Message: f.Msg, Type: f.Rule, Text: f.String()},
		})
	}
	for _, k := range rep.Names {
		if !broken[k] {
			s.Cases = append(s.Cases, junitCase{Name: "kernel " + k, Classname: "kgen.breaking"})
		}
	}
	for _, line := range append(append([]string{}, rep.Notes...), rep.Warnings...) {
		s.Out += "\n" + line
	}
	s.Tests, s.Failures = len(s.Cases), len(rep.Findings)
	fmt.Fprint(o.stdout, xml.Header)
	enc := xml.NewEncoder(o.stdout)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{s}}); err != nil {
		return err
	}
	fmt.Fprintln(o.stdout)
	return nil
}
