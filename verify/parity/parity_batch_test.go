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

// batched are the built-in batched matmuls (ir.Kernel.Batched).
func batched(t *testing.T) ([]*ir.Kernel, map[string][]byte) {
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	var out []*ir.Kernel
	for _, k := range kernels {
		if k.Batched() {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		t.Fatal("no batched built-in")
	}
	return out, src
}

// batchChainShapes are a few chain shapes for the batched checks, each
// run over every batch element: one block, a block edge and a tail, many
// blocks with a k tail.
var batchChainShapes = []parity.ChainShape{{1, 1, 1, 1}, {7, 33, 8, 9}, {9, 100, 16, 40}}

// TestBuiltinBatched runs every batched built-in × dtype over every batch
// element of strided, gapped views (parity's batched layout: padded rows
// and matrices, A's batch dimensions stored in reverse order, grouped KV
// heads) against the float64 reference per element.
func TestBuiltinBatched(t *testing.T) {
	needCompiler(t)
	kernels, src := batched(t)
	for _, k := range kernels {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			for _, r := range checkAll(t, k, src[k.Name], parity.Options{Seed: 21, Chain: batchChainShapes}) {
				if r.Checked == 0 && r.N > 0 {
					t.Errorf("%s: nothing checked", r.HostName)
				}
			}
			checkAll(t, k, src[k.Name], parity.Options{Seed: 22, Chain: batchChainShapes[2:],
				MatrixLanes: mslcpu.ScrambledLanes, Orders: []mslcpu.LaneOrder{mslcpu.Shuffled}})
		})
	}
}

// TestBatchedMutationsFail: parity fails for a batched kernel that maps a
// query head to the wrong KV head, reads A's rows at the dense row stride
// instead of its own, or stores the output at the dense stride. Each
// rewrite must apply, or the test would pass by mutating nothing.
func TestBatchedMutationsFail(t *testing.T) {
	needCompiler(t)
	kernels, src := batched(t)
	k := kernels[0]
	mutations := []struct{ name, from, to string }{
		{"wrong KV head", "(kgen_b1 / args.group) * args.kgen_kc_s1", "(kgen_b1 % args.group) * args.kgen_kc_s1"},
		{"dense row stride of q", "kgen_r * args.kgen_q_s2", "kgen_r * args.k"},
		{"dense output rows", "kgen_i * args.kgen_o_s2", "kgen_i * args.p"},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			s := string(src[k.Name])
			if !strings.Contains(s, m.from) {
				t.Fatalf("the rewrite %q does not apply", m.from)
			}
			mutated := []byte(strings.ReplaceAll(s, m.from, m.to))
			results, err := parity.Check(context.Background(), k, mutated, parity.Options{Seed: 23, Chain: batchChainShapes[1:]})
			if err != nil {
				t.Logf("the harness refuses it: %v", err)
				return
			}
			for _, r := range parity.Summarize(results) {
				if r.OK() {
					t.Errorf("%s: parity passes a batched kernel with a %s: %s", r.HostName, m.name, r)
				}
			}
		})
	}
}
