package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kgen-dev/kgen/diag"
)

// --format for gen and fmt, as verify has it: text (one diagnostic a line
// on stderr, the default), json (one object on stdout) or github (GitHub
// Actions ::error annotations on stdout). verify adds junit to these.

// formatFlag adds --format to cmd, into o.format.
func formatFlag(cmd *cobra.Command, o *options) {
	cmd.Flags().StringVar(&o.format, "format", "text", "output format: text, json or github (GitHub Actions annotations)")
}

// checkFormat refuses a --format gen and fmt do not write (exit 2).
func (o *options) checkFormat() error {
	switch o.format {
	case "", "text", "json", "github":
		return nil
	}
	return usageError{fmt.Errorf("--format must be text, json or github, not %q", o.format)}
}

// jsonDiag is one diagnostic in --format json.
type jsonDiag struct {
	Path    string `json:"path"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Message string `json:"message"`
}

// jsonResult is gen's and fmt's --format json object: ok, the
// diagnostics, what the command did (written, removed or changed files)
// and the summary line text would end with.
type jsonResult struct {
	OK          bool       `json:"ok"`
	Diagnostics []jsonDiag `json:"diagnostics"`
	Written     []string   `json:"written,omitempty"`
	Removed     []string   `json:"removed,omitempty"`
	Changed     []string   `json:"changed,omitempty"`
	Summary     string     `json:"summary"`
}

func (o *options) printJSON(r jsonResult) error {
	if r.Diagnostics == nil {
		r.Diagnostics = []jsonDiag{}
	}
	enc := json.NewEncoder(o.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// printDiags prints spec diagnostics and their count in o.format.
func (o *options) printDiags(ds []diag.Diagnostic) {
	summary := fmt.Sprintf("kgen: %d error(s); nothing written", len(ds))
	switch o.format {
	case "json":
		r := jsonResult{Summary: summary}
		for _, d := range ds {
			r.Diagnostics = append(r.Diagnostics, jsonDiag{d.Pos.Path, d.Pos.Line, d.Pos.Col, d.Msg})
		}
		_ = o.printJSON(r)
	case "github":
		for _, d := range ds {
			fmt.Fprintf(o.stdout, "::error file=%s,line=%d,col=%d,title=%s::%s\n", ghProperty.Replace(d.Pos.Path), d.Pos.Line, d.Pos.Col,
				ghProperty.Replace("kgen"), ghData.Replace(d.Msg))
		}
		fmt.Fprintln(o.stderr, summary)
	default:
		for _, d := range ds {
			fmt.Fprintln(o.stderr, d)
		}
		fmt.Fprintln(o.stderr, summary)
	}
}
