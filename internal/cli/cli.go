// Package cli is kgen's command line. Main runs it in-process, so tests drive
// the real commands with their own arguments, working folder and streams.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/internal/version"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitFail  = 1 // spec errors, drift, failed checks
	ExitUsage = 2 // bad flags or arguments, no config
)

// usageError marks errors that exit with ExitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// failed is returned by commands that already printed their findings.
var failed = errors.New("failed")

// Main runs kgen with args (without the program name) and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, failed) {
		return ExitFail
	}
	fmt.Fprintln(stderr, err)
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return ExitUsage
	}
	return ExitFail
}

// isCobraUsage recognises cobra's own argument and flag errors.
func isCobraUsage(err error) bool {
	var de *diag.Error
	return !errors.As(err, &de) && usageErr(err)
}

type options struct {
	configPath string
	stdout     io.Writer
	stderr     io.Writer
	format     string // gen's and fmt's --format (format.go); verify's own
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	o := &options{stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "kgen",
		Short: "kgen generates Metal kernels and their Go dispatch code from kernel specs",
		Long: `kgen turns declarative kernel specs (a formula, its dtypes, its threadgroup size,
its backend ports) into Metal Shading Language kernels, Go dispatch code and
dtype-key tables, and checks in CI that nothing drifted.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentFlags().StringVar(&o.configPath, "config", "", "path to kgen.yaml (default: found by walking up from the working folder)")
	root.AddCommand(genCmd(o), fmtCmd(o), verifyCmd(o), breakingCmd(o), listCmd(o), schemaCmd(o), initCmd(o), versionCmd(o), cudaCmd(o), rocmCmd(o), emuCmd(o), lspCmd(o))
	return root
}

// loadConfig finds and reads kgen.yaml.
func (o *options) loadConfig() (*config.Config, error) {
	p := o.configPath
	if p == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		if p, err = config.Find(wd); err != nil {
			return nil, usageError{err}
		}
	} else if st, err := os.Stat(p); err != nil {
		return nil, usageError{fmt.Errorf("--config %s: %v; name kgen.yaml's path", p, pathErr(err))}
	} else if st.IsDir() {
		// A usage error (exit 2), like a missing file: the flag names a
		// config file, and a folder is the wrong kind of argument.
		return nil, usageError{fmt.Errorf("--config %s: is a folder; name the config file inside it (e.g. --config %s)", p, filepath.Join(p, "kgen.yaml"))}
	}
	return config.Load(p)
}

func versionCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print kgen's version and how it was built",
		Long: `version prints kgen's release (the one generated headers name), then the
module version kgen was built as and, where the go command stamped it,
the VCS revision ("+dirty" when the tree had uncommitted changes) and the
Go version, e.g.
  kgen v0.1.0 (module v0.1.0, go1.24.0)
kgen --version prints the same line.`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintln(o.stdout, version.String())
			return nil
		},
	}
}

// noArgs rejects positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), args)}
	}
	return nil
}

func usageErr(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "flag needs an argument", "invalid argument", "accepts "} {
		if len(msg) >= len(p) && msg[:len(p)] == p {
			return true
		}
	}
	return false
}

// pathErr is an OS error without the path an *os.PathError repeats, for
// messages that already name the path as the user wrote it.
func pathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
