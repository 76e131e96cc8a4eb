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
	"golang.org/x/mod/modfile"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/internal/gocheck"
	"github.com/kgen-dev/kgen/spec"
)

func schemaCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema (draft-07) of spec files, for editors",
		Long: `schema prints the JSON Schema of kernel spec files; it needs no kgen.yaml.
Save it next to kgen.yaml and point your editor at it with a
yaml-language-server modeline in each spec, a path relative to the spec
file (kgen init writes both):
  kgen schema > kgen.schema.json
  # yaml-language-server: $schema=../kgen.schema.json   (in specs/*.yaml)`,
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
verify:
  parity: required    # verify fails where it cannot run the numerical parity (no clang): never green by accident
`

// initSpec's modeline points at the schema kgen init writes next to
// kgen.yaml; yaml-language-server resolves it from the spec's folder.
const initSpec = `# yaml-language-server: $schema=../kgen.schema.json
# An example kernel spec: GELU with the tanh approximation, computed in f32.
# kgen.schema.json is "kgen schema" (regenerate it after upgrading kgen).
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
	force := false
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Scaffold kgen.yaml, an example spec, its JSON Schema and the go:generate line in the working folder",
		Long: `init writes, in the working folder:
  kgen.yaml             the configuration
  specs/gelu_tanh.yaml  an example spec, with a yaml-language-server modeline
  kgen.schema.json      the JSON Schema of specs (kgen schema), for the modeline
  kgen_generate.go      the line //go:generate go tool kgen gen where the module's
                        go.mod has kgen as a tool (go get -tool), else kgen gen
It refuses, writing nothing, when any of them exists; --force overwrites
them (and only them).`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			wd, err := os.Getwd()
			if err != nil {
				return err
			}
			return o.scaffold(wd, force)
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite the files init writes when they exist")
	return cmd
}

// scaffold writes the starter files, refusing (before writing any) if one
// exists, unless force.
func (o *options) scaffold(dir string, force bool) error {
	files := []struct{ name, data string }{
		{config.FileName, initConfig},
		{filepath.Join("specs", "gelu_tanh.yaml"), initSpec},
		{"kgen.schema.json", string(spec.Schema)},
	}
	run, next := generateLine(dir)
	files = append(files, struct{ name, data string }{"kgen_generate.go", fmt.Sprintf("package %s\n\n//go:generate %s\n", packageName(dir), run)})
	var exists []string
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(dir, f.name)); err == nil {
			exists = append(exists, filepath.ToSlash(f.name))
		}
	}
	if len(exists) > 0 && !force {
		return fmt.Errorf("kgen init: refusing to overwrite %s (--force overwrites them); nothing written", strings.Join(exists, ", "))
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
	fmt.Fprintln(o.stdout, "next: "+next)
	return nil
}

// kgenTool is the package a go.mod tool directive names to run kgen.
const kgenTool = "github.com/kgen-dev/kgen/cmd/kgen"

// generateLine is the go:generate command for dir's module, and what to
// do next: `go tool kgen gen` where the module's go.mod has kgen as a tool
// (it runs the version go.mod pins), else `kgen gen`, the kgen on PATH
// (installed with go install), which would otherwise fail with `go: no
// such tool "kgen"`.
func generateLine(dir string) (run, next string) {
	if root := gocheck.ModuleRoot(dir); root != "" {
		mod := filepath.Join(root, "go.mod")
		data, err := os.ReadFile(mod)
		if f, perr := modfile.Parse(mod, data, nil); err == nil && perr == nil {
			for _, t := range f.Tool {
				if t.Path == kgenTool {
					return "go tool kgen gen", "go generate ./..."
				}
			}
		}
		return "kgen gen", "go generate ./... (runs the kgen on your PATH; to pin kgen in this module instead: go get -tool " +
			kgenTool + ", and make the line //go:generate go tool kgen gen)"
	}
	return "kgen gen", "go mod init <module path>, then go generate ./... (runs the kgen on your PATH); " +
		"the generated Go package needs a module (go.mod) to build"
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
