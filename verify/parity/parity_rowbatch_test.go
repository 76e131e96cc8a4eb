package parity_test

import (
	"os"
	"path/filepath"
	"strings"
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

// rowBatchKernels builds rope_heads and gqa_rows with their MSL.
func rowBatchKernels(t *testing.T) (map[string]*ir.Kernel, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"kgen.yaml":             "version: 1\nspecs: specs\nout:\n  msl: gen/msl\n  go: gen/kernels\n",
		"specs/gqa_rows.yaml":   rowBatchSpec,
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
	kernels, src := rowKernels(t, filepath.Join(dir, "kgen.yaml"))
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
			for _, r := range checkAll(t, k, src[name], parity.Options{Seed: 31, Cols: []int{1, 7, 64, 4304}, Rows: []int{0, 1, 11}}) {
				if r.Checked == 0 && r.Rows > 0 {
					t.Errorf("%s: nothing checked", r.HostName)
				}
			}
		})
	}
}

// TestBatchedRowMutationsFail: parity fails for a batched rowwise kernel
// that reads a broadcast tensor at the wrong batch index, reads a strided
// tensor at the dense stride (columns, rows) or stores at it, or maps a
// query head to the wrong grouped head. Each rewrite must apply.
func TestBatchedRowMutationsFail(t *testing.T) {
	needCompiler(t)
	kernels, src := rowBatchKernels(t)
	k := kernels["gqa_rows"]
	mutations := []struct{ name, from, to string }{
		{"wrong broadcast index", "s += kgen_b0 * args.kgen_s_s0", "s += (kgen_b1 % 2u) * args.kgen_s_s0"},
		{"dense column stride of x", "kgen_j * args.kgen_x_s3", "kgen_j"},
		{"dense row stride of kv", "kgen_r * args.kgen_kv_s2", "kgen_r * args.cols"},
		{"dense output rows", "kgen_r * args.kgen_y_s2", "kgen_r * args.cols"},
		{"wrong group", "(kgen_b1 / args.group) * args.kgen_kv_s1", "(kgen_b1 % args.group) * args.kgen_kv_s1"},
		{"row index of the launch", "(int)kgen_r", "(int)kgen_row"},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			if !strings.Contains(string(src[k.Name]), m.from) {
				t.Fatalf("the rewrite %q does not apply", m.from)
			}
			mutantFails(t, k, src[k.Name], m.from, m.to, -1, parity.Options{Seed: 33, Cols: []int{7, 64}, Rows: []int{1, 11}}, "a kernel with a "+m.name)
		})
	}
}
