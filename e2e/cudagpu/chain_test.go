package cudagpu

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgenrt"
	"github.com/kgen-dev/kgen/verify/parity"

	attn "github.com/kgen-dev/kgen/testdata/golden/cuda_attention/want/gen/kernels"
)

// chainShapes: the CPU harness's chain shapes (n within a block, at its
// edge, many blocks; k = 0; empty rows) plus the CUDA kernel's own edges:
// rows and keys past a 64-row / 64-key block, k and p wider than one chunk
// of 128 (two chunks of k per score block, two passes of p), and shapes
// whose rows are 16-byte aligned (the cp.async path) beside ones that are
// not (the element path). A batched check binds every tensor with gaps
// (parity.BatchGap), so its first matrix is aligned where its row stride
// is a multiple of 8 (k or p ≡ 5 mod 8) and the others are not.
var chainShapes = append(append([]parity.ChainShape(nil), parity.DefaultChainShapes...),
	parity.ChainShape{M: 65, N: 130, K: 64, P: 64}, parity.ChainShape{M: 70, N: 300, K: 128, P: 128},
	parity.ChainShape{M: 40, N: 150, K: 13, P: 5}, parity.ChainShape{M: 70, N: 140, K: 125, P: 125},
	parity.ChainShape{M: 33, N: 77, K: 136, P: 200}, parity.ChainShape{M: 129, N: 129, K: 80, P: 80})

// TestChainParity: the CUDA port of the attention chains (the golden
// project testdata/golden/cuda_attention: attention, and attention_prefill
// batched over [b, h] with GQA and the causal mask) × dtype against the
// float64 reference with the bound of the port's streaming order
// (ir.Kernel.ChainBlock, ChainWeightUnit).
func TestChainParity(t *testing.T) {
	cfg, err := config.Load(filepath.Join("..", "..", "testdata", "golden", "cuda_attention", config.FileName))
	if err != nil {
		t.Fatal(err)
	}
	res, err := generate.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var report strings.Builder
	fmt.Fprintf(&report, "| variant | shapes | elements checked | failed | max |got-ref| |\n|---|---|---|---|---|\n")
	for _, k := range res.Kernels {
		var d *kgenrt.Kernel
		for _, x := range attn.Kernels() {
			if x.Name == k.Name {
				d = x
			}
		}
		if d == nil {
			t.Fatalf("%s is not in the golden package", k.Name)
		}
		port, err := kgenrt.CUDAPortOf(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := port.Ready(); err != nil {
			t.Skipf("CUDA port of %s cannot run here: %v", k.Name, err)
		}
		for _, v := range k.Variants {
			only := *k
			only.Variants = []ir.Variant{v}
			t.Run(v.HostName, func(t *testing.T) {
				results, err := parity.Check(context.Background(), &only, nil, parity.Options{Seed: 11, Chain: chainShapes,
					Backend: ir.CUDA, Run: gpuRunner(d, port)})
				if err != nil {
					t.Fatalf("%s: %v", v.HostName, err)
				}
				for _, r := range results {
					if r.Failed > 0 {
						t.Errorf("%s %dx%d: %d of %d elements outside tolerance; first: %s", r.HostName, r.Rows, r.Cols, r.Failed, r.Checked, r.First)
					}
				}
				for _, r := range parity.Summarize(results) {
					if !r.OK() {
						t.Errorf("%s", r)
					}
					fmt.Fprintf(&report, "| %s | %d | %d | %d | %.3g |\n", r.HostName, len(chainShapes), r.Lanes, r.Differ, r.MaxAbs)
				}
			})
		}
	}
	t.Logf("CUDA chain parity:\n%s", report.String())
	saveReport("parity_chain.md", report.String())
}
