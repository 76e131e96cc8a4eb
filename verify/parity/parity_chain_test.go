package parity_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// chains are the built-in matmul chains.
func chains(t *testing.T) ([]*ir.Kernel, map[string][]byte) {
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	var out []*ir.Kernel
	for _, k := range kernels {
		if k.Kind == ir.KindMatmul && k.Matmul().Chain != nil && !k.Batched() { // batched: TestBuiltinBatched
			out = append(out, k)
		}
	}
	if len(out) != 3 {
		t.Fatalf("want the 3 chain built-ins (matmul_softmax_matmul, attention, causal_attention), got %d", len(out))
	}
	return out, src
}

// TestBuiltinChains runs every chain built-in × dtype at DefaultChainShapes
// against the float64 two-pass reference with the streaming bound
// (ir.SoftmaxMatmulRowBound), under the real lane map, then under the
// scrambled one in shuffled lane order at a few shapes.
func TestBuiltinChains(t *testing.T) {
	needCompiler(t)
	kernels, src := chains(t)
	for _, k := range kernels {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			var shapes []parity.ChainShape
			for _, sh := range parity.DefaultChainShapes {
				if sh.N > 0 {
					shapes = append(shapes, sh)
				}
			}
			for _, r := range checkAll(t, k, src[k.Name], parity.Options{Seed: 11, Chain: shapes}) {
				checkConfined(t, r)
			}
			// n = 0: every output is 0/0, NaN in the kernel as in the reference
			// (9 rows: the tiled form; 3: the row-vector form).
			checkAll(t, k, src[k.Name], parity.Options{Seed: 11, Chain: []parity.ChainShape{{9, 0, 8, 9}, {3, 0, 8, 9}}})
			checkAll(t, k, src[k.Name], parity.Options{Seed: 12, Chain: []parity.ChainShape{{9, 33, 7, 33}, {9, 100, 16, 40}, {5, 70, 16, 40}},
				MatrixLanes: mslcpu.ScrambledLanes, Orders: []mslcpu.LaneOrder{mslcpu.Shuffled}})
		})
	}
}

// TestChainMutationsFail: parity fails for a chain kernel that does not
// rescale its output accumulator when the running max rises, that keeps
// the block's max instead of the running max (the next block's rescale
// then disagrees with the scale of the earlier terms), or that skips the
// barrier between the weights and O += W·V.
func TestChainMutationsFail(t *testing.T) {
	needCompiler(t)
	kernels, src := chains(t)
	var k *ir.Kernel
	for _, c := range kernels {
		if c.Name == "matmul_softmax_matmul" {
			k = c
		}
	}
	mutations := []struct{ name, from, to string }{
		{"missing rescale", "kgen_os[kgen_r * PMAX + kgen_e % args.p] *= kgen_fs[kgen_r];", "(void)kgen_r;"},
		{"running max takes the block max", "kgen_m[kgen_q] = kgen_mnew;", "kgen_m[kgen_q] = kgen_mb;"},
		{"missing barrier before the rescale", "        }\n        threadgroup_barrier(mem_flags::mem_threadgroup);\n        for (uint kgen_e = kgen_tid; kgen_e < BM * args.p;",
			"        }\n        for (uint kgen_e = kgen_tid; kgen_e < BM * args.p;"},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			s := string(src[k.Name])
			if strings.Count(s, m.from) != 1 {
				t.Fatalf("the rewrite %q does not apply once", m.from)
			}
			mutated := []byte(strings.Replace(s, m.from, m.to, 1))
			results, err := parity.Check(context.Background(), k, mutated, parity.Options{Seed: 13,
				Chain:  []parity.ChainShape{{9, 100, 16, 40}, {3, 1000, 9, 70}},
				Orders: []mslcpu.LaneOrder{mslcpu.Forward, mslcpu.Reverse, mslcpu.Shuffled}})
			if err != nil {
				t.Logf("the harness refuses it: %v", err)
				return
			}
			for _, r := range parity.Summarize(results) {
				if r.OK() {
					t.Errorf("%s: parity passes a chain with a %s: %s", r.HostName, m.name, r)
				}
			}
		})
	}
}
