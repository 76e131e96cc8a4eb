package verify

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// ParityReport is the lane-level parity report of one kernel × dtype.
type ParityReport = parity.Report

// parityWorkers bounds the kernels checked at once: CI machines have two
// cores, and each check runs a compiler or a kernel binary.
const parityWorkers = 2

// parity compiles every generated .metal file with Apple's compiler where
// xcrun exists, and, where a C++ compiler exists, checks each in the
// harness's strict mode and runs every kernel × dtype on the CPU against
// the float64 evaluation of its formulas, with one lane-level report per
// variant (Report.Parity).
//
// It compiles and runs the bytes kgen regenerates in memory, never a file
// read from disk, and only for kernels whose .metal the drift check found
// byte-identical on disk: those bytes are then what ships, and nothing
// else is ever compiled as host C++ and executed. A hand-edited .metal is
// arbitrary code (a static initializer calling system() runs at load), so a
// pull request that only touches a generated file must not run it in a CI
// whose gate is `kgen verify`. A kernel whose .metal drifted (missing,
// stale, hand-edited, not kgen's) gets no report, so the summary cannot say
// "parity ok" for it; the drift finding names the file and a note says
// parity skipped it.
func (r *Report) parity(ctx context.Context, cfg *config.Config, res *generate.Result, opts Options) error {
	sources, drifted := r.generatedSources(cfg, res)
	if err := r.metalCompile(ctx, cfg, res, sources); err != nil {
		return err
	}
	mode := opts.Parity
	if mode == "off" {
		r.Notes = append(r.Notes, "parity off")
		return nil
	}
	if _, err := mslcpu.Compiler(); err != nil {
		if mode == "on" {
			return fmt.Errorf("parity is required (verify.parity in kgen.yaml, or --parity on) but cannot run: %w", err)
		}
		r.Notes = append(r.Notes, "parity skipped: no C++ compiler (install clang-19)")
		r.Warnings = append(r.Warnings, "parity skipped: no C++ compiler, so no kernel's numbers were checked; install clang-19, "+
			"and set verify.parity: required in kgen.yaml so that a CI image without one fails instead")
		return nil
	}
	mutation, err := parity.ParseMutation(opts.Mutate)
	if err != nil {
		return err
	}
	r.Checks = append(r.Checks, "strict", "parity")
	if drifted > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%s not compiled or run: drifted on disk", plural(drifted, ".metal file")))
	}
	type outcome struct {
		findings []Finding
		reports  []*ParityReport
		err      error
	}
	outs := make([]outcome, len(res.Kernels))
	got := &samples{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, parityWorkers)
	for i, k := range res.Kernels {
		wg.Add(1)
		go func(i int, k *ir.Kernel) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			src := sources[generate.MSLPath(cfg, k)]
			o := &outs[i]
			if src == nil { // the drift check reports it; the summary counts it
				return
			}
			if err := mslcpu.CheckSyntax(ctx, src); err != nil {
				o.findings = append(o.findings, Finding{Check: "strict", Pos: diag.Pos{Path: generate.MSLPath(cfg, k), Line: 1, Col: 1},
					Msg: "not valid under the strict MSL check: " + err.Error()})
			}
			o.reports, o.err = parityOf(ctx, k, src, mutation, got.add)
		}(i, k)
	}
	wg.Wait()
	for i, k := range res.Kernels {
		o := outs[i]
		r.Findings = append(r.Findings, o.findings...)
		if o.err != nil {
			pos := diag.Pos{Path: generate.MSLPath(cfg, k), Line: 1, Col: 1}
			r.Findings = append(r.Findings, Finding{Check: "parity", Pos: pos, Msg: o.err.Error()})
			continue
		}
		r.Parity = append(r.Parity, o.reports...)
		for _, rep := range o.reports {
			if rep.OK() {
				continue
			}
			msg := "parity " + rep.String()
			if rep.First != "" {
				msg = fmt.Sprintf("parity %s: %d/%d lanes differ beyond tolerance; first: %s", rep.HostName, rep.Differ, rep.Lanes, rep.First)
			}
			r.Findings = append(r.Findings, Finding{Check: "parity", Pos: diag.Pos{Path: k.SpecPath, Line: 1, Col: 1}, Msg: msg})
		}
	}
	if mutation != parity.NoMutation {
		r.Notes = append(r.Notes, fmt.Sprintf("parity mutation %s: every kernel × dtype must fail", mutation))
	}
	r.differential(ctx, cfg, res, got)
	return nil
}

// parityOf checks every variant of one kernel, of any kind.
// Every launch it runs also goes to sample, for the differential check.
func parityOf(ctx context.Context, k *ir.Kernel, src []byte, m parity.Mutation, sample func(*parity.Sample)) ([]*ParityReport, error) {
	results, err := parity.Check(ctx, k, src, parity.Options{Seed: 1, Mutate: m, Sample: sample})
	if err != nil {
		return nil, err
	}
	return parity.Summarize(results), nil
}

// metalCompile compiles every .metal file with Apple's compiler where xcrun
// exists (macOS with Xcode): the real referee for what the CPU harness can
// only approximate.
func (r *Report) metalCompile(ctx context.Context, cfg *config.Config, res *generate.Result, sources map[string][]byte) error {
	xcrun, err := exec.LookPath("xcrun")
	if err != nil {
		return nil
	}
	dir, err := os.MkdirTemp("", "kgen-metal-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	r.Checks = append(r.Checks, "metal")
	for _, k := range res.Kernels {
		p := generate.MSLPath(cfg, k)
		if sources[p] == nil {
			continue // parity reports it
		}
		in := filepath.Join(dir, k.Name+".metal")
		if err := os.WriteFile(in, sources[p], 0o644); err != nil {
			return err
		}
		out, err := exec.CommandContext(ctx, xcrun, "-sdk", "macosx", "metal", "-std=metal3.1", "-c", in, "-o", in+".air").CombinedOutput()
		if err != nil {
			msg := strings.ReplaceAll(strings.TrimSpace(string(out)), in, p)
			r.Findings = append(r.Findings, Finding{Check: "metal", Pos: diag.Pos{Path: p, Line: 1, Col: 1},
				Msg: fmt.Sprintf("xcrun metal -std=metal3.1 rejects it: %v\n%s", err, msg)})
		}
	}
	return nil
}

// generatedSources maps every kernel's .metal path to the bytes kgen
// generates for it, or to nil where the drift check found the file on disk
// different (then nothing of it is compiled or run), and counts those.
func (r *Report) generatedSources(cfg *config.Config, res *generate.Result) (map[string][]byte, int) {
	wanted := map[string][]byte{}
	for _, f := range res.Files {
		wanted[f.Path] = f.Data
	}
	sources := map[string][]byte{}
	skipped := 0
	for _, k := range res.Kernels {
		p := generate.MSLPath(cfg, k)
		if r.drifted[p] {
			sources[p] = nil
			skipped++
			continue
		}
		sources[p] = wanted[p]
	}
	return sources, skipped
}
