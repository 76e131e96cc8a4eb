package parity_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// matmuls filters the matmul kernels other than chains (whose shapes and
// tests are their own: parity_chain_test.go).
func matmuls(ks []*ir.Kernel) []*ir.Kernel {
	var out []*ir.Kernel
	for _, k := range ks {
		if k.Kind == ir.KindMatmul && k.Matmul().Chain == nil {
			out = append(out, k)
		}
	}
	return out
}

// TestBuiltinMatmuls runs every built-in matmul × dtype at the shapes of
// DefaultMatmulShapes but its two largest (all of them in a long run:
// sweepMatmulShapes) against the float64 reference with the γ_K bound,
// under the lane map real hardware uses.
func TestBuiltinMatmuls(t *testing.T) {
	needCompiler(t)
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	for _, k := range matmuls(kernels) {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			for _, r := range checkAll(t, k, src[k.Name], parity.Options{Seed: 1, Matmul: sweepMatmulShapes}) {
				checkConfined(t, r)
			}
		})
	}
}

// TestBuiltinMatmulsScrambled runs every built-in matmul × dtype under a
// scrambled simdgroup_matrix lane map and shuffled lane order, at a few
// shapes: Apple does not specify the map, so the results must not depend
// on it.
func TestBuiltinMatmulsScrambled(t *testing.T) {
	needCompiler(t)
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	shapes := []parity.MatmulShape{{7, 8, 33}, {33, 40, 17}}
	for _, k := range matmuls(kernels) {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			checkAll(t, k, src[k.Name], parity.Options{Seed: 2, Matmul: shapes,
				MatrixLanes: mslcpu.ScrambledLanes, Orders: []mslcpu.LaneOrder{mslcpu.Shuffled}})
		})
	}
}

// mutantFails rewrites from to to in src (n times, -1: every time; the
// rewrite must apply) and fails t when parity passes any variant of the
// mutant: a planted bug it must catch, described by what ("a kernel with
// its K tail dropped"). A mutant the harness refuses to run counts as
// caught.
func mutantFails(t *testing.T, k *ir.Kernel, src []byte, from, to string, n int, opts parity.Options, what string) {
	t.Helper()
	s := string(src)
	if !strings.Contains(s, from) {
		t.Fatalf("the rewrite %q does not apply", from)
	}
	results, err := parity.Check(context.Background(), k, []byte(strings.Replace(s, from, to, n)), opts)
	if err != nil {
		t.Logf("the harness refuses it: %v", err)
		return
	}
	for _, r := range parity.Summarize(results) {
		if r.OK() {
			t.Errorf("%s: parity passes %s: %s", r.HostName, what, r)
		}
	}
}

func checkAll(t *testing.T, k *ir.Kernel, src []byte, opts parity.Options) []parity.Result {
	t.Helper()
	results, err := parity.Check(context.Background(), k, src, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range parity.Summarize(results) {
		if !r.OK() {
			t.Errorf("%s", r)
			for _, f := range r.Failures {
				t.Errorf("  %s", f)
			}
			continue
		}
		t.Logf("%s", r)
	}
	return results
}

// TestMatmulMutationsFail: parity fails for a kernel that loads the wrong
// fragment, drops the K tail or misses the barrier after staging (the
// harness's simdgroup_matrix operations wait only for their own simdgroup,
// as on Apple GPUs, so one simdgroup runs ahead and multiplies tiles the
// others have not staged yet). Each rewrite must apply, or the test would
// pass by mutating nothing.
func TestMatmulMutationsFail(t *testing.T) {
	needCompiler(t)
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	var k *ir.Kernel
	for _, kk := range matmuls(kernels) {
		if kk.Name == "matmul_bias" {
			k = kk
		}
	}
	if k == nil {
		t.Fatal("no matmul_bias built-in")
	}
	mutations := []struct {
		name, from, to string
		san            mslcpu.Sanitizer
	}{
		{"wrong fragment index", "ulong2(kgen_kk, kgen_sm + 8 * kgen_fm)", "ulong2(kgen_kk, kgen_sm)", mslcpu.NoSanitizer},
		{"dropped K tail", "kgen_k0 < args.k;", "kgen_k0 + BK <= args.k;", mslcpu.NoSanitizer},
		{"missing barrier after staging", "threadgroup_barrier(mem_flags::mem_threadgroup);\n            for (uint kgen_kk", "for (uint kgen_kk", mslcpu.NoSanitizer},
	}
	shapes := []parity.MatmulShape{{33, 40, 17}, {8, 8, 24}}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			if m.san != mslcpu.NoSanitizer {
				if err := mslcpu.SanitizerAvailable(context.Background(), m.san); err != nil {
					t.Skipf("no sanitizer runtime: %v", err)
				}
			}
			mutantFails(t, k, src[k.Name], m.from, m.to, 1, parity.Options{Seed: 4, Matmul: shapes,
				Orders: []mslcpu.LaneOrder{mslcpu.Forward, mslcpu.Reverse, mslcpu.Shuffled}, Sanitize: m.san}, "a kernel with a "+m.name)
		})
		// The same bug in every tile's body, at a shape only the 16×64 tile
		// (ir.MidTile) runs: 13 rows, 100 columns.
		t.Run(m.name+" (16x64 tile)", func(t *testing.T) {
			t.Parallel()
			mutantFails(t, k, src[k.Name], m.from, m.to, -1, parity.Options{Seed: 4, Matmul: []parity.MatmulShape{{13, 100, 40}},
				Orders: []mslcpu.LaneOrder{mslcpu.Forward, mslcpu.Reverse, mslcpu.Shuffled}}, "a 16x64 tile with a "+m.name)
		})
	}
}

// appleMapStore stores a fragment through thread_elements() at the
// positions Apple's observed lane map gives (MLX's get_coord): what a
// hand-written register epilogue does. It is right on today's hardware and
// under mslcpu.AppleLanes, and wrong under any other map.
const appleMapStore = `{
                const uint kgen_l = kgen_tid % 32, kgen_q = kgen_l / 4;
                const uint kgen_r = (kgen_q & 4) + (kgen_l / 2) % 4, kgen_cc = (kgen_q & 2) * 2 + (kgen_l % 2) * 2;
                const auto kgen_v = kgen_acc0[kgen_fm][kgen_fn].thread_elements();
                const uint kgen_at = (kgen_sm + 8 * kgen_fm + kgen_r) * BN + kgen_sn + 8 * kgen_fn + kgen_cc;
                kgen_cs0[kgen_at] = kgen_v[0];
                kgen_cs0[kgen_at + 1] = kgen_v[1];
            }`

// TestMatmulWrongLaneMapFails: a matmul whose epilogue reads the
// accumulators through thread_elements() with an assumed lane map passes
// parity under the map real hardware uses and fails under the scrambled
// one, so TestBuiltinMatmulsScrambled passing says kgen's kernels do not
// assume a map (rather than that the scrambled mode cannot see one).
func TestMatmulWrongLaneMapFails(t *testing.T) {
	needCompiler(t)
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	var k *ir.Kernel
	for _, kk := range matmuls(kernels) {
		if kk.Name == "matmul_bias" {
			k = kk
		}
	}
	if k == nil {
		t.Fatal("no matmul_bias built-in")
	}
	from := "simdgroup_store(kgen_acc0[kgen_fm][kgen_fn], kgen_cs0, BN, ulong2(kgen_sn + 8 * kgen_fn, kgen_sm + 8 * kgen_fm));"
	s := string(src[k.Name])
	if !strings.Contains(s, from) {
		t.Fatalf("the rewrite %q does not apply", from)
	}
	mutated := []byte(strings.Replace(s, from, appleMapStore, 1))
	shapes := []parity.MatmulShape{{33, 40, 17}}
	for _, lanes := range []mslcpu.MatrixLaneMap{mslcpu.AppleLanes, mslcpu.ScrambledLanes} {
		results, err := parity.Check(context.Background(), k, mutated, parity.Options{Seed: 5, Matmul: shapes, MatrixLanes: lanes})
		if err != nil {
			t.Fatalf("lanes %d: %v", lanes, err)
		}
		for _, r := range parity.Summarize(results) {
			if lanes == mslcpu.AppleLanes && !r.OK() {
				t.Errorf("%s: the Apple-map store fails under Apple's map: %s", r.HostName, r)
			}
			if lanes == mslcpu.ScrambledLanes && r.OK() {
				t.Errorf("%s: parity passes a kernel that assumes the lane map, under the scrambled map: %s", r.HostName, r)
			}
		}
	}
}

// TestMatmulRowMutationsFail: parity fails for a row-owning matmul that
// reads its strip without the barrier after the column tiles (a simdgroup
// reduces rows other simdgroups have not stored) or whose butterfly skips
// its first level (half the lanes' terms never reach the row's value).
func TestMatmulRowMutationsFail(t *testing.T) {
	needCompiler(t)
	kernels, src := projectKernels(t, filepath.Join(repoRoot(), "kgen.yaml"))
	var k *ir.Kernel
	for _, kk := range matmuls(kernels) {
		if kk.Name == "matmul_softmax" {
			k = kk
		}
	}
	if k == nil {
		t.Fatal("no matmul_softmax built-in")
	}
	mutations := []struct{ name, from, to string }{
		{"missing barrier before the passes", "    }\n    threadgroup_barrier(mem_flags::mem_threadgroup);\n    const uint kgen_lane", "    }\n    const uint kgen_lane"},
		{"short butterfly", "kgen_o = 16; kgen_o > 0; kgen_o /= 2)", "kgen_o = 8; kgen_o > 0; kgen_o /= 2)"},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			s := string(src[k.Name])
			if !strings.Contains(s, m.from) {
				t.Fatalf("the rewrite %q does not apply", m.from)
			}
			mutated := []byte(strings.ReplaceAll(s, m.from, m.to))
			results, err := parity.Check(context.Background(), k, mutated, parity.Options{Seed: 6,
				Matmul: []parity.MatmulShape{{33, 40, 17}, {9, 100, 8}}, Orders: []mslcpu.LaneOrder{mslcpu.Forward, mslcpu.Reverse, mslcpu.Shuffled}})
			if err != nil {
				t.Logf("the harness refuses it: %v", err)
				return
			}
			for _, r := range parity.Summarize(results) {
				if r.OK() {
					t.Errorf("%s: parity passes a kernel with a %s: %s", r.HostName, m.name, r)
				}
			}
		})
	}
}

// TestDownstreamRowMatmul: a downstream spec the built-ins do not cover —
// gated (two Bs, the up operand column-major), per-row [m] and [m, n]
// epilogue inputs, a runtime param and a per-row let over a reduction —
// passes parity in every dtype as a row-owning kernel, under the real and
// the scrambled lane map.
func TestDownstreamRowMatmul(t *testing.T) {
	needCompiler(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "specs"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"kgen.yaml": "version: 1\nspecs: specs\nout:\n  msl: gen/msl\n  go: gen/kernels\ngo:\n  package: kernels\n",
		"specs/gated_norm.yaml": `kernel: gated_norm
kind: matmul
dtypes: [f32, f16, bf16]
matmul: {a: x, b: [{name: wg, acc: gate}, {name: wu, acc: up, layout: col_major}]}
inputs:
  - {name: rs, shape: [m]}
  - {name: res, shape: [m, n]}
params:
  - {name: eps, type: f32}
let:
  - h: gate * sigmoid(gate) * up * rs + res
  - inv: 1 / sqrt(row_mean(h * h) + eps)
outputs:
  - y: h * inv - row_min(h) * 0.125
ports: {metal: generated, cuda: null, rocm: null}
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kernels, src := projectKernels(t, filepath.Join(dir, "kgen.yaml"))
	if len(kernels) != 1 || kernels[0].Matmul().Rows == nil || kernels[0].Matmul().NMax != 416 {
		t.Fatalf("want one row-owning gated matmul with NMax 416, got %d kernels", len(kernels))
	}
	k := kernels[0]
	shapes := []parity.MatmulShape{{1, 1, 1}, {9, 33, 17}, {40, 256, 128}, {33, 416, 7}, {9, 417, 5}} // 417: the split form
	for _, lanes := range []mslcpu.MatrixLaneMap{mslcpu.AppleLanes, mslcpu.ScrambledLanes} {
		for _, r := range checkAll(t, k, src[k.Name], parity.Options{Seed: 7, Matmul: shapes, MatrixLanes: lanes}) {
			checkConfined(t, r)
		}
	}
}
