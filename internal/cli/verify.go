package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kgen-dev/kgen/verify"
)

func verifyCmd(o *options) *cobra.Command {
	format, parity := "text", ""
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check in CI that generated files match the specs and every check passes",
		Long: `verify regenerates everything in memory and reports drift (missing, stale,
extra and hand-edited files), then runs the coverage checks. It writes
nothing and ends with one summary line. Exit code 1 when anything fails.
Where a C++ compiler exists (clang++-19, clang++ or g++), it also runs every
kernel × dtype on the CPU and compares each element with a float64
evaluation of the formulas, within the spec's tolerance.`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			if format != "text" && format != "json" && format != "github" {
				return usageError{fmt.Errorf("--format must be text, json or github, not %q", format)}
			}
			cfg, err := o.loadConfig()
			if err != nil {
				return o.reportErr(err)
			}
			if parity != "" && parity != "auto" && parity != "on" && parity != "off" {
				return usageError{fmt.Errorf("--parity must be auto, on or off, not %q", parity)}
			}
			if parity == "" { // the config decides: verify.parity in kgen.yaml
				parity = map[string]string{"auto": "auto", "required": "on", "off": "off"}[cfg.Verify.Parity]
			}
			rep, err := verify.Run(context.Background(), cfg, verify.Options{OutDirs: OutDirs(cfg), Parity: parity})
			if err != nil {
				return err
			}
			if err := printReport(o, rep, format); err != nil {
				return err
			}
			if !rep.OK() {
				return failed
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&parity, "parity", "", "numerical parity of every kernel × dtype on the CPU: auto (where a C++ compiler exists), on, or off (default: verify.parity in kgen.yaml, else auto)")
	cmd.Flags().StringVar(&format, "format", "text", "output format: text, json, or github (GitHub Actions annotations)")
	return cmd
}

// GitHub workflow-command escaping: data, and property values.
var (
	ghData     = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	ghProperty = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
)

func printReport(o *options, rep *verify.Report, format string) error {
	switch format {
	case "json":
		type finding struct {
			Check   string `json:"check"`
			Path    string `json:"path"`
			Line    int    `json:"line"`
			Col     int    `json:"col"`
			Message string `json:"message"`
		}
		out := struct {
			OK       bool      `json:"ok"`
			Kernels  int       `json:"kernels"`
			Files    int       `json:"files"`
			Checks   []string  `json:"checks"`
			Findings []finding `json:"findings"`
			Summary  string    `json:"summary"`
		}{OK: rep.OK(), Kernels: rep.Kernels, Files: rep.Files, Checks: rep.Checks, Findings: []finding{}, Summary: rep.Summary()}
		for _, f := range rep.Findings {
			out.Findings = append(out.Findings, finding{f.Check, f.Pos.Path, f.Pos.Line, f.Pos.Col, f.Msg})
		}
		enc := json.NewEncoder(o.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	case "github":
		for _, f := range rep.Findings {
			fmt.Fprintf(o.stdout, "::error file=%s,line=%d,col=%d,title=kgen %s::%s\n",
				ghProperty.Replace(f.Pos.Path), f.Pos.Line, f.Pos.Col, f.Check, ghData.Replace(f.Msg))
		}
	default:
		for _, f := range rep.Findings {
			fmt.Fprintf(o.stdout, "%s: %s\n", f.Pos, f.Msg)
		}
	}
	fmt.Fprintln(o.stdout, rep.Summary())
	return nil
}
