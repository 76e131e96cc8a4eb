package verify

import (
	"context"
	"fmt"
	"sync"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// parity runs every kernel × dtype on the CPU harness against the float64
// evaluation of its formulas, where a C++ compiler exists.
func (r *Report) parity(ctx context.Context, cfg *config.Config, res *generate.Result, mode string) error {
	if mode == "off" {
		r.Notes = append(r.Notes, "parity off")
		return nil
	}
	if _, err := mslcpu.Compiler(); err != nil {
		if mode == "on" {
			return fmt.Errorf("parity: %w", err)
		}
		r.Notes = append(r.Notes, "parity skipped: no C++ compiler (install clang-19)")
		return nil
	}
	r.Checks = append(r.Checks, "parity")
	sources := map[string][]byte{}
	for _, f := range res.Files {
		sources[f.Path] = f.Data
	}
	findings := make([][]Finding, len(res.Kernels))
	errs := make([]error, len(res.Kernels))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, k := range res.Kernels {
		wg.Add(1)
		go func(i int, k *ir.Kernel) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			findings[i], errs[i] = parityOf(ctx, k, sources[generate.MSLPath(cfg, k)])
		}(i, k)
	}
	wg.Wait()
	for i := range res.Kernels {
		r.Findings = append(r.Findings, findings[i]...)
		if errs[i] != nil {
			pos := diag.Pos{Path: generate.MSLPath(cfg, res.Kernels[i]), Line: 1, Col: 1}
			r.Findings = append(r.Findings, Finding{Check: "parity", Pos: pos, Msg: errs[i].Error()})
		}
	}
	return nil
}

func parityOf(ctx context.Context, k *ir.Kernel, src []byte) ([]Finding, error) {
	results, err := parity.Check(ctx, k, src, parity.Options{Seed: 1})
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, res := range results {
		if res.Failed == 0 {
			continue
		}
		out = append(out, Finding{
			Check: "parity", Pos: diag.Pos{Path: k.SpecPath, Line: 1, Col: 1},
			Msg: fmt.Sprintf("%s: %d of %d elements out of tolerance at n=%d; first: %s", res.HostName, res.Failed, res.Checked, res.N, res.First),
		})
	}
	return out, nil
}
