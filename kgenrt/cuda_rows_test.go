package kgenrt

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/kgen-dev/kgen/launch"
)

// TestCUDALaunchEvaluatesTheDescriptor checks that the CUDA port takes its
// geometry from the descriptor's launch: the derived field is written into
// the args it passes, and the blocks follow the grid.
func TestCUDALaunchEvaluatesTheDescriptor(t *testing.T) {
	tg := launch.N(256)
	per := launch.Over(launch.N(32), launch.V(launch.ElemBytes))
	rpg := launch.V("rows_per_group")
	k := &Kernel{Name: "norm", Bindings: []Binding{
		{Index: 0, Name: "args", Role: Args, Fields: []Field{
			{Name: "rows", Type: U32, Offset: 0, Size: true},
			{Name: "cols", Type: U32, Offset: 4, Size: true},
			{Name: "rows_per_group", Type: U32, Offset: 8, Size: true}}},
	}}
	k.Launch[CUDA] = launch.Launch{
		Grid:        [3]*launch.Expr{launch.Times(tg, launch.Ceil(launch.V("rows"), rpg)), launch.N(1), launch.N(1)},
		Threadgroup: [3]int{256, 1, 1},
		Derived:     []launch.Derived{{Field: "rows_per_group", Rule: launch.Over(tg, launch.TeamLanes(launch.V("cols"), tg, per))}},
	}
	for _, c := range []struct{ rows, cols, lanes int }{{100, 128, 32}, {100, 513, 64}, {3, 4096, 256}} {
		args := make([]byte, 12)
		binary.LittleEndian.PutUint32(args[0:], uint32(c.rows))
		binary.LittleEndian.PutUint32(args[4:], uint32(c.cols))
		call := &Call{Kernel: k, Variant: &Variant{DType: F16}, Args: args}
		g := newCUDAGeom(k)
		var buf launchBuf
		blocks, err := g.prepare(call, nil, &buf)
		if err != nil {
			t.Fatal(err)
		}
		out := unsafe.Slice((*byte)(buf.params[0]), len(args))
		threads := g.threads
		rows := 256 / c.lanes
		if got := binary.LittleEndian.Uint32(out[8:]); int(got) != rows || threads != 256 || int(blocks) != CeilDiv(c.rows, rows) {
			t.Errorf("rows %d cols %d: rows_per_group %d, %d blocks of %d; want %d, %d of 256", c.rows, c.cols, got, blocks, threads, rows, CeilDiv(c.rows, rows))
		}
	}
}
