package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/kgen-dev/kgen/verify/cost"
	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// checkCost refuses flag combinations the --cost report cannot serve.
func (f *emuFlags) checkCost() error {
	switch {
	case f.format != "text" && f.format != "json":
		return fmt.Errorf("--format must be text or json, not %q", f.format)
	case f.format == "json" && !f.cost:
		return errors.New("--format json is the format of the --cost report: add --cost")
	case f.format == "json" && len(f.prints) > 0:
		return errors.New("--format json prints only the --cost report: write buffers with --out instead of --print")
	case f.cost && f.sanitize != "":
		return errors.New("--cost counts an uninstrumented build: leave out --sanitize")
	}
	return nil
}

// writeCost runs the launch once more in a cost build (mslcpu.RunCost, in
// the first lane order: the counts do not depend on it) and prints the
// counts in f.format.
func writeCost(ctx context.Context, o *options, f *emuFlags, l mslcpu.Launch) error {
	_, c, err := mslcpu.RunCost(ctx, l)
	if err != nil {
		return err
	}
	if f.format == "json" {
		return cost.WriteLaunchJSON(o.stdout, l, c)
	}
	return cost.WriteLaunchText(o.stdout, l, c)
}
