package cli

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/spec"
)

func schemaCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema (draft-07) of spec files, for editors",
		Long: `schema prints the JSON Schema of kernel spec files. Save it and point your
editor at it, e.g. with the yaml-language-server modeline
  # yaml-language-server: $schema=./kgen.schema.json`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := o.stdout.Write(spec.Schema)
			return err
		},
	}
}

const initConfig = `# kgen configuration: https://github.com/kgen-dev/kgen
version: 1
specs: specs          # folder searched recursively for *.yaml kernel specs
out:
  msl: gen/msl        # one .metal file per kernel
  go: gen/kernels     # the Go package with dispatch code and dtype keys
go:
  package: kernels
`

const initSpec = `# An example kernel spec: GELU with the tanh approximation, computed in f32.
# Run "kgen schema" for the JSON Schema of this file.
kernel: gelu_tanh
doc: GELU, tanh approximation, evaluated in f32.
dtypes: [f32, f16, bf16]
compute: f32
inputs: [x]
constants:
  k0: 0.7978845608028654
let:
  - inner: k0 * (x + 0.044715 * x * x * x)
outputs:
  - y: 0.5 * x * (1 + tanh(inner))
threadgroup: 256
ports:
  metal: generated
  cuda: null
  rocm: null
`

func initCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "init",
		Short: "Scaffold kgen.yaml, an example spec and the go:generate line in the working folder",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			wd, err := os.Getwd()
			if err != nil {
				return err
			}
			return o.scaffold(wd)
		},
	}
}

// scaffold writes the starter files, refusing (before writing any) if one exists.
func (o *options) scaffold(dir string) error {
	files := []struct{ name, data string }{
		{config.FileName, initConfig},
		{filepath.Join("specs", "gelu_tanh.yaml"), initSpec},
		{"kgen_generate.go", fmt.Sprintf("package %s\n\n//go:generate go tool kgen gen\n", packageName(dir))},
	}
	var exists []string
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(dir, f.name)); err == nil {
			exists = append(exists, f.name)
		}
	}
	if len(exists) > 0 {
		return fmt.Errorf("kgen init: refusing to overwrite %s; nothing written", strings.Join(exists, ", "))
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(f.data), 0o644); err != nil {
			return err
		}
		fmt.Fprintln(o.stdout, "wrote", filepath.ToSlash(f.name))
	}
	fmt.Fprintln(o.stdout, "next: go get -tool github.com/kgen-dev/kgen/cmd/kgen && go generate ./...")
	return nil
}

var packageRE = regexp.MustCompile(`^package\s+([A-Za-z_][A-Za-z0-9_]*)`)

// packageName is the package of the Go files already in dir, else a name
// made from the folder's.
func packageName(dir string) string {
	matches, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, m := range matches {
		if strings.HasSuffix(m, "_test.go") {
			continue
		}
		if name, err := readPackage(m); err == nil {
			return name
		}
	}
	base := strings.ToLower(filepath.Base(dir))
	base = regexp.MustCompile(`[^a-z0-9_]`).ReplaceAllString(base, "")
	if base == "" || base[0] >= '0' && base[0] <= '9' {
		return "main"
	}
	return base
}

func readPackage(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := packageRE.FindStringSubmatch(strings.TrimSpace(sc.Text())); m != nil {
			return m[1], nil
		}
	}
	return "", errors.New("no package clause")
}
