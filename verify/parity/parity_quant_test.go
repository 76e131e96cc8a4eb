package parity_test

import (
	"path/filepath"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/parity"
)

// TestQuantMutationsFail: parity fails for quantized matmuls that read
// their weights wrong in either launch form: the matrix-vector phase (m ≤
// 8) and the tiled kernel. Each rewrite must apply, or the test would pass
// by mutating nothing; each must fail every variant at the shape of the
// form it breaks.
func TestQuantMutationsFail(t *testing.T) {
	needCompiler(t)
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	byName := map[string]*ir.Kernel{}
	for _, k := range kernels {
		byName[k.Name] = k
	}
	gemv, tiled := parity.MatmulShape{M: 3, N: 40, K: 192}, parity.MatmulShape{M: 33, N: 40, K: 192}
	mutations := []struct {
		kernel, name string
		shape        parity.MatmulShape
		from, to     string
	}{
		{"qmatmul_mlx4", "codes' order swapped in pairs (tiled)", tiled, "const uint bit = j * bits", "const uint bit = (j ^ 1u) * bits"},
		{"qmatmul_mlx4", "codes' order swapped in pairs (gemv)", gemv, "const uint bit = e * BITS", "const uint bit = (e ^ 1u) * BITS"},
		{"qmatmul_mlx4", "group boundary off by one (tiled)", tiled, "kgen_c / 64u]", "(kgen_c + 1u) / 64u]"},
		{"qmatmul_mlx4", "scale of the next group (gemv)", gemv, "float(w_scales[kgen_j * (args.k / 64u) + kgen_k0 / 64u])", "float(w_scales[kgen_j * (args.k / 64u) + kgen_k0 / 64u + 1u])"},
		{"qmatmul_mlx4", "bias dropped (gemv)", gemv, "metal::fma(kgen_scale, kgen_w[kgen_e], kgen_bias)", "kgen_scale * kgen_w[kgen_e]"},
		{"qmatmul_q4_0", "nibbles swapped (tiled)", tiled, "(block[2u + i] & 15u) : (block[2u + i - 16u] >> 4)", "(block[2u + i] >> 4) : (block[2u + i - 16u] & 15u)"},
		{"qmatmul_q4_0", "nibbles swapped (gemv)", gemv, "kgen_w[2u * kgen_v] = kgen_d * (float(kgen_x & 15u)", "kgen_w[2u * kgen_v] = kgen_d * (float((kgen_x >> 4) & 15u)"},
		{"qmatmul_q4_0", "zero point 8 dropped (tiled)", tiled, "(float(q) - 8.0f)", "float(q)"},
		{"qmatmul_q4_0", "zero point 8 dropped (gemv)", gemv, "(float(kgen_x & 15u) - 8.0f)", "float(kgen_x & 15u)"},
		{"qmatmul_q8_0", "codes unsigned (tiled)", tiled, "float(as_type<char>(block[2u + j % 32u]))", "float(block[2u + j % 32u])"},
		{"qmatmul_q8_0", "block off by one (gemv)", gemv, "kgen_k0 / 32u * 34u", "(kgen_k0 / 32u + 1u) % (args.k / 32u) * 34u"},
		{"qmatmul_q8_0", "staged rows of x swapped (gemv)", gemv, "kgen_xs[kgen_i * KB + kgen_lane * 32u + kgen_e]", "kgen_xs[(kgen_i ^ 1u) * KB + kgen_lane * 32u + kgen_e]"},
		{"qmatmul_mlx4", "no barrier after staging x (gemv)", gemv, "threadgroup_barrier(mem_flags::mem_threadgroup);\n        const uint kgen_k0", "const uint kgen_k0"},
	}
	for _, m := range mutations {
		t.Run(m.kernel+"/"+m.name, func(t *testing.T) {
			t.Parallel()
			k := byName[m.kernel]
			if k == nil {
				t.Fatalf("no %s built-in", m.kernel)
			}
			mutantFails(t, k, src[k.Name], m.from, m.to, -1, parity.Options{Seed: 5, Matmul: []parity.MatmulShape{m.shape}}, "a kernel with its "+m.name)
		})
	}
}

// TestQuantizedEpilogueForms: a quantized B works unchanged under the
// matmul forms beyond a plain epilogue: row reductions (row-owning, and
// the split for n above the strip, whose first phase reads the packed
// weights and tables) with mixed formats in a gated pair, and a chain
// whose scores use Q8_0 keys.
func TestQuantizedEpilogueForms(t *testing.T) {
	needCompiler(t)
	kernels, src := tempProject(t, map[string]string{
		"specs/qnorm.yaml": `kernel: qnorm
kind: matmul
dtypes: [f16, bf16]
matmul:
  a: x
  b:
    - {name: wg, quant: {format: affine, bits: 3, group: 32}, acc: gate}
    - {name: wu, quant: q4_0, acc: up}
params:
  - {name: eps, type: f32}
let:
  - h: gate * sigmoid(gate) * up
outputs:
  - y: h / sqrt(row_mean(h * h) + eps)
ports: {metal: generated, cuda: null, rocm: null}
`,
		"specs/qattn.yaml": `kernel: qattn
kind: matmul
dtypes: [f16]
matmul: {a: q, b: {name: kc, quant: q8_0}, then: {name: v, layout: col_major}}
let:
  - s: acc * 0.125
  - e: exp(s - row_max(s))
outputs:
  - o: acc2 / row_sum(e)
ports: {metal: generated, cuda: null, rocm: null}
`,
	})
	for _, k := range kernels {
		opts := parity.Options{Seed: 9, Matmul: []parity.MatmulShape{{1, 1, 32}, {9, 33, 64}, {3, 40, 96}, {9, 417, 32}}}
		if k.Matmul().Chain != nil {
			opts = parity.Options{Seed: 9, Chain: []parity.ChainShape{{1, 1, 32, 1}, {7, 40, 64, 9}, {9, 100, 32, 40}}}
		}
		t.Run(k.Name, func(t *testing.T) { checkAll(t, k, src[k.Name], opts) })
	}
}
