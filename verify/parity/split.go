package parity

import (
	"context"
	"fmt"
	"math"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// splits reports whether kernel k launches its split form's phases one by
// one (ir.Kernel.Phases) on backend b at these sizes, as its Go launcher
// decides: on Metal, a row-reducing matmul wider than its threadgroup-memory
// strip, or a batched chain whose grid is too small (flash decoding, on
// CUDA too where its port has the phases: ir.Kernel.CUDASplit, each phase
// at its CUDA launch). The CUDA port runs a matmul's split inside the
// kernel's one call. Column
// reductions have no one-launch form: their two launches run on every
// backend (the CUDA port launches both inside its one call, so a GPU
// runner here meets each entry point by its host name).
func splits(k *ir.Kernel, b ir.Backend, sizes map[string]int) bool {
	if len(k.Phases()) == 0 {
		return false
	}
	cond := k.PhasesWhen()
	return cond.Always() || (b == ir.Metal || b == ir.CUDA && k.CUDASplit()) && cond.Holds(sizes)
}

// runSplit runs a split kernel's phases (ir.Kernel.Phases) in order, as the
// launcher's call chain does: each phase binds the kernel's buffers its
// Phase.From names and the f32 workspaces, NaN-filled so an element the
// first phase leaves unwritten shows in the result. It returns the kernel's
// buffers afterwards, as one launch of the kernel would.
func runSplit(ctx context.Context, run func(context.Context, mslcpu.Launch) ([][]byte, error), k *ir.Kernel, v ir.Variant, b ir.Backend,
	sizes map[string]int, buffers [][]byte, base mslcpu.Launch) ([][]byte, error) {
	out := append([][]byte(nil), buffers...)
	space := make([][]byte, len(k.Workspaces()))
	for w, b := range k.Workspaces() {
		count := 1
		for _, d := range b.Shape {
			count *= sizes[d]
		}
		nan := make([]float64, count)
		for i := range nan {
			nan[i] = math.NaN()
		}
		space[w] = encode(nan, dtype.F32)
	}
	for _, p := range k.Phases() {
		pl := p.LaunchOn(b)
		grid, err := pl.GridSize(sizes)
		if err != nil {
			return nil, fmt.Errorf("parity: %s phase %s: %w", v.HostName, p.Suffix, err)
		}
		l := base
		l.HostName = phaseHost(p, v)
		l.Grid, l.Threadgroup = u32s(grid), u32s(pl.Threadgroup)
		l.Buffers = make([][]byte, len(p.Bindings))
		for j, f := range p.From {
			if f < 0 {
				l.Buffers[j] = space[-1-f]
			} else {
				l.Buffers[j] = out[f]
			}
		}
		got, err := run(ctx, l)
		if err != nil {
			return nil, err
		}
		for j, f := range p.From {
			if f < 0 {
				space[-1-f] = got[j]
			} else {
				out[f] = got[j]
			}
		}
	}
	return out, nil
}

// phaseHost is phase p's host name for variant v's storage dtype.
func phaseHost(p *ir.Phase, v ir.Variant) string {
	for _, pv := range p.Variants {
		if pv.DType == v.DType {
			return pv.HostName
		}
	}
	return ""
}
