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

// batched are the built-in batched matmuls (ir.Kernel.Batched; the
// batched rowwise kernels are parity_rowbatch_test.go's).
func batched(t *testing.T) ([]*ir.Kernel, map[string][]byte) {
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	var out []*ir.Kernel
	for _, k := range kernels {
		if k.Batched() && k.Kind == ir.KindMatmul {
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
			// Decode: few rows, many keys; the launcher splits the keys
			// (flash decoding). Every key visible, then the causal mask at
			// offset 0, where the later splits see no key at all.
			for _, offset := range []float64{4000, 0} {
				for _, r := range checkAll(t, k, src[k.Name], parity.Options{Seed: 24, Chain: decodeShapes, Params: map[string]float64{"offset": offset}}) {
					if r.Checked == 0 {
						t.Errorf("%s: nothing checked", r.HostName)
					}
				}
			}
		})
	}
}

// decodeShapes are decode steps whose grid the launcher splits over the
// keys (ir.DecodeRules): 4 splits of 256 keys with a partial last one, and
// 9 splits of 256 keys (the last of 1) for 3 query rows.
var decodeShapes = []parity.ChainShape{{1, 1000, 16, 40}, {3, 2049, 8, 9}}

// TestDecodeSplits: the decode shapes do take the split (kgen_splits > 1 at
// parity's batch sizes), so TestBuiltinBatched checks the flash-decoding
// phases and not only the one launch.
func TestDecodeSplits(t *testing.T) {
	kernels, _ := batched(t)
	for _, k := range kernels {
		for _, sh := range decodeShapes {
			sizes, err := k.Launch(ir.Metal).Sizes(map[string]int{"m": sh.M, "n": sh.N, "k": sh.K, "p": sh.P, "b": 2, "h": 4, "group": 2})
			if err != nil {
				t.Fatal(err)
			}
			if sizes[ir.SplitsField] < 2 {
				t.Errorf("%v: %d split(s), want the flash-decoding form", sh, sizes[ir.SplitsField])
			}
			t.Logf("%s %v: %d splits of %d keys", k.Name, sh, sizes[ir.SplitsField], sizes[ir.ChunkField])
		}
	}
}

// TestBatchedMutationsFail: parity fails for a batched kernel that maps a
// query head to the wrong KV head, reads A's rows at the dense row stride
// instead of its own, or stores the output at the dense stride. Each
// rewrite must apply, or the test would pass by mutating nothing.
func TestBatchedMutationsFail(t *testing.T) {
	needCompiler(t)
	kernels, src := batched(t)
	var k *ir.Kernel
	for _, b := range kernels {
		if b.Name == "attention_prefill" { // the causal one: its mask's block test too
			k = b
		}
	}
	mutations := []struct{ name, from, to string }{
		{"wrong KV head", "(kgen_b1 / args.group) * args.kgen_kc_s1", "(kgen_b1 % args.group) * args.kgen_kc_s1"},
		{"dense row stride of q", "kgen_r * args.kgen_q_s2", "kgen_r * args.k"},
		{"dense output rows", "kgen_i * args.kgen_o_s2", "kgen_i * args.p"},
		{"combine without the rescale", "const float kgen_f = kgen_mx == -INFINITY ? 0.0f : kgen_math::exp(kgen_ws1[kgen_w] - kgen_mx);", "const float kgen_f = 1.0f;"},
		{"skips a block the mask shows", "kgen_clo - long(offset) > 0", "kgen_clo - long(offset) >= 0"},
		// The row-vector form (m <= 8: the 7-row and decode shapes).
		{"row-vector output not rescaled per key", "kgen_ov[kgen_t] * kgen_f);", "kgen_ov[kgen_t]);"},
		{"row-vector partials summed without their rescale", "kgen_osum += kgen_os[kgen_q * PMAX + kgen_c] * kgen_f;", "kgen_osum += kgen_os[kgen_q * PMAX + kgen_c];"},
		{"row-vector key stride of one simdgroup", "kgen_j += S)", "kgen_j += 1)"},
		{"partials of split 0 only", "const uint kgen_w = (kgen_tg3.z * args.kgen_splits + kgen_tg3.y) * args.m + kgen_i;", "const uint kgen_w = (kgen_tg3.z * args.kgen_splits + 0u) * args.m + kgen_i;"},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			s := string(src[k.Name])
			if !strings.Contains(s, m.from) {
				t.Fatalf("the rewrite %q does not apply", m.from)
			}
			mutated := []byte(strings.ReplaceAll(s, m.from, m.to))
			offset := 4000.0 // every key visible: the decode split's every partial counts
			if strings.Contains(m.name, "mask") {
				offset = 0
			}
			results, err := parity.Check(context.Background(), k, mutated, parity.Options{Seed: 23, Chain: append(batchChainShapes[1:], decodeShapes[0]),
				Params: map[string]float64{"offset": offset}})
			if err != nil {
				t.Fatalf("the mutated kernel does not run: %v", err) // each rewrite is well-formed
			}
			for _, r := range parity.Summarize(results) {
				if r.OK() {
					t.Errorf("%s: parity passes a batched kernel with a %s: %s", r.HostName, m.name, r)
				}
			}
		})
	}
}
