package hipcpu

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/e2e/internal/buildcache"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// gemmShapes have tails of the HIP GEMM's 64×64×16 tile (ir.HIPTile) in
// every dimension (m = 1, 7, 65, 130; n = 1, 9, 67, 70, 129; k = 1, 13,
// 17, 33), a whole tile (64×64, k 32), one row (m = 1), k = 0 (the
// epilogue of acc = 0) and empty outputs (m or n = 0: no launch).
var gemmShapes = []parity.MatmulShape{
	{M: 7, N: 9, K: 13}, {M: 65, N: 67, K: 33}, {M: 1, N: 70, K: 17}, {M: 64, N: 64, K: 32},
	{M: 130, N: 129, K: 1}, {M: 5, N: 3, K: 0}, {M: 1, N: 1, K: 1}, {M: 0, N: 8, K: 8}, {M: 7, N: 0, K: 8},
}

// chainShapes have tails of the chain's 64-key blocks and 64-column
// chunks of p (n = 8, 100, 130; p = 7, 9, 70), one and several key blocks
// and chunks, a k tail, m = 1, k = 0 and empty outputs.
var chainShapes = []parity.ChainShape{
	{M: 1, N: 1, K: 1, P: 1}, {M: 7, N: 8, K: 33, P: 7}, {M: 9, N: 100, K: 7, P: 70}, {M: 65, N: 130, K: 9, P: 9},
	{M: 5, N: 40, K: 0, P: 9}, {M: 0, N: 7, K: 8, P: 9},
}

// matmulBuiltins are the matmul built-ins, loaded with builtins.
func matmulBuiltins(t *testing.T) []*ir.Kernel {
	t.Helper()
	builtins(t)
	return matmuls
}

// TestHIPGemmOnCPU runs every matmul built-in with rocm: generated (its
// generated .hip) on the CPU with 64-lane wavefronts under ASan and UBSan
// and with 32-lane ones, every storage type at gemmShapes, judged by
// parity against the float64 reference with the γ_K bound, outputs
// NaN-poisoned and rows of A adversarial (chains at chainShapes); the
// 64-lane run schedules each block's threads forward and shuffled (a read
// of LDS not ordered after its write by a barrier would change the bytes).
// make test runs the 32-lane build of one kernel per GEMM form
// (wave32Forms); KGEN_LONG=1 runs it for all of them.
func TestHIPGemmOnCPU(t *testing.T) {
	ported := 0
	long := os.Getenv("KGEN_LONG") != ""
	for _, k := range matmulBuiltins(t) {
		if !k.Ports[ir.ROCm] {
			continue
		}
		ported++
		for _, wave := range []int{64, 32} {
			if wave == 32 && !long && !wave32Forms[k.Name] {
				continue
			}
			t.Run(fmt.Sprintf("%s/wave%d", k.Name, wave), func(t *testing.T) {
				t.Parallel()
				san := ""
				if wave == 64 {
					san = "address,undefined"
				}
				b := build(t, k, source(t, k), wave, san)
				var orders []mslcpu.LaneOrder
				if wave == 64 { // every block's threads forward and shuffled: the same bytes
					orders = []mslcpu.LaneOrder{mslcpu.Forward, mslcpu.Shuffled}
				}
				ok, why := gemmParity(k, b, gemmShapes, orders...)
				if !ok {
					t.Error(why)
				} else {
					t.Log(why)
				}
			})
		}
	}
	if ported < 20 {
		t.Errorf("%d matmul built-ins with a ROCm port; want all 20", ported)
	}
}

// wave32Forms are the matmul built-ins make test also runs with 32-lane
// wavefronts: one per form of the HIP GEMM (plain with an epilogue input,
// gated, row reductions, quantized, chain). The 64-lane run, which the
// wave-size planted bugs need, covers every built-in.
var wave32Forms = map[string]bool{"matmul_bias": true, "matmul_silu_mul": true, "matmul_softmax": true, "qmatmul_q4_0": true, "attention": true}

// gemmParity runs parity on k through b at shapes (a chain at
// chainShapes), in the lane orders
// given (each later one must give the first one's bytes; none: forward),
// and reports whether every variant is within bounds with elements
// checked, and if not why.
func gemmParity(k *ir.Kernel, b *cpuBuild, shapes []parity.MatmulShape, orders ...mslcpu.LaneOrder) (bool, string) {
	results, err := parity.Check(context.Background(), k, nil, parity.Options{Seed: 29, Backend: ir.ROCm, Run: b.runner(), Matmul: shapes, Chain: chainShapes, Orders: orders})
	if err != nil {
		return false, buildcache.FirstLines(err.Error(), 5)
	}
	var lines []string
	ok := true
	for _, r := range parity.Summarize(results) {
		if !r.OK() || r.Lanes == 0 {
			ok = false
			lines = append(lines, fmt.Sprintf("wave %d: %s (%d elements); first: %s", b.wave, r, r.Lanes, r.First))
			continue
		}
		lines = append(lines, fmt.Sprintf("wave %d: %s", b.wave, r))
	}
	return ok, strings.Join(lines, "\n")
}

// gemmMutations are bugs planted in the HIP GEMM's source of kernel (the
// first occurrence of from); each must fail parity at gemmShapes (or
// abort the run). matmul_bias has an epilogue input per column, so a
// shifted column shows too; matmul_layer_norm is the row-owning kernel,
// two reduction passes then the write; the qmatmuls dequantize as they
// stage; causal_attention is a chain (online softmax, W·V).
var gemmMutations = []struct {
	kernel, name, from, to, san string
}{
	// The K loop stops before a partial last slice: k = 13, 17, 33 lose
	// their tails.
	{"matmul_bias", "K tail dropped", "kgen_k0 < args.k; kgen_k0 += BK", "kgen_k0 + BK <= args.k; kgen_k0 += BK", ""},
	// The epilogue skips each microtile's last row: a quarter of the rows
	// keep their NaN poison.
	{"matmul_bias", "microtile's last row skipped", "for (unsigned int kgen_tr = 0; kgen_tr < TM; ++kgen_tr) {\n        const unsigned long long kgen_i",
		"for (unsigned int kgen_tr = 0; kgen_tr + 1 < TM; ++kgen_tr) {\n        const unsigned long long kgen_i", ""},
	// A's LDS row read one off: each output row takes its neighbour's A.
	{"matmul_bias", "LDS index off by one", "kgen_as[kgen_kk][TM * kgen_ty + kgen_tr]", "kgen_as[kgen_kk][TM * kgen_ty + kgen_tr + 1]", ""},
	// No barrier between the multiply and the next slice's staging: the
	// first thread overwrites LDS that the others have yet to read.
	{"matmul_bias", "barrier after the multiply dropped", "        kgen_barrier();\n    }\n    // The epilogue", "    }\n    // The epilogue", ""},
	// A's rows past m are read instead of zero-filled: out of bounds,
	// which the sanitized run reports.
	{"matmul_bias", "A's row guard dropped", "((kgen_row0 + kgen_x) < args.m && ", "(", "address,undefined"},
	// The row butterfly stops one step early: each row's mean sums half
	// of its threads' partials.
	{"matmul_layer_norm", "row butterfly one step short", "kgen_o = TX / 2; kgen_o > 0;", "kgen_o = TX / 2; kgen_o > 1;", ""},
	// The first pass skips the row's last column tile (n = 67, 70, 129).
	{"matmul_layer_norm", "a pass's last column tile dropped", "kgen_col0 < args.n; kgen_col0 += BN", "kgen_col0 + BN <= args.n; kgen_col0 += BN", ""},
	// Q4_0's values 16-31 read the low nibbles again.
	{"qmatmul_q4_0", "Q4_0 high nibble misread", "(block[2u + i - 16u] >> 4)", "(block[2u + i - 16u] & 15u)", ""},
	// The affine scale of the group of the next 32 codes: group 64 read as 32.
	{"qmatmul_mlx4", "affine scale from the wrong group", "(kgen_k0 + kgen_kk) / 64u]", "(kgen_k0 + kgen_kk) / 32u]", ""},
	// The online softmax forgets to rescale O when the running max grows
	// (attention: causal_attention's rows at these shapes see one block).
	{"attention", "O not rescaled", "kgen_o[kgen_tr][kgen_tc] *= kgen_f;", "", ""},
	// The weights' row sum misses half of the row's threads.
	{"causal_attention", "weights' sum butterfly one step short", "kgen_o > 0; kgen_o /= 2) kgen_sum +=", "kgen_o > 1; kgen_o /= 2) kgen_sum +=", ""},
	// V's key guard lets one key past n through: out of bounds (ASan).
	{"causal_attention", "V's key guard off by one", "(kgen_col0 + kgen_kk) < args.n)", "(kgen_col0 + kgen_kk) <= args.n)", "address,undefined"},
	// Every row of the thread reads its first row's mean.
	{"matmul_layer_norm", "per-row value of the wrong row", "const C kgen_r0 = kgen_row_kgen_r0[kgen_tr];", "const C kgen_r0 = kgen_row_kgen_r0[0];", ""},
}

// TestHIPGemmCatchesMutations: each gemmMutations bug fails the 64-lane
// run.
func TestHIPGemmCatchesMutations(t *testing.T) {
	byName := map[string]*ir.Kernel{}
	for _, k := range matmulBuiltins(t) {
		if k.Ports[ir.ROCm] {
			byName[k.Name] = k
		}
	}
	for _, m := range gemmMutations {
		k := byName[m.kernel]
		if k == nil {
			t.Fatalf("no built-in %s with a ROCm port", m.kernel)
		}
		src := source(t, k)
		if !strings.Contains(src, m.from) {
			t.Fatalf("%q is not in %s's source", m.from, m.kernel)
		}
		t.Run(m.kernel+"/"+m.name, func(t *testing.T) {
			t.Parallel()
			b := build(t, k, strings.Replace(src, m.from, m.to, 1), 64, m.san)
			if ok, why := gemmParity(k, b, gemmShapes); ok {
				t.Errorf("the mutation %q passed:\n%s", m.name, why)
			} else {
				t.Logf("caught: %s", buildcache.FirstLines(why, 2))
			}
		})
	}
}
