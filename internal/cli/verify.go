package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kgen-dev/kgen/verify"
	paritypkg "github.com/kgen-dev/kgen/verify/parity"
)

func verifyCmd(o *options) *cobra.Command {
	format, parity, mutate, noDiff, costView := "text", "", "", false, false
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check in CI that generated files match the specs and every check passes",
		Long: `verify regenerates everything in memory and reports drift (missing, stale,
extra and hand-edited files, with a unified diff of what kgen gen would
change), then checks the files on disk against the specs: per kernel, the
spec's dtypes, the .metal instantiations and the Go dtype-key table agree,
every key is the hash of the .metal on disk, no two variants share a key
or a host name anywhere in the module, and every generated port has its
slot, its source and launchers that go through Select. Where kgen.yaml
lies in a Go module, it type-checks the module's code — an error in the
generated package is reported at the generated file and names its spec —
and applies the five port-dispatch rules (direct-port, backend-compare,
own-refusal, backend-gate, platform-gate; exemptions in kgen.yaml's
verify.exempt or a //kgen:ignore comment, each with a reason). Where clang >= 17 exists (clang++-19), it also checks every kernel
in a strict MSL mode and runs every kernel × dtype on the CPU on adversarial
inputs, comparing each element with a float64 evaluation of the formulas
within the spec's tolerance, one lane-level line per kernel × dtype; where
xcrun exists (macOS), it compiles every kernel with Apple's Metal compiler.
See docs/fidelity.md.

It writes nothing, prints one finding per line (path:line:col: message,
paths relative to the kgen.yaml folder; a spec edited without kgen gen is
one finding at the spec, what it caused indented under it) and ends with
one summary line,
e.g. "kgen verify: 14 kernels, 38 variants, 14 launchers, 0 exempt,
38 parity ok; ok". Exit code 1 when anything fails. In json, github and
junit every finding carries a stable rule id (drift/stale, keys/mismatch,
dispatch/direct-port, …), its severity and, in json and github, its end.`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			if format != "text" && format != "json" && format != "github" && format != "junit" {
				return usageError{fmt.Errorf("--format must be text, json, github or junit, not %q", format)}
			}
			if format != "junit" { // spec and config errors before the report, in its format
				o.format = format
			}
			cfg, err := o.loadConfig()
			if err != nil {
				return o.reportErr(err)
			}
			if costView {
				return verifyCost(o, cfg, format)
			}
			if parity != "" && parity != "auto" && parity != "on" && parity != "off" {
				return usageError{fmt.Errorf("--parity must be auto, on or off, not %q", parity)}
			}
			if _, err := paritypkg.ParseMutation(mutate); err != nil {
				return usageError{fmt.Errorf("--mutate: %v", err)}
			}
			if parity == "" { // the config decides: verify.parity in kgen.yaml
				parity = map[string]string{"auto": "auto", "required": "on", "off": "off"}[cfg.Verify.Parity]
			}
			rep, err := verify.Run(context.Background(), cfg, verify.Options{OutDirs: OutDirs(cfg), Parity: parity, Mutate: mutate})
			if err != nil {
				return err
			}
			if err := printReport(o, rep, format, !noDiff); err != nil {
				return err
			}
			if !rep.OK() {
				return failed
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&parity, "parity", "", "numerical parity of every kernel × dtype on the CPU: auto (where a C++ compiler exists), on, or off (default: verify.parity in kgen.yaml, else auto)")
	cmd.Flags().StringVar(&format, "format", "text", "output format: text, json, github (GitHub Actions annotations) or junit (JUnit XML)")
	cmd.Flags().BoolVar(&noDiff, "no-diff", false, "leave out the unified diffs of stale, hand-edited and foreign files")
	cmd.Flags().StringVar(&mutate, "mutate", "", "replace every kernel's stores with its first input (first-input) or 0 (zero) before parity: every kernel × dtype must then fail")
	_ = cmd.Flags().MarkHidden("mutate")
	cmd.Flags().BoolVar(&costView, "cost", false, "instead of the checks, print the cost view: every kernel × dtype counted on the CPU harness at a fixed shape, with a roofline estimate per Apple GPU class (text or json; docs/metal-cost.md)")
	return cmd
}

// GitHub workflow-command escaping: data, and property values.
var (
	ghData     = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	ghProperty = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
)

// maxTextDiff caps the diff lines printed under one finding in text; json
// carries every line.
const maxTextDiff = 200

// printReport prints the parity lines, the findings (with their diffs
// unless diffs is false) and the summary line in one format.
func printReport(o *options, rep *verify.Report, format string, diffs bool) error {
	switch format {
	case "json":
		return printJSON(o, rep, diffs)
	case "junit":
		return printJUnit(o, rep, diffs)
	case "github":
		for _, p := range rep.Parity {
			fmt.Fprintln(o.stdout, "parity "+p.String())
		}
		for _, w := range rep.Warnings {
			fmt.Fprintf(o.stdout, "::warning title=%s::%s\n", ghProperty.Replace("kgen verify"), ghData.Replace(w))
		}
		for _, f := range rep.Findings {
			end := f.EndPos()
			fmt.Fprintf(o.stdout, "::%s file=%s,line=%d,col=%d,endLine=%d,endColumn=%d,title=%s::%s\n", verify.SeverityError,
				ghProperty.Replace(f.Pos.Path), f.Pos.Line, f.Pos.Col, end.Line, end.Col, ghProperty.Replace("kgen "+f.RuleID()), ghData.Replace(withFolded(f)))
			if diffs && f.Diff != "" {
				fmt.Fprintf(o.stdout, "::group::diff %s\n%s::endgroup::\n", f.Pos.Path, f.Diff)
			}
		}
	default:
		for _, p := range rep.Parity {
			fmt.Fprintln(o.stdout, "parity "+p.String())
		}
		for _, w := range rep.Warnings {
			fmt.Fprintln(o.stdout, "warning: "+w)
		}
		for _, f := range rep.Findings {
			fmt.Fprintln(o.stdout, f.String())
			for _, ff := range f.Folded {
				fmt.Fprintln(o.stdout, "    "+ff.String())
			}
			if diffs && f.Diff != "" {
				printDiff(o, f.Diff)
			}
		}
	}
	fmt.Fprintln(o.stdout, rep.Summary())
	return nil
}

// printDiff prints a diff under its finding, indented so that every line
// that starts at column 1 is still a finding.
func printDiff(o *options, diff string) {
	lines := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	for i, l := range lines {
		if i == maxTextDiff {
			fmt.Fprintf(o.stdout, "    … %d more diff lines (--format json has them all)\n", len(lines)-i)
			break
		}
		fmt.Fprintln(o.stdout, "    "+l)
	}
}

// jsonFinding is one finding in `kgen verify --format json`.
// id is the stable rule id; end_line and end_col end the finding's text
// (equal to line and col where only the start is known).
type jsonFinding struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
	Check    string `json:"check"`
	Rule     string `json:"rule,omitempty"`
	Path     string `json:"path"`
	Line     int    `json:"line"`
	Col      int    `json:"col"`
	EndLine  int    `json:"end_line"`
	EndCol   int    `json:"end_col"`
	Message  string `json:"message"`
	Diff     string `json:"diff,omitempty"`
	// Folded are the findings on generated files this one stands for.
	Folded []jsonFinding `json:"folded,omitempty"`
}

// jsonReport is `kgen verify --format json`; launchers and exempt appear
// when the port-dispatch rules ran, parity_ok when parity did.
type jsonReport struct {
	OK        bool          `json:"ok"`
	Kernels   int           `json:"kernels"`
	Variants  int           `json:"variants"`
	Files     int           `json:"files"`
	Launchers *int          `json:"launchers,omitempty"`
	Exempt    *int          `json:"exempt,omitempty"`
	ParityOK  *int          `json:"parity_ok,omitempty"`
	Checks    []string      `json:"checks"`
	Notes     []string      `json:"notes"`
	Warnings  []string      `json:"warnings"`
	Findings  []jsonFinding `json:"findings"`
	Parity    []parityJSON  `json:"parity,omitempty"`
	Summary   string        `json:"summary"`
}

func printJSON(o *options, rep *verify.Report, diffs bool) error {
	out := jsonReport{OK: rep.OK(), Kernels: rep.Kernels, Variants: rep.Variants, Files: rep.Files, Checks: rep.Checks,
		Notes: append([]string{}, rep.Notes...), Warnings: append([]string{}, rep.Warnings...), Findings: []jsonFinding{}, Summary: rep.Summary()}
	if rep.HasCheck("dispatch") {
		out.Launchers, out.Exempt = &rep.Launchers, &rep.Exempt
	}
	if rep.HasCheck("parity") {
		out.ParityOK = &rep.ParityOK
	}
	for _, f := range rep.Findings {
		out.Findings = append(out.Findings, jsonOf(f, diffs))
	}
	for _, p := range rep.Parity {
		out.Parity = append(out.Parity, parityOf(p))
	}
	enc := json.NewEncoder(o.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func jsonOf(f verify.Finding, diffs bool) jsonFinding {
	end := f.EndPos()
	jf := jsonFinding{f.RuleID(), verify.SeverityError, f.Check, f.Rule, f.Pos.Path, f.Pos.Line, f.Pos.Col, end.Line, end.Col, f.Msg, f.Diff, nil}
	if !diffs || len(f.Folded) > 0 { // the folded findings carry their own diffs
		jf.Diff = ""
	}
	for _, ff := range f.Folded {
		jf.Folded = append(jf.Folded, jsonOf(ff, diffs))
	}
	return jf
}

// withFolded is f's message followed by the findings it stands for, one a
// line.
func withFolded(f verify.Finding) string {
	msg := f.Msg
	for _, ff := range f.Folded {
		msg += "\n" + ff.String()
	}
	return msg
}
