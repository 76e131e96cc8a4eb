// Package cost is the cost view of kgen's Metal kernels: what each kernel ×
// dtype does at one fixed, small shape per kind — device bytes by access
// width, threadgroup bytes, barriers, simd and simdgroup-matrix operations
// — counted by the CPU harness (mslcpu.RunCost), with a roofline estimate
// for Apple GPU classes (roofline.go) and a recorded baseline that CI holds
// the counts to (gate.go).
//
// Counting instead of timing: no Apple GPU is reachable in CI, and counts
// are exact and the same on every run, so a change that makes a kernel
// move more bytes or synchronise more often shows up as a number in a test
// failure rather than as noise in a benchmark.
package cost

import (
	"context"
	"fmt"
	"sync"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// The fixed shapes of the cost view and the gate, one per kind: small, so
// that counting every built-in stays within seconds, and large enough that
// every kernel runs several threadgroups and full simdgroups.
var (
	ElemSize    = 4096
	RowShape    = [2]int{4, 1024} // rows, cols
	MatmulShape = parity.MatmulShape{M: 64, N: 64, K: 64}
	ChainShape  = parity.ChainShape{M: 16, N: 64, K: 64, P: 64}
	// ChainVecShape is the gate's second chain shape: one query row, which
	// the Metal chain runs in its row-vector form (ir.VecRows), so the gate
	// holds both forms (ChainShape takes the tiled one).
	ChainVecShape = parity.ChainShape{M: 1, N: 64, K: 64, P: 64}
)

// MeasureGate is MeasureAll plus every chain kernel at ChainVecShape,
// recorded under "<host name>@m=1": the reports the gate holds.
func MeasureGate(ctx context.Context, kernels []*ir.Kernel, sources map[string][]byte) ([]*Report, error) {
	reports, err := MeasureAll(ctx, kernels, sources)
	if err != nil {
		return nil, err
	}
	s := ChainVecShape
	shape := fmt.Sprintf("m=%d n=%d k=%d p=%d", s.M, s.N, s.K, s.P)
	for _, k := range kernels {
		if k.Kind != ir.KindMatmul || k.Matmul().Chain == nil {
			continue
		}
		reps, err := MeasureAt(ctx, k, sources[k.Name], func(o *parity.Options) { o.Chain = []parity.ChainShape{s} }, shape)
		if err != nil {
			return nil, err
		}
		for _, r := range reps {
			r.HostName += fmt.Sprintf("@m=%d", s.M)
		}
		reports = append(reports, reps...)
	}
	return reports, nil
}

// Report is one kernel × dtype at its cost shape.
type Report struct {
	Kernel   string
	HostName string
	DType    string
	Shape    string // "n=4096", "rows=4 cols=1024", "m=64 n=64 k=64"
	// Outputs is the elements of the (first) output: the unit of the
	// per-element figures.
	Outputs int
	Cost    mslcpu.Cost
	// Failed is the parity check's verdict at this shape: counts of a
	// kernel that computes the wrong thing are not worth comparing.
	Failed int
}

// PerOutput divides a count by the output elements.
func (r *Report) PerOutput(n uint64) float64 {
	if r.Outputs == 0 {
		return 0
	}
	return float64(n) / float64(r.Outputs)
}

// Options returns the parity options that run kernel k at its cost shape
// through run.
func Options(run func(ctx context.Context, l mslcpu.Launch) ([][]byte, error)) parity.Options {
	return parity.Options{
		Seed: 1, Plain: true, // typical values: no special-value branches
		Sizes: []int{ElemSize}, Rows: []int{RowShape[0]}, Cols: []int{RowShape[1]},
		Matmul: []parity.MatmulShape{MatmulShape}, Chain: []parity.ChainShape{ChainShape},
		Orders: []mslcpu.LaneOrder{mslcpu.Forward},
		Run:    run,
	}
}

// ShapeOf names kernel k's cost shape.
func ShapeOf(k *ir.Kernel) string {
	switch {
	case k.Kind == ir.Elementwise:
		return fmt.Sprintf("n=%d", ElemSize)
	case k.Kind == ir.KindMatmul && k.Matmul().Chain != nil:
		s := ChainShape
		return fmt.Sprintf("m=%d n=%d k=%d p=%d", s.M, s.N, s.K, s.P)
	case k.Kind == ir.KindMatmul:
		s := MatmulShape
		return fmt.Sprintf("m=%d n=%d k=%d", s.M, s.N, s.K)
	default:
		return fmt.Sprintf("rows=%d cols=%d", RowShape[0], RowShape[1])
	}
}

// Measure runs every variant of kernel k (MSL source src) at its cost
// shape in a cost build and returns one report per variant; the launches
// of a kernel that runs as several (a split) are added up.
func Measure(ctx context.Context, k *ir.Kernel, src []byte) ([]*Report, error) {
	return MeasureAt(ctx, k, src, nil, ShapeOf(k))
}

// MeasureAt is Measure with the cost shape's options changed by at (nil:
// none), named shape in the reports.
func MeasureAt(ctx context.Context, k *ir.Kernel, src []byte, at func(*parity.Options), shape string) ([]*Report, error) {
	var mu sync.Mutex
	costs := map[string]*mslcpu.Cost{}
	variantOf := map[string]string{} // a phase's host name → its kernel variant's
	for _, p := range k.Phases() {
		for i, v := range p.Variants {
			variantOf[v.HostName] = k.Variants[i].HostName
		}
	}
	run := func(ctx context.Context, l mslcpu.Launch) ([][]byte, error) {
		bufs, c, err := mslcpu.RunCost(ctx, l)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		host := l.HostName
		if v, ok := variantOf[host]; ok {
			host = v
		}
		if costs[host] == nil {
			costs[host] = &mslcpu.Cost{}
		}
		costs[host].Add(c)
		return bufs, nil
	}
	opts := Options(run)
	if at != nil {
		at(&opts)
	}
	results, err := parity.Check(ctx, k, src, opts)
	if err != nil {
		return nil, err
	}
	var out []*Report
	for _, res := range results {
		c := costs[res.HostName]
		if c == nil {
			return nil, fmt.Errorf("cost: %s: no launch was counted", res.HostName)
		}
		out = append(out, &Report{Kernel: k.Name, HostName: res.HostName, DType: res.DType.String(),
			Shape: shape, Outputs: res.N, Cost: *c, Failed: res.Failed})
	}
	return out, nil
}

// Workers bounds the kernels measured at once: CI machines have two cores.
const Workers = 2

// MeasureAll measures every kernel (sources by kernel name) and returns the
// reports in kernel order.
func MeasureAll(ctx context.Context, kernels []*ir.Kernel, sources map[string][]byte) ([]*Report, error) {
	outs := make([][]*Report, len(kernels))
	errs := make([]error, len(kernels))
	var wg sync.WaitGroup
	sem := make(chan struct{}, Workers)
	for i, k := range kernels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			src := sources[k.Name]
			if src == nil {
				errs[i] = fmt.Errorf("cost: kernel %s: no Metal source", k.Name)
				return
			}
			outs[i], errs[i] = Measure(ctx, k, src)
		}()
	}
	wg.Wait()
	var all []*Report
	for i := range kernels {
		if errs[i] != nil {
			return nil, errs[i]
		}
		all = append(all, outs[i]...)
	}
	return all, nil
}
