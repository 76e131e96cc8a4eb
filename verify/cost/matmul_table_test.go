package cost

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// TestMatmulTable counts kgen's plain matmul at the shapes of
// docs/metal-cost.md's matmul side-by-side (m = 1, 16, 128 with
// n = k = 128, every dtype) and logs the table. Opt-in: KGEN_MATMUL_TABLE=1
// (or a comma-separated list of m, e.g. 1,16,128,4096 with
// KGEN_MATMUL_NK=4096): the larger shapes take minutes in the harness.
func TestMatmulTable(t *testing.T) {
	env := os.Getenv("KGEN_MATMUL_TABLE")
	if env == "" {
		t.Skip("KGEN_MATMUL_TABLE is not set: the table is docs/metal-cost.md's, counted on demand")
	}
	needCompiler(t)
	ms := []int{1, 16, 128}
	if env != "1" {
		ms = nil
		for _, f := range strings.Split(env, ",") {
			m, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			ms = append(ms, m)
		}
	}
	nk := 128
	if s := os.Getenv("KGEN_MATMUL_NK"); s != "" {
		nk, _ = strconv.Atoi(s)
	}
	name := os.Getenv("KGEN_MATMUL_KERNEL")
	if name == "" {
		name = "matmul"
	}
	kernels, src := builtins(t)
	var b strings.Builder
	b.WriteString("\n| kernel | shape | device B/out | widest | threadgroup B/out | barriers/out | mma/out |\n|---|---|---|---|---|---|---|\n")
	for _, k := range kernels {
		if k.Name != name {
			continue
		}
		for _, m := range ms {
			shape := fmt.Sprintf("m=%d n=%d k=%d", m, nk, nk)
			reps, err := MeasureAt(context.Background(), k, src[k.Name], func(o *parity.Options) {
				o.Matmul = []parity.MatmulShape{{M: m, N: nk, K: nk}}
			}, shape)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range reps {
				if r.Failed > 0 {
					t.Errorf("%s at %s: parity fails", r.HostName, shape)
				}
				s := sideOf("matmul", "kgen", r.HostName, shape, r.Outputs, &r.Cost)
				fmt.Fprintf(&b, "| %s | %s | %.2f | %s | %.2f | %.4f | %.3f |\n", r.HostName, shape, s.dev, s.widest, s.tg, s.barriers,
					r.PerOutput(r.Cost.Simd[mslcpu.MatrixMMA].Ops))
			}
		}
	}
	t.Log(b.String())
}
