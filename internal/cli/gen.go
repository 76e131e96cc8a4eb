package cli

import (
	"context"
	"fmt"
	"path"

	"github.com/spf13/cobra"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/emit/cuda"
	"github.com/kgen-dev/kgen/emit/hip"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/internal/gocheck"
	"github.com/kgen-dev/kgen/internal/output"
	"github.com/kgen-dev/kgen/spec"
)

func genCmd(o *options) *cobra.Command {
	check, prune := false, false
	cmd := &cobra.Command{
		Use:   "gen",
		Short: "Generate every output from the specs (writes only changed files)",
		Long: `gen reads kgen.yaml and every spec, and writes the MSL kernels and the Go
package. It writes nothing if any spec has an error or (inside a Go module)
the generated Go package does not type-check, writes only files whose
bytes changed, removes files it generated earlier that no spec produces any
more, and never overwrites or deletes a file it cannot prove it generated
(kgen's header and a matching kgen-digest line): a generated file edited by
hand is refused too. It writes all or nothing, even on I/O errors, only
into real folders (no symlinks on the way), and two gens on one tree run
one after the other.

--check is a dry run: it writes nothing, prints a unified diff of what gen
would change (from the disk to what it would write) and exits 1 when
anything would, 0 when nothing would.

--format json prints one object (ok, diagnostics with path, line, col and
message, the files written and removed, the summary); --format github
prints each diagnostic as a GitHub Actions ::error annotation.`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := o.checkFormat(); err != nil {
				return err
			}
			if check {
				return o.genCheck()
			}
			return o.gen(prune)
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "write nothing; print the diff of what gen would change and exit 1 if anything would")
	cmd.Flags().BoolVar(&prune, "prune", false, "with no spec left in the specs folder, remove every file kgen generated (without it, an empty folder is an error)")
	formatFlag(cmd, o)
	return cmd
}

// generate loads the config and runs the pipeline in memory; spec errors
// are printed and come back as failed.
func (o *options) generate() (*config.Config, *generate.Result, error) {
	cfg, err := o.loadConfig()
	if err != nil {
		return nil, nil, o.reportErr(err)
	}
	res, err := generate.Run(cfg)
	if err != nil {
		return nil, nil, o.reportErr(err)
	}
	return cfg, res, nil
}

func (o *options) gen(prune bool) error {
	cfg, res, err := o.pruneAll(prune)
	if cfg == nil && err == nil {
		cfg, res, err = o.generate()
	}
	if err != nil {
		return err
	}
	if err := o.typeCheck(cfg, res); err != nil {
		return err
	}
	// One gen at a time per tree: the lock covers the cleanup of an earlier
	// killed run's temps, the comparison and the commit.
	unlock, err := output.Lock(cfg.Dir, true)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := output.Cleanup(cfg.Dir, OutDirs(cfg)); err != nil {
		return err
	}
	changes, err := output.Diff(cfg.Dir, OutDirs(cfg), res.Files)
	if err != nil {
		return err
	}
	written, removed, err := output.Apply(cfg.Dir, changes)
	if err != nil {
		return err
	}
	summary := fmt.Sprintf("kgen gen: %d kernel(s), %d file(s): %d written, %d removed, %d unchanged",
		len(res.Kernels), len(res.Files), len(written), len(removed), len(res.Files)-len(written))
	if o.format == "json" {
		return o.printJSON(jsonResult{OK: true, Written: written, Removed: removed, Summary: summary})
	}
	fmt.Fprintln(o.stdout, summary)
	return nil
}

// pruneAll is gen's result for --prune over a specs folder with no spec
// left: nothing to generate, so every file kgen generated is extra and
// goes (only files that carry kgen's header and digest). A nil config
// means a normal run.
func (o *options) pruneAll(prune bool) (*config.Config, *generate.Result, error) {
	if !prune {
		return nil, nil, nil
	}
	cfg, err := o.loadConfig()
	if err != nil {
		return nil, nil, o.reportErr(err)
	}
	if files, err := spec.Files(cfg.Dir, cfg.Specs); err != nil || len(files) > 0 {
		return nil, nil, nil // specs to generate from (or a folder to complain about): a normal gen
	}
	return cfg, &generate.Result{Config: cfg}, nil
}

// typeCheck type-checks the generated Go package in memory, before
// anything is written, so that gen never exits 0 over Go that does not
// build (see package gocheck). Where it cannot run inside a module, a note
// on stderr says why.
func (o *options) typeCheck(cfg *config.Config, res *generate.Result) error {
	r, err := gocheck.Check(context.Background(), cfg.Dir, cfg.OutGo, res.Files)
	if err != nil {
		return err
	}
	if !r.Ran && !r.NoModule {
		fmt.Fprintf(o.stderr, "kgen gen: note: the generated Go package was not type-checked: %s\n", r.Note)
	}
	if len(r.Diags) > 0 {
		return o.reportErr(&diag.Error{Diagnostics: r.Diags})
	}
	return nil
}

// OutDirs lists the folders kgen owns under a config.
// They are every backend's source folder, the Go package and its folder of
// CUDA binaries and ROCm code objects.
func OutDirs(cfg *config.Config) []string {
	return append(append(cfg.Out[:0:0], cfg.Out[:]...), cfg.OutGo, path.Join(cfg.OutGo, cuda.BinDir), path.Join(cfg.OutGo, hip.BinDir))
}

// reportErr prints spec diagnostics one per line with a count, and returns
// failed; other errors are returned as they are.
func (o *options) reportErr(err error) error {
	de, ok := diag.AsError(err)
	if !ok {
		return err
	}
	o.printDiags(de.Diagnostics)
	return failed
}
