package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"
	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/internal/yamlnode"
	"github.com/kgen-dev/kgen/spec"
)

type fmtFlags struct{ diff, write, list, exitCode bool }

func fmtCmd(o *options) *cobra.Command {
	var f fmtFlags
	cmd := &cobra.Command{
		Use:   "fmt [file.yaml ...]",
		Short: "Rewrite specs in kgen's canonical layout (comments kept)",
		Long: `fmt puts spec files in kgen's canonical layout: the top-level keys in the
order ` + strings.Join(spec.Layout(), ", ") + `,
one space before a trailing comment, one newline at the end. Comments stay
with what they annotate, the file's heading comment (a modeline) stays on
top, and values are kept as written, so fmt never changes what a spec means.

Without file arguments it formats every spec of kgen.yaml. By default it
prints the formatted files; -d prints a unified diff instead, -l the names
of files whose layout differs, -w rewrites them in place (atomically).
--exit-code exits 1 when any file's layout differs (for CI: kgen fmt -d
--exit-code). --format json prints one object (ok, diagnostics, the files
whose layout differs, or that -w rewrote) instead of the files; github
annotates each such file and each diagnostic.`,
		RunE: func(_ *cobra.Command, args []string) error {
			if err := o.checkFormat(); err != nil {
				return err
			}
			return o.fmtSpecs(args, f)
		},
	}
	formatFlag(cmd, o)
	cmd.Flags().BoolVarP(&f.diff, "diff", "d", false, "print a unified diff of the changes instead of the formatted files")
	cmd.Flags().BoolVarP(&f.write, "write", "w", false, "rewrite the files in place")
	cmd.Flags().BoolVarP(&f.list, "list", "l", false, "list the files whose layout differs")
	cmd.Flags().BoolVar(&f.exitCode, "exit-code", false, "exit 1 when any file's layout differs")
	return cmd
}

// fmtSpecs formats the named files, else every spec of the config. Every
// file is formatted before any is written: a spec that is not YAML stops
// the run with its positioned errors, and nothing is written.
func (o *options) fmtSpecs(args []string, f fmtFlags) error {
	files, root, err := o.fmtFiles(args)
	if err != nil {
		return err
	}
	type result struct {
		name, full string
		src, out   []byte
	}
	var results []result
	var diags diag.List
	for _, name := range files {
		full := filepath.FromSlash(name)
		if !filepath.IsAbs(full) {
			full = filepath.Join(root, full)
		}
		src, err := yamlnode.ReadFile(full)
		if err != nil {
			return err
		}
		out, err := spec.Format(filepath.ToSlash(name), src)
		if de, ok := diag.AsError(err); ok {
			for _, d := range de.Diagnostics {
				diags.Addf(d.Pos, "%s", d.Msg)
			}
			continue
		} else if err != nil {
			return err
		}
		results = append(results, result{name, full, src, out})
	}
	if err := diags.Err(); err != nil {
		return o.reportErr(err)
	}
	changed := 0
	var names []string
	for _, r := range results {
		differs := !bytes.Equal(r.src, r.out)
		if differs {
			changed++
			names = append(names, r.name)
		}
		switch {
		case o.format == "json" || o.format == "github":
			if o.format == "github" && differs && !f.write {
				fmt.Fprintf(o.stdout, "::warning file=%s,title=%s::%s\n", ghProperty.Replace(r.name), ghProperty.Replace("kgen fmt"),
					ghData.Replace("not in kgen's canonical layout; run kgen fmt -w"))
			}
		case f.diff && differs:
			d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(string(r.src)), B: difflib.SplitLines(string(r.out)),
				FromFile: "a/" + r.name, ToFile: "b/" + r.name, Context: 3})
			fmt.Fprint(o.stdout, d)
		case f.list && differs:
			fmt.Fprintln(o.stdout, r.name)
		case !f.diff && !f.list && !f.write:
			o.stdout.Write(r.out)
		}
		if f.write && differs {
			if err := writeInPlace(r.name, r.full, r.out); err != nil {
				return err
			}
		}
	}
	if o.format == "json" {
		verb := "differ"
		if f.write {
			verb = "rewritten"
		}
		if err := o.printJSON(jsonResult{OK: !(f.exitCode && changed > 0), Changed: names,
			Summary: fmt.Sprintf("kgen fmt: %d file(s), %d %s", len(results), changed, verb)}); err != nil {
			return err
		}
	}
	if f.exitCode && changed > 0 {
		return failed
	}
	return nil
}

// fmtFiles is the files to format and the folder their names are relative
// to: the arguments (relative to the working folder), else the config's
// specs.
func (o *options) fmtFiles(args []string) ([]string, string, error) {
	if len(args) > 0 {
		return args, ".", nil
	}
	cfg, err := o.loadConfig()
	if err != nil {
		return nil, "", o.reportErr(err)
	}
	files, err := spec.Files(cfg.Dir, cfg.Specs)
	if err != nil {
		return nil, "", fmt.Errorf("%s: cannot read the specs folder: %w", cfg.Specs, err)
	}
	return files, cfg.Dir, nil
}

// writeInPlace replaces the contents of the spec at full (name as the user
// wrote it), atomically, without replacing the user's file with another
// kind: a symlink is written through (its target gets the new bytes, the
// link stays a link; renaming over the link would turn it into a regular
// file and cut it off from its target), and the target's permission bits
// are kept. The temp file lives beside the target, so the rename never
// crosses a file system.
func writeInPlace(name, full string, data []byte) error {
	target, err := filepath.EvalSymlinks(full)
	if err != nil {
		return fmt.Errorf("%s: cannot resolve the file to rewrite: %w", name, err)
	}
	st, err := os.Stat(target)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file: fmt -w rewrites only regular files (or symlinks to one)", name)
	}
	err = renameio.WriteFile(target, data, st.Mode().Perm(), renameio.WithTempDir(filepath.Dir(target)),
		renameio.WithStaticPermissions(st.Mode().Perm()))
	if err != nil {
		return rewriteErr(name, err)
	}
	return nil
}

// rewriteErr says why fmt -w could not replace spec name, naming the folder
// as the user wrote it: the error itself names renameio's temp file by
// its absolute path, which the user never asked for.
func rewriteErr(name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: cannot rewrite: fmt -w writes a temporary file in %s, then renames it over the spec: %v", name, filepath.Dir(name), pe.Err)
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return fmt.Errorf("%s: cannot rewrite: renaming the temporary file over the spec failed: %v", name, le.Err)
	}
	return fmt.Errorf("%s: cannot rewrite: %w", name, err)
}
