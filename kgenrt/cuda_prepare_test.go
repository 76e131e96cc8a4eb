package kgenrt

import (
	"encoding/binary"
	"testing"

	"github.com/kgen-dev/kgen/launch"
)

func benchRowsKernel() *Kernel {
	tg := launch.N(256)
	per := launch.Over(launch.N(32), launch.V(launch.ElemBytes))
	rpg := launch.V("rows_per_group")
	k := &Kernel{Name: "norm", Kind: "rowwise", Bindings: []Binding{
		{Index: 0, Name: "x", Role: Input, DType: T, Shape: []string{"rows", "cols"}},
		{Index: 1, Name: "w", Role: Input, DType: T, Shape: []string{"cols"}},
		{Index: 2, Name: "y", Role: Output, DType: T, Shape: []string{"rows", "cols"}},
		{Index: 3, Name: "args", Role: Args, Fields: []Field{
			{Name: "rows", Type: U32, Offset: 0, Size: true},
			{Name: "cols", Type: U32, Offset: 4, Size: true},
			{Name: "rows_per_group", Type: U32, Offset: 8, Size: true},
			{Name: "eps", Type: F32, Offset: 12}}},
	}, Variants: []Variant{{DType: BF16, HostName: "norm_bf16"}}, ElemsPerThread: 1}
	k.Launch[CUDA] = launch.Launch{
		Grid:        [3]*launch.Expr{launch.Times(tg, launch.Ceil(launch.V("rows"), rpg)), launch.N(1), launch.N(1)},
		Threadgroup: [3]int{256, 1, 1},
		Derived:     []launch.Derived{{Field: "rows_per_group", Rule: launch.Over(tg, launch.TeamLanes(launch.V("cols"), tg, per))}},
	}
	return k
}

func BenchmarkCheckRows(b *testing.B) {
	k := benchRowsKernel()
	x, _ := New(BF16, 64, 1024)
	w, _ := New(BF16, 1024)
	y, _ := New(BF16, 64, 1024)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := k.Check(x, w, y); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckSizesRows(b *testing.B) {
	k := benchRowsKernel()
	x, _ := New(BF16, 64, 1024)
	w, _ := New(BF16, 1024)
	y, _ := New(BF16, 64, 1024)
	b.ReportAllocs()
	var sizes [2]int
	for i := 0; i < b.N; i++ {
		if _, err := k.CheckSizes(sizes[:], x, w, y); err != nil {
			b.Fatal(err)
		}
	}
}

// rowsCall is a checked rowwise call with device pointers standing in for
// the tensors (never dereferenced: nothing here launches).
func rowsCall(tb testing.TB) (*Call, []DevicePtr) {
	k := benchRowsKernel()
	x, _ := New(BF16, 64, 1024)
	w, _ := New(BF16, 1024)
	y, _ := New(BF16, 64, 1024)
	v, sizes, err := k.Check(x, w, y)
	if err != nil {
		tb.Fatal(err)
	}
	args := make([]byte, 16)
	binary.LittleEndian.PutUint32(args[0:], uint32(sizes["rows"]))
	binary.LittleEndian.PutUint32(args[4:], uint32(sizes["cols"]))
	c := &Call{Kernel: k, Variant: v, Tensors: []*Tensor{x, w, y}, Args: args, Grid: [3]int{1, 1, 1}}
	return c, []DevicePtr{1 << 20, 2 << 20, 3 << 20}
}

// prepareHost is the host side of one LaunchCUDA: the call's checks and the
// parameter buffer with the derived fields, without the driver call.
func prepareHost(g *cudaGeom, c *Call, ptrs []DevicePtr) (uint32, error) {
	if err := c.check(c.Kernel); err != nil {
		return 0, err
	}
	if err := checkDevicePtrs(c, ptrs, "LaunchCUDA"); err != nil {
		return 0, err
	}
	buf := getLaunchBuf()
	defer launchBufs.Put(buf)
	return g.prepare(c, ptrs, buf)
}

func BenchmarkCUDAPrepare(b *testing.B) {
	c, ptrs := rowsCall(b)
	g := newCUDAGeom(c.Kernel)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := prepareHost(g, c, ptrs); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCUDAPrepareAllocatesNothing holds the launch path's host side at zero
// allocations (it was 11 per launch), and CheckSizes too.
func TestCUDAPrepareAllocatesNothing(t *testing.T) {
	c, ptrs := rowsCall(t)
	g := newCUDAGeom(c.Kernel)
	var blocks uint32
	if n := testing.AllocsPerRun(100, func() {
		var err error
		if blocks, err = prepareHost(g, c, ptrs); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("LaunchCUDA's preparation allocates %v times per launch", n)
	}
	if blocks != 64/4 { // bf16 1024 columns: 64-lane teams (16 values each), 4 rows per block
		t.Errorf("blocks = %d, want 16", blocks)
	}
	x, w, y := c.Tensors[0], c.Tensors[1], c.Tensors[2]
	var sizes [2]int
	if n := testing.AllocsPerRun(100, func() {
		if _, err := c.Kernel.CheckSizes(sizes[:], x, w, y); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("CheckSizes allocates %v times", n)
	}
	if sizes != [2]int{64, 1024} {
		t.Errorf("CheckSizes gave %v, want rows 64, cols 1024", sizes)
	}
}
