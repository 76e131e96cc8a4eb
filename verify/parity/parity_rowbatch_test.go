package parity_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/parity"
)

// rowBatchSpec is a batched rowwise kernel with every form of a tensor's
// batch: x whole, kv grouped (a GQA KV head read from a query head's
// row), a per-head weight w [h, cols], a per-row scale s [b, rows] shared
// by the heads, and a [rows] output m.
const rowBatchSpec = `kernel: gqa_rows
kind: rowwise
dtypes: [f32, f16, bf16]
compute: f32
batch: [b, h]
inputs:
  - x
  - {name: kv, batch: [b, h / group]}
  - {name: w, shape: [cols], batch: [h]}
  - {name: s, shape: [rows], batch: [b]}
params: [{name: eps, type: f32, example: 1e-5}]
let:
  - inv: rsqrt(row_mean(x * x) + eps)
outputs:
  - y: x * inv * w + kv * s
  - m: row_max(kv) + f32(row)
`

// elemBatchSpec is a batched elementwise kernel with every form of a
// tensor's batch: x whole, kv grouped, a bias per head, s shared by the
// whole launch; i is the element's index within its batch element.
const elemBatchSpec = `kernel: axpy_heads
kind: elementwise
dtypes: [f32, f16, bf16]
batch: [b, h]
inputs:
  - x
  - {name: kv, batch: [b, h / group]}
  - {name: bias, batch: [h]}
  - {name: s, batch: []}
params: [{name: a, type: f32, example: 0.5}]
outputs:
  - y: x * a + kv + bias * s + f32(i)
`

// rowBatchKernels builds rope_heads, gqa_rows and axpy_heads with their
// MSL.
func rowBatchKernels(t *testing.T) (map[string]*ir.Kernel, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"kgen.yaml":             "version: 1\nspecs: specs\nout:\n  msl: gen/msl\n  go: gen/kernels\n",
		"specs/gqa_rows.yaml":   rowBatchSpec,
		"specs/axpy_heads.yaml": elemBatchSpec,
		"specs/rope_heads.yaml": "",
	} {
		if text == "" {
			raw, err := os.ReadFile(filepath.Join(repoRoot(), "specs", filepath.Base(name)))
			if err != nil {
				t.Fatal(err)
			}
			text = string(raw)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kernels, src := projectKernels(t, filepath.Join(dir, "kgen.yaml"))
	out := map[string]*ir.Kernel{}
	for _, k := range kernels {
		if !k.Batched() {
			t.Fatalf("%s is not batched", k.Name)
		}
		out[k.Name] = k
	}
	return out, src
}

// TestBatchedRows runs the batched rowwise kernels over every batch
// element (b 2, h 4, group 2) of gapped, NaN-poisoned views (parity's
// batched layout: input 0's batch dimensions reversed, and its columns 2
// apart at one row per element), against the float64 reference per row.
func TestBatchedRows(t *testing.T) {
	needCompiler(t)
	kernels, src := rowBatchKernels(t)
	for name, k := range kernels {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, r := range checkAll(t, k, src[name], parity.Options{Seed: 31, Cols: []int{1, 7, 64, 4304}, Rows: []int{0, 1, 11}, Sizes: []int{0, 1, 9, 1000, 4099}}) {
				if r.Checked == 0 && r.Rows+r.N > 0 {
					t.Errorf("%s: nothing checked", r.HostName)
				}
			}
		})
	}
}

// mutation is a planted bug: a rewrite of a kernel's source.
type mutation struct{ name, from, to string }

// mutationsFail holds each rewrite of k's source to failing parity under
// opts; each must apply (mutantFails).
func mutationsFail(t *testing.T, k *ir.Kernel, src []byte, ms []mutation, opts parity.Options) {
	for _, m := range ms {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			mutantFails(t, k, src, m.from, m.to, -1, opts, "a kernel with "+m.name)
		})
	}
}

// TestBatchedRowMutationsFail: parity fails for a batched rowwise kernel
// that reads a broadcast tensor at the wrong batch index, reads a strided
// tensor at the dense stride (columns, rows) or stores at it, maps a query
// head to the wrong grouped head, or gives the formulas the launch's row
// index for the element's. Each rewrite must apply.
func TestBatchedRowMutationsFail(t *testing.T) {
	needCompiler(t)
	kernels, src := rowBatchKernels(t)
	mutationsFail(t, kernels["gqa_rows"], src["gqa_rows"], []mutation{
		{"wrong broadcast index", "s += kgen_b0 * args.kgen_s_s0", "s += (kgen_b1 % 2u) * args.kgen_s_s0"},
		{"dense column stride of x", "kgen_j * args.kgen_x_s3", "kgen_j"},
		{"dense row stride of kv", "kgen_r * args.kgen_kv_s2", "kgen_r * args.cols"},
		{"dense output rows", "kgen_r * args.kgen_y_s2", "kgen_r * args.cols"},
		{"wrong group", "(kgen_b1 / args.group) * args.kgen_kv_s1", "(kgen_b1 % args.group) * args.kgen_kv_s1"},
		{"row index of the launch", "(int)kgen_r", "(int)kgen_row"},
	}, parity.Options{Seed: 33, Cols: []int{7, 64}, Rows: []int{1, 11}})
}

// TestBatchedElementMutationsFail: parity fails for a batched elementwise
// kernel that reads a strided input at the dense stride, maps a head to
// the wrong grouped head, takes the vector path whatever the launcher's
// kgen_aligned says, or places a slice in the launch instead of its batch
// element (the harness's bounds check stops the last two).
func TestBatchedElementMutationsFail(t *testing.T) {
	needCompiler(t)
	kernels, src := rowBatchKernels(t)
	mutationsFail(t, kernels["axpy_heads"], src["axpy_heads"], []mutation{
		{"dense stride of x", "x[(base + i) * args.kgen_x_s2]", "x[base + i]"},
		{"wrong group", "(kgen_b1 / args.group) * args.kgen_kv_s1", "(kgen_b1 % args.group) * args.kgen_kv_s1"},
		{"kgen_aligned ignored", "args.kgen_aligned != 0u", "true"},
		{"the slice's element in the batch", "const uint base = (kgen_t % kgen_tpe) * kPerThread;", "const uint base = kgen_t * kPerThread;"},
	}, parity.Options{Seed: 35, Sizes: []int{9, 1000}})
}
