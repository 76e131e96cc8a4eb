package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/kgen-dev/kgen/internal/lsp"
)

func lspCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "lsp",
		Short: "Run the language server for spec files over stdio",
		Long: `lsp runs kgen's language server on stdin and stdout, for an editor to
start: diagnostics as you type (the positioned errors gen gives, from the
unsaved buffer), hover (a formula name's kind, dtype, shape and
declaration; a function's signature and error rule; the kernel's buffers,
args struct and launch), completion (functions, names in scope, spec keys
and values), go to definition and formatting (kgen fmt's layout).

Each spec finds its kgen.yaml by walking up from its folder, as the other
commands do from the working folder (--config names one for every spec);
only files in the config's specs folder are specs, and a YAML file outside
any config is one when it has a top-level kernel key: it gets every
spec-level check. The README shows the VS Code and Neovim set-up.`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			if o.configPath != "" {
				if _, err := o.loadConfig(); err != nil {
					return o.reportErr(err)
				}
			}
			return lsp.Serve(os.Stdin, o.stdout, lsp.Options{Log: o.stderr, Config: o.configPath})
		},
	}
}
