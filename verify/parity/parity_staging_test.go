package parity_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// stagingSpecs are tiled matmuls beyond the built-ins' layouts, for the
// staging in storage type with 16-byte chunks (ir.Staging): a column-major
// A with a gated pair of Bs, one of them column-major, and a batched plain
// matmul (strided views: element by element).
var stagingSpecs = map[string]string{
	"specs/colmajor.yaml": `kernel: colmajor
kind: matmul
dtypes: [f32, f16, bf16]
matmul:
  a: {name: x, layout: col_major}
  b: [{name: wg, acc: gate}, {name: wu, acc: up, layout: col_major}]
outputs:
  - y: gate * sigmoid(gate) * up
ports: {metal: generated, cuda: null, rocm: null}
`,
	"specs/bmm.yaml": `kernel: bmm
kind: matmul
dtypes: [f32, f16]
matmul: {a: x, b: w, batch: [b]}
outputs:
  - y: acc
ports: {metal: generated, cuda: null, rocm: null}
`,
}

// stagingShapes: whole 16-byte rows (k, m and n multiples of 8) with
// several K steps and tiles, and tails of every operand (m, n, k not
// multiples of 8 or of the tile; m = 1; k below one chunk).
var stagingShapes = []parity.MatmulShape{{1, 1, 1}, {1, 40, 24}, {1, 40, 300}, {8, 64, 520}, {7, 8, 33}, {33, 40, 17}, {40, 64, 48}, {64, 96, 48}, {9, 17, 3}}

func stagingKernels(t *testing.T) map[string]*ir.Kernel {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "specs"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"kgen.yaml": "version: 1\nspecs: specs\nout:\n  msl: gen/msl\n  go: gen/kernels\ngo:\n  package: kernels\n"}
	for name, text := range stagingSpecs {
		files[name] = text
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kernels, src := projectKernels(t, filepath.Join(dir, "kgen.yaml"))
	out := map[string]*ir.Kernel{}
	for _, k := range kernels {
		out[k.Name] = k
		stagingSrc[k.Name] = src[k.Name]
	}
	return out
}

var stagingSrc = map[string][]byte{}

// TestMatmulStagingLayouts runs the column-major and batched tiled kernels
// under both lane maps.
func TestMatmulStagingLayouts(t *testing.T) {
	needCompiler(t)
	for name, k := range stagingKernels(t) {
		t.Run(name, func(t *testing.T) {
			for _, lanes := range []mslcpu.MatrixLaneMap{mslcpu.AppleLanes, mslcpu.ScrambledLanes} {
				for _, r := range checkAll(t, k, stagingSrc[name], parity.Options{Seed: 31, Matmul: stagingShapes, MatrixLanes: lanes}) {
					if r.Checked == 0 && r.N > 0 {
						t.Errorf("%s: nothing checked", r.HostName)
					}
				}
			}
		})
	}
}

// TestMatmulStagingMutationsFail: parity fails for a staging that stores
// each chunk one element off, takes 16-byte chunks from rows that are not
// whole chunks, zero-fills a K tail it should have read, or loads a
// column-major operand's fragments untransposed. Each rewrite must apply.
func TestMatmulStagingMutationsFail(t *testing.T) {
	needCompiler(t)
	ks := stagingKernels(t)
	mutations := []struct {
		kernel, name, from, to string
	}{
		{"colmajor", "staging index off by one", "kgen_dst = kgen_as + kgen_tr * kgen_lda + kgen_tc;", "kgen_dst = kgen_as + kgen_tr * kgen_lda + kgen_tc + 1;"},
		{"colmajor", "chunks from ragged rows", "const bool kgen_vb0 = args.n % (16 / sizeof(T)) == 0;", "const bool kgen_vb0 = true;"},
		{"colmajor", "K tail dropped", "kgen_c + kgen_x < args.k) ? wu[", "kgen_c + kgen_x < args.k - args.k % 8u) ? wu["},
		{"colmajor", "transpose dropped", "simdgroup_load(kgen_a[kgen_fm], kgen_as, kgen_lda, ulong2(kgen_sm + 8 * kgen_fm, kgen_kk), true);", "simdgroup_load(kgen_a[kgen_fm], kgen_as, kgen_lda, ulong2(kgen_sm + 8 * kgen_fm, kgen_kk));"},
		{"bmm", "batched K tail dropped", "(kgen_r < args.m && kgen_c < args.k) ?", "(kgen_r < args.m && kgen_c < args.k - args.k % 8u) ?"},
	}
	for _, m := range mutations {
		t.Run(m.kernel+"/"+m.name, func(t *testing.T) {
			mutantFails(t, ks[m.kernel], stagingSrc[m.kernel], m.from, m.to, 1,
				parity.Options{Seed: 32, Matmul: []parity.MatmulShape{{33, 40, 17}, {9, 20, 3}}}, "a kernel with its "+m.name)
		})
	}
}

// TestMatmulGemvMutationsFail: parity fails for a plain matrix-vector
// phase (m <= 8) that skips the last column, drops the K tail of a B's
// slice, skips every other K block of A, or reads A's staged block
// without the barrier after it. Each rewrite must apply.
func TestMatmulGemvMutationsFail(t *testing.T) {
	needCompiler(t)
	ks := stagingKernels(t)
	mutations := []struct {
		kernel, name, from, to string
	}{
		{"colmajor", "last column skipped", "kgen_lane / ROWS;\n    if (kgen_i < args.m && kgen_j < args.n) {", "kgen_lane / ROWS;\n    if (kgen_i < args.m && kgen_j + 1u < args.n) {"},
		{"colmajor", "column-major K tail dropped", "kgen_kc + kgen_x < args.k ? float(wu[", "kgen_kc + kgen_x + 1u < args.k ? float(wu["},
		{"colmajor", "row-major K tail dropped", "kgen_w[kgen_c][kgen_x] = kgen_kk < args.k ? float(wg[", "kgen_w[kgen_c][kgen_x] = kgen_kk + 1u < args.k ? float(wg["},
		{"colmajor", "every other K block", "kgen_k0 += KB)", "kgen_k0 += 2u * KB)"},
		{"colmajor", "missing barrier after staging A", "threadgroup_barrier(mem_flags::mem_threadgroup);\n        const uint kgen_kc", "const uint kgen_kc"},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			mutantFails(t, ks[m.kernel], stagingSrc[m.kernel], m.from, m.to, 1, parity.Options{Seed: 33,
				Matmul: []parity.MatmulShape{{1, 40, 300}, {7, 9, 17}}, Orders: []mslcpu.LaneOrder{mslcpu.Forward, mslcpu.Reverse}}, "a kernel with its "+m.name)
		})
	}
}

// TestMatmulBigTile runs the built-in matmuls that have a big tile
// (ir.Matmul.Big) at shapes whose grid takes it, with tails in m, n and
// k, under both lane maps; and fails a big tile whose second column of
// fragments is never stored.
func TestMatmulBigTile(t *testing.T) {
	needCompiler(t)
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	shapes := []parity.MatmulShape{{136, 200, 17}, {128, 192, 40}}
	n := 0
	for _, k := range matmuls(kernels) {
		if k.Matmul().Big == nil || (k.Name != "matmul" && k.Name != "matmul_bias_gelu") {
			continue
		}
		n++
		checkAll(t, k, src[k.Name], parity.Options{Seed: 34, Matmul: shapes})
		checkAll(t, k, src[k.Name], parity.Options{Seed: 34, Matmul: shapes[:1], MatrixLanes: mslcpu.ScrambledLanes})
		if k.Name != "matmul" {
			continue
		}
		mutantFails(t, k, src[k.Name], "constexpr uint BM = 64, BN = 64, BK = 16, WN = 2, TM = 4, TN = 4;",
			"constexpr uint BM = 64, BN = 64, BK = 16, WN = 2, TM = 4, TN = 3;", 1,
			parity.Options{Seed: 35, Matmul: shapes[:1]}, "a big tile missing a column of fragments")
	}
	if n != 2 {
		t.Fatalf("want matmul and matmul_bias_gelu with a big tile, got %d", n)
	}
}
