package e2e

import (
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// TestBatchedRowLauncherRefuses: the launcher of a batched rowwise kernel
// checks its views as a batched matmul's does (kgenrt.Kernel.Check): each
// tensor's rank and sizes against batch ++ shape, a weight per head whose
// heads are not h, a broadcast tensor that has a dimension it should not,
// and an output over the paired input (another thread reads each
// element's partner), on the views a decoder binds.
func TestBatchedRowLauncherRefuses(t *testing.T) {
	const b, s, h, d = 2, 3, 4, 8
	act := func() *kgenrt.Tensor {
		x, _ := kgenrt.New(kgenrt.F32, b, s, h, d)
		return transposed(t, x)
	}
	pos, _ := kgenrt.New(kgenrt.I32, b, s)
	posHeads, _ := kgenrt.New(kgenrt.I32, b, h, s)
	posLong, _ := kgenrt.New(kgenrt.I32, b, s+1)
	w, _ := kgenrt.New(kgenrt.F32, h, d)
	w3, _ := kgenrt.New(kgenrt.F32, h-1, d)
	x := act()
	for _, c := range []struct {
		what string
		run  func() error
		want string
	}{
		{"ok", func() error { return kernels.RopeHeads.Reference(x, pos, act(), 10000, 4) }, ""},
		{"pos per head", func() error { return kernels.RopeHeads.Reference(x, posHeads, act(), 10000, 4) }, "rank 3"},
		{"pos of another length", func() error { return kernels.RopeHeads.Reference(x, posLong, act(), 10000, 4) }, "pos"},
		{"y over x", func() error { return kernels.RopeHeads.Reference(x, pos, x, 10000, 4) }, "y"},
		{"a weight per head, 3 heads for 4", func() error { return kernels.QkNormHeads.Reference(x, w3, act(), 1e-6) }, "w"},
		{"in place", func() error { return kernels.QkNormHeads.Reference(x, w, x, 1e-6) }, ""},
	} {
		err := c.run()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.what, err)
		case c.want != "" && err == nil:
			t.Errorf("%s: the launcher takes it", c.what)
		case c.want != "" && !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: %v, want it to name %q", c.what, err, c.want)
		default:
			t.Logf("%s: %v", c.what, err)
		}
	}
}
