package cudagpu

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
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

// decodeShapes are decode steps the CUDA port splits over the keys at
// parity's batch of 2 × 4 heads (ir.ChainCUDA.DecodeTuning): the CPU
// harness's (4 splits with a partial last one; 9 splits, the last of one
// key; k and p past 128; two of the part's 16-row blocks) and a model's
// head size against a 4096-key and a 16384-key cache (16 splits of 256 and
// of 1024 keys).
var decodeShapes = []parity.ChainShape{{M: 1, N: 1000, K: 16, P: 40}, {M: 3, N: 2049, K: 8, P: 9}, {M: 2, N: 700, K: 136, P: 130},
	{M: 20, N: 600, K: 16, P: 16}, {M: 1, N: 4096, K: 128, P: 128}, {M: 4, N: 16384, K: 128, P: 128}}

// TestDecodeParity: the CUDA port's flash decoding (attention_prefill of
// the golden cuda_attention project: its part and combine launched one by
// one) × dtype at decodeShapes over parity's gapped batched views, every
// key visible and then the causal mask at offset 0 (the later splits see
// no key), against the float64 reference.
func TestDecodeParity(t *testing.T) {
	cfg, err := config.Load(filepath.Join("..", "..", "testdata", "golden", "cuda_attention", config.FileName))
	if err != nil {
		t.Fatal(err)
	}
	res, err := generate.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var k *ir.Kernel
	for _, x := range res.Kernels {
		if x.Name == "attention_prefill" {
			k = x
		}
	}
	d := attn.AttentionPrefill.Describe()
	port, err := kgenrt.CUDAPortOf(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := port.Ready(); err != nil {
		t.Skipf("CUDA port of attention_prefill cannot run here: %v", err)
	}
	var report strings.Builder
	fmt.Fprintf(&report, "| variant | offset | shapes | elements checked | failed | max |got-ref| |\n|---|---|---|---|---|---|\n")
	for _, off := range []float64{1 << 20, 0} {
		results, err := parity.Check(context.Background(), k, nil, parity.Options{Seed: 13, Chain: decodeShapes,
			Params: map[string]float64{"offset": off}, Backend: ir.CUDA, Run: gpuRunner(d, port)})
		if err != nil {
			t.Fatalf("offset %g: %v", off, err)
		}
		for _, r := range results {
			if r.Failed > 0 || r.Checked == 0 {
				t.Errorf("%s %dx%d offset %g: %d of %d elements outside tolerance; first: %s", r.HostName, r.Rows, r.Cols, off, r.Failed, r.Checked, r.First)
			}
		}
		for _, r := range parity.Summarize(results) {
			if !r.OK() {
				t.Errorf("%s", r)
			}
			fmt.Fprintf(&report, "| %s | %g | %d | %d | %d | %.3g |\n", r.HostName, off, len(decodeShapes), r.Lanes, r.Differ, r.MaxAbs)
		}
	}
	t.Logf("CUDA decode parity:\n%s", report.String())
	saveReport("parity_decode.md", report.String())
}

// TestDecodeLauncher: a decoder layer's decode step through the generated
// launcher and the CUDA port (which takes the split itself): 32 query
// heads, 8 KV heads, head_dim 128, one query row against the first 4096
// rows of a [1, 8, 4500, 128] bf16 cache (a view, no copy), against
// attention written out in float64 from the same bf16 values.
func TestDecodeLauncher(t *testing.T) {
	d := attn.AttentionPrefill.Describe()
	port, err := kgenrt.CUDAPortOf(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := port.Ready(); err != nil {
		t.Skipf("CUDA port of attention_prefill cannot run here: %v", err)
	}
	const h, hk, dim, n, maxSeq = 32, 8, 128, 4096, 4500
	sizes, err := d.Launch[kgenrt.CUDA].Sizes(map[string]int{"m": 1, "n": n, "k": dim, "p": dim, "b": 1, "h": h, "group": h / hk})
	if err != nil {
		t.Fatal(err)
	}
	if sizes[ir.SplitsField] < 2 {
		t.Fatalf("%d split(s): the test needs the flash-decoding form", sizes[ir.SplitsField])
	}
	rng := rand.New(rand.NewPCG(3, 4))
	vals := func(count int) []float32 {
		out := make([]float32, count)
		for i := range out {
			out[i] = kgenrt.RoundBF16(float32(rng.NormFloat64()))
		}
		return out
	}
	qv, kv, vv := vals(h*dim), vals(hk*maxSeq*dim), vals(hk*maxSeq*dim)
	q, err := kgenrt.FromFloat32(kgenrt.BF16, qv, 1, h, 1, dim)
	if err != nil {
		t.Fatal(err)
	}
	view := func(v []float32) *kgenrt.Tensor {
		c, err := kgenrt.FromFloat32(kgenrt.BF16, v, 1, hk, maxSeq, dim)
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.Slice(2, 0, n)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	kc, vc := view(kv), view(vv)
	o, err := kgenrt.New(kgenrt.BF16, 1, h, 1, dim)
	if err != nil {
		t.Fatal(err)
	}
	scale := float32(1 / math.Sqrt(dim))
	if err := attn.AttentionPrefill.Run(kgenrt.CUDA, q, kc, vc, o, scale, n-1); err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for hd := range h {
		g := hd / (h / hk)
		s := make([]float64, n)
		mx := math.Inf(-1)
		for j := range n {
			for c := range dim {
				s[j] += float64(qv[hd*dim+c]) * float64(kv[(g*maxSeq+j)*dim+c])
			}
			s[j] *= float64(scale)
			mx = math.Max(mx, s[j])
		}
		l := 0.0
		for j := range s {
			s[j] = math.Exp(s[j] - mx)
			l += s[j]
		}
		for c := range dim {
			want := 0.0
			for j := range n {
				want += s[j] * float64(vv[(g*maxSeq+j)*dim+c])
			}
			want /= l
			got := float64(o.Float32At(hd*dim + c))
			worst = math.Max(worst, math.Abs(got-want))
			if math.Abs(got-want) > 1e-2 || math.IsNaN(got) {
				t.Fatalf("head %d column %d: %v, want %v", hd, c, got, want)
			}
		}
	}
	t.Logf("decode through the launcher (%d splits of %d keys): max |got-want| %.3g", sizes[ir.SplitsField], sizes[ir.ChunkField], worst)
}

// TestDecodeDescriptor (no GPU needed): the generated descriptor of a
// batched chain with a CUDA port hands the split to the port — PortSplit
// on kgen_splits, which the CUDA launch derives — and Validate accepts it;
// the part's CUDA grid runs over the KV heads (b · h / group along z).
func TestDecodeDescriptor(t *testing.T) {
	d := attn.AttentionPrefill.Describe()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	s := d.PortSplit
	if s == nil || s.Backend != kgenrt.CUDA || s.Field != ir.SplitsField || s.Above != 1 || len(d.Phases) != 2 {
		t.Fatalf("PortSplit %+v with %d phases; want the CUDA port to take the two phases for %s > 1", s, len(d.Phases), ir.SplitsField)
	}
	sizes, err := d.Launch[kgenrt.CUDA].Sizes(map[string]int{"m": 1, "n": 16384, "k": 128, "p": 128, "b": 2, "h": 32, "group": 4})
	if err != nil {
		t.Fatal(err)
	}
	grid, err := d.Phases[0].Launch[kgenrt.CUDA].GridSize(sizes)
	if err != nil {
		t.Fatal(err)
	}
	if grid[2] != 2*32/4 || grid[0] != sizes[ir.SplitsField]*128 {
		t.Errorf("part grid %v at %d splits; want %d blocks along x, 16 KV heads along z", grid, sizes[ir.SplitsField], sizes[ir.SplitsField])
	}
}
