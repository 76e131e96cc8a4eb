package parity_test

import (
	"context"
	"path/filepath"
	"strings"
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
		{"qmatmul_mlx4", "group boundary off by one (tiled)", tiled, "kgen_r / 64u]", "(kgen_r + 1u) / 64u]"},
		{"qmatmul_mlx4", "scale of the next group (gemv)", gemv, "float(w_scales[kgen_j * (args.k / 64u) + kgen_k0 / 64u])", "float(w_scales[kgen_j * (args.k / 64u) + kgen_k0 / 64u + 1u])"},
		{"qmatmul_mlx4", "bias dropped (gemv)", gemv, "metal::fma(kgen_scale, kgen_w[kgen_e], kgen_bias)", "kgen_scale * kgen_w[kgen_e]"},
		{"qmatmul_q4_0", "nibbles swapped (tiled)", tiled, "(block[2u + i] & 15u) : (block[2u + i - 16u] >> 4)", "(block[2u + i] >> 4) : (block[2u + i - 16u] & 15u)"},
		{"qmatmul_q4_0", "nibbles swapped (gemv)", gemv, "kgen_w[2u * kgen_v] = kgen_d * (float(kgen_x & 15u)", "kgen_w[2u * kgen_v] = kgen_d * (float((kgen_x >> 4) & 15u)"},
		{"qmatmul_q4_0", "zero point 8 dropped (tiled)", tiled, "(float(q) - 8.0f)", "float(q)"},
		{"qmatmul_q4_0", "zero point 8 dropped (gemv)", gemv, "(float(kgen_x & 15u) - 8.0f)", "float(kgen_x & 15u)"},
		{"qmatmul_q8_0", "codes unsigned (tiled)", tiled, "float(as_type<char>(block[2u + j % 32u]))", "float(block[2u + j % 32u])"},
		{"qmatmul_q8_0", "block off by one (gemv)", gemv, "kgen_k0 / 32u * 34u", "(kgen_k0 / 32u + 1u) % (args.k / 32u) * 34u"},
	}
	for _, m := range mutations {
		t.Run(m.kernel+"/"+m.name, func(t *testing.T) {
			t.Parallel()
			k := byName[m.kernel]
			if k == nil {
				t.Fatalf("no %s built-in", m.kernel)
			}
			s := string(src[k.Name])
			if !strings.Contains(s, m.from) {
				t.Fatalf("the rewrite %q does not apply", m.from)
			}
			mutated := []byte(strings.ReplaceAll(s, m.from, m.to))
			results, err := parity.Check(context.Background(), k, mutated, parity.Options{Seed: 5, Matmul: []parity.MatmulShape{m.shape}})
			if err != nil {
				t.Logf("the harness refuses it: %v", err)
				return
			}
			for _, r := range parity.Summarize(results) {
				if r.OK() {
					t.Errorf("%s: parity passes a kernel with its %s: %s", r.HostName, m.name, r)
				}
			}
		})
	}
}
