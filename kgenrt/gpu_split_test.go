package kgenrt

import (
	"slices"
	"testing"

	"github.com/kgen-dev/kgen/launch"
)

// ssumKernel is a kernel with PortSplit as kgen lays out a batched chain's
// flash decoding, shrunk to a sum: y[z] = Σ_j x[z, j] over b batch
// elements along the grid's z, its own entry point one block per element;
// on CUDA, when the derived splits = ceildiv(n, 4) is above 1, a part
// phase sums split s's 4 values into an f32 workspace [b · splits] (blocks
// along x, the batch along z) and a fold phase adds each element's splits.
func ssumKernel() (*Kernel, []fakeFn) {
	args := Binding{Name: "args", Role: Args, Fields: []Field{
		{Name: "b", Type: U32, Offset: 0, Size: true},
		{Name: "n", Type: U32, Offset: 4, Size: true},
		{Name: "splits", Type: U32, Offset: 8, Size: true},
		{Name: "rows", Type: U32, Offset: 12, Size: true}}}
	batched := func(x *launch.Expr, derived ...launch.Derived) launch.Launch {
		return launch.Launch{Grid: [3]*launch.Expr{x, launch.N(1), launch.V("b")}, Threadgroup: [3]int{32, 1, 1}, Derived: derived}
	}
	splits := []launch.Derived{{Field: "splits", Rule: launch.Ceil(launch.V("n"), launch.N(4))},
		{Field: "rows", Rule: launch.Times(launch.V("b"), launch.V("splits"))}}
	x := Binding{Index: 0, Name: "x", Role: Input, DType: T, Shape: []string{"b", "n"}}
	y := Binding{Index: 1, Name: "y", Role: Output, DType: T, Shape: []string{"b"}}
	k := &Kernel{Name: "ssum", Kind: "matmul", Math: "precise", ElemsPerThread: 1,
		Variants:  []Variant{{DType: F32, HostName: "ssum_f32"}},
		Bindings:  []Binding{x, y, withIndex(args, 2)},
		PortSplit: &PortSplit{Backend: CUDA, Field: "splits", Above: 1},
	}
	part := &Kernel{Name: "ssum_part", Variants: []Variant{{DType: F32, HostName: "ssum_part_f32"}}, Bindings: []Binding{
		x, {Index: 1, Name: "ws", Role: Output, DType: F32, Shape: []string{"rows"}}, withIndex(args, 2)}}
	fold := &Kernel{Name: "ssum_fold", Variants: []Variant{{DType: F32, HostName: "ssum_fold_f32"}}, Bindings: []Binding{
		{Index: 0, Name: "ws", Role: Input, DType: F32, Shape: []string{"rows"}}, y, withIndex(args, 2)}}
	for _, b := range []Backend{CUDA, ROCm} {
		k.Launch[b] = batched(launch.N(32), splits...)
		part.Launch[b] = batched(launch.Times(launch.V("splits"), launch.N(32)))
		fold.Launch[b] = batched(launch.N(32))
	}
	k.Phases = []*Kernel{part, fold}
	fns := []fakeFn{
		{name: "ssum_f32", ptrs: 2, nargs: 16, run: func(g *fakeGPU, _, _, z uint32, p []DevicePtr, a []byte) {
			bs, n := u32(a, 0), u32(a, 4)
			xs, ys := g.f32s(p[0], bs*n), g.f32s(p[1], bs)
			for e := range int(z) {
				ys[e] = 0
				for j := range n {
					ys[e] += xs[e*n+j]
				}
			}
		}},
		{name: "ssum_part_f32", ptrs: 2, nargs: 16, run: func(g *fakeGPU, blocks, _, z uint32, p []DevicePtr, a []byte) {
			bs, n, sp := u32(a, 0), u32(a, 4), u32(a, 8)
			xs, ws := g.f32s(p[0], bs*n), g.f32s(p[1], bs*sp)
			for e := range int(z) {
				for s := range int(blocks) {
					ws[e*sp+s] = 0
					for j := s * 4; j < min(n, s*4+4); j++ {
						ws[e*sp+s] += xs[e*n+j]
					}
				}
			}
		}},
		{name: "ssum_fold_f32", ptrs: 2, nargs: 16, run: func(g *fakeGPU, _, _, z uint32, p []DevicePtr, a []byte) {
			bs, sp := u32(a, 0), u32(a, 8)
			ws, ys := g.f32s(p[0], bs*sp), g.f32s(p[1], bs)
			for e := range int(z) {
				ys[e] = 0
				for s := range sp {
					ys[e] += ws[e*sp+s]
				}
			}
		}},
	}
	return k, fns
}

// TestGPUPortSplit: a PortSplit kernel launches its own entry point while
// the split field is at most its bound, and above it (on its backend
// only) the phases, with the batch along z and the workspace on the
// call's stream; the sums are right either way.
func TestGPUPortSplit(t *testing.T) {
	for _, c := range []struct {
		b    Backend
		n    int
		want []string
	}{
		{CUDA, 3, []string{"launch@0 ssum_f32 1x32x2"}},
		{CUDA, 10, []string{"allocAsync@0 a3 256", "launch@0 ssum_part_f32 3x32x2", "launch@0 ssum_fold_f32 1x32x2", "freeAsync@0 a3"}},
		{ROCm, 10, []string{"launch@0 ssum_f32 1x32x2"}}, // the split is CUDA's
	} {
		k, fns := ssumKernel()
		g := newFakeGPU(c.b, fns...)
		vals := make([]float32, 2*c.n)
		for i := range vals {
			vals[i] = float32(i)
		}
		x, y := f32Tensor(t, vals, 2, c.n), f32Tensor(t, []float32{7, 7}, 2)
		if err := g.port(k).Run(fakeCall(t, k, [3]int{32, 1, 2}, x, y)); err != nil {
			t.Fatal(err)
		}
		var launches []string
		for _, l := range g.log {
			if l[:6] == "launch" || len(l) > 10 && (l[:10] == "allocAsync" || l[:9] == "freeAsync") {
				launches = append(launches, l)
			}
		}
		if !slices.Equal(launches, c.want) {
			t.Errorf("%s n=%d: calls:%s\nwant:%s", c.b, c.n, logText(launches), logText(c.want))
		}
		for e, got := range hostF32(y) {
			w := float32(0)
			for j := range c.n {
				w += vals[e*c.n+j]
			}
			if !near(got, w) {
				t.Errorf("%s n=%d: y[%d] = %v, want %v", c.b, c.n, e, got, w)
			}
		}
		if l := g.leaks(); len(l) > 0 {
			t.Errorf("%s n=%d: device memory not freed: %v", c.b, c.n, l)
		}
	}
}

// TestPortSplitChecked: Validate's check of a PortSplit accepts ssum's and
// refuses a field its launch does not derive, or no phases.
func TestPortSplitChecked(t *testing.T) {
	k, _ := ssumKernel()
	if err := k.checkPortSplit(); err != nil {
		t.Fatal(err)
	}
	k.PortSplit.Field = "n"
	if k.checkPortSplit() == nil {
		t.Error("a split on a given size field passes")
	}
	k, _ = ssumKernel()
	k.Phases = nil
	if k.checkPortSplit() == nil {
		t.Error("a split without phases passes")
	}
}
