package cli

import (
	"context"
	"fmt"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/verify/cost"
)

// verifyCost is `kgen verify --cost`: the cost view of every kernel. Like
// parity, it compiles and runs only the bytes kgen generates in memory,
// never a .metal file read from disk.
func verifyCost(o *options, cfg *config.Config, format string) error {
	if format != "text" && format != "json" {
		return usageError{fmt.Errorf("--cost prints text or json, not %q", format)}
	}
	res, err := generate.Run(cfg)
	if err != nil {
		return o.reportErr(err)
	}
	sources := map[string][]byte{}
	for _, f := range res.Files {
		for _, k := range res.Kernels {
			if f.Path == generate.MSLPath(cfg, k) {
				sources[k.Name] = f.Data
			}
		}
	}
	reports, err := cost.MeasureAll(context.Background(), res.Kernels, sources)
	if err != nil {
		return err
	}
	if format == "json" {
		err = cost.WriteJSON(o.stdout, reports)
	} else {
		err = cost.WriteText(o.stdout, reports)
	}
	if err != nil {
		return err
	}
	for _, r := range reports {
		if r.Failed > 0 {
			return failed // the view marks it; counts of a wrong kernel mean nothing
		}
	}
	return nil
}
