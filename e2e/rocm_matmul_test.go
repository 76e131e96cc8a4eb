package e2e

import (
	"errors"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// TestROCmMatmulPorts: the matmuls with rocm: generated have their ROCm
// port in the table, launched on the descriptor's ROCm grid (one block of
// 256 threads per 64×64 tile, the IR's HIP GEMM plan); no machine here can
// run it (no libamdhip64), so Run refuses with the port's reason.
func TestROCmMatmulPorts(t *testing.T) {
	x, _ := kgenrt.New(kgenrt.F32, 3, 5)
	w, _ := kgenrt.New(kgenrt.F32, 5, 7)
	y, _ := kgenrt.New(kgenrt.F32, 3, 7)
	err := kernels.Matmul.Run(kgenrt.ROCm, x, w, y)
	var pe *kgenrt.PortError
	if err == nil || !errors.As(err, &pe) || pe.Unavailable == nil || pe.Backend != kgenrt.ROCm ||
		!strings.Contains(err.Error(), "its rocm port cannot run here") {
		t.Errorf("matmul on ROCm: %v; want its port, unavailable here", err)
	}
	l := kernels.Matmul.Describe().Launch[kgenrt.ROCm]
	if l.Threadgroup != [3]int{256, 1, 1} || l.Grid[0] == nil {
		t.Fatalf("matmul's ROCm launch %+v; want blocks of 256", l)
	}
	env := func(n string) (int, bool) {
		v, ok := map[string]int{"m": 65, "n": 129, "k": 5, "elem_bytes": 4}[n]
		return v, ok
	}
	if g, err := l.Grid[0].Eval(env); err != nil || g != 2*3*256 {
		t.Errorf("matmul's ROCm grid at m 65, n 129: %d threads (%v); want 2·3 blocks of 256", g, err)
	}
	// The attention chains launch alike: a block per 64 query rows, the
	// batch along z.
	al := kernels.AttentionPrefill.Describe().Launch[kgenrt.ROCm]
	if al.Threadgroup != [3]int{256, 1, 1} || al.Grid[2] == nil {
		t.Errorf("attention_prefill's ROCm launch %+v; want blocks of 256 and the batch along z", al)
	}
}
