package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kgen-dev/kgen/emit/inventory"
)

func listCmd(o *options) *cobra.Command {
	asJSON := false
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Print the kernel inventory (kernels, variants, keys, bindings, dispatch)",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			_, res, err := o.generate()
			if err != nil {
				return err
			}
			inv := inventory.Build(res.Kernels, res.MSL)
			if asJSON {
				enc := json.NewEncoder(o.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(inv)
			}
			return printTable(o, inv)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the inventory as JSON (the format in kgen's contract)")
	return cmd
}

func printTable(o *options, inv inventory.Inventory) error {
	w := tabwriter.NewWriter(o.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "KERNEL\tKIND\tDTYPES\tPORTS\tGRID\tTHREADGROUP\tSPEC")
	for _, k := range inv.Kernels {
		var dtypes, ports []string
		for _, v := range k.Variants {
			dtypes = append(dtypes, v.DType)
		}
		for _, b := range []string{"metal", "cuda", "rocm"} {
			if k.Ports[b] != nil {
				ports = append(ports, b)
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", k.Name, k.Kind, strings.Join(dtypes, ","),
			strings.Join(ports, ","), strings.Join(k.Dispatch.Grid[:], " × "), k.Threadgroup, k.Spec)
	}
	return w.Flush()
}
