package cudacpu

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/e2e/internal/buildcache"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/parity"
)

// decodeShapes are decode steps the CUDA port splits over the keys
// (ir.ChainCUDA.DecodeTuning at parity's batch of 2 × 4 heads): one row
// against 1000 keys (4 splits of 256, the last partial), 3 rows against
// 2049 (9 splits, the last of one key), 2 rows with k and p past the
// kernel's 128 columns (two chunks of k, two passes of p) against 700, and
// 20 rows (two of the part's 16-row blocks) against 600.
var decodeShapes = []parity.ChainShape{{M: 1, N: 1000, K: 16, P: 40}, {M: 3, N: 2049, K: 8, P: 9}, {M: 2, N: 700, K: 136, P: 130}, {M: 20, N: 600, K: 16, P: 16}}

// decodeOffsets: every key visible, then the causal mask at offset 0,
// where the later splits see no key at all (their max is -inf, their
// weight in the combine 0).
var decodeOffsets = []float64{4000, 0}

// TestDecodeOnCPU: the CUDA port's flash decoding (attention_prefill of
// the golden cuda_attention project: its part and combine entry points,
// launched one by one as the port launches them) × dtype at decodeShapes
// over gapped batched views, against the float64 reference.
func TestDecodeOnCPU(t *testing.T) {
	tc := findToolchain(t)
	k, src := goldenKernel(t, "cuda_attention", "attention_prefill")
	for _, sh := range decodeShapes {
		sizes, err := k.Launch(ir.CUDA).Sizes(map[string]int{"m": sh.M, "n": sh.N, "k": sh.K, "p": sh.P, "b": 2, "h": 4, "group": 2})
		if err != nil {
			t.Fatal(err)
		}
		if sizes[ir.SplitsField] < 2 {
			t.Fatalf("%v: %d split(s) on CUDA; the test needs the flash-decoding form", sh, sizes[ir.SplitsField])
		}
		t.Logf("%v: %d splits of %d keys", sh, sizes[ir.SplitsField], sizes[ir.ChunkField])
	}
	b := buildKernels(t, tc, k, src, nil)
	for _, off := range decodeOffsets {
		results := checkKernels(t, b, parity.Options{Seed: 31, Chain: decodeShapes, Params: map[string]float64{"offset": off}})
		for _, r := range results {
			if r.Checked == 0 {
				t.Errorf("%s: nothing checked", r.HostName)
			}
		}
		judge(t, results)
	}
}

// TestDecodeCatchesMutations: the CPU run of the flash-decoding phases
// fails each planted bug (every rewrite must apply; every variant must
// fail at the shape it breaks, with every key visible).
func TestDecodeCatchesMutations(t *testing.T) {
	tc := findToolchain(t)
	k, src := goldenKernel(t, "cuda_attention", "attention_prefill")
	for _, m := range []struct {
		name     string
		shape    parity.ChainShape
		from, to []string
		only16   bool // a rewrite of the tensor-core body: the 16-bit variants must fail
	}{
		{"a split's partial max dropped (written as 0)", decodeShapes[0],
			[]string{"% args.m] = kgen_m;", "% args.m] = kgen_mx[kgen_r];"}, []string{"% args.m] = 0.0f;", "% args.m] = 0.0f;"}, false},
		{"a packed row reads the group's first query head", decodeShapes[0],
			[]string{"return kgen_r / args.m * args.kgen_q_s1 + "}, []string{"return "}, false},
		{"a warp's max left out of the block's meet", decodeShapes[0],
			[]string{"kgen_wm[kgen_warp][kgen_g + 8 * kgen_h] = kgen_mx[kgen_h];"}, []string{"kgen_wm[kgen_warp][kgen_g + 8 * kgen_h] = 0.0f;"}, true},
		{"the combine's rescale of the outputs left out", decodeShapes[0],
			[]string{"kgen_osum += kgen_ws0[kgen_w * args.p + kgen_c] * kgen_f;"}, []string{"kgen_osum += kgen_ws0[kgen_w * args.p + kgen_c];"}, false},
		{"the last split's tail skipped", decodeShapes[0], // its last 40 keys
			[]string{"unsigned kgen_nend = min(args.n, kgen_key0 + args.kgen_chunk);"}, []string{"unsigned kgen_nend = min(args.n / 64 * 64, kgen_key0 + args.kgen_chunk);"}, false},
		{"the combine one split short", decodeShapes[0],
			[]string{"for (unsigned kgen_s = 0; kgen_s < args.kgen_splits; ++kgen_s) {\n        const unsigned long long kgen_w"},
			[]string{"for (unsigned kgen_s = 0; kgen_s + 1 < args.kgen_splits; ++kgen_s) {\n        const unsigned long long kgen_w"}, false},
	} {
		t.Run(m.name, func(t *testing.T) {
			text := string(src)
			for i, from := range m.from {
				if !strings.Contains(text, from) {
					t.Fatalf("the rewrite %q does not apply", from)
				}
				text = strings.ReplaceAll(text, from, m.to[i])
			}
			b := buildKernels(t, tc, k, []byte(text), nil)
			checked := *k
			if m.only16 {
				checked.Variants = slices.DeleteFunc(slices.Clone(k.Variants), func(v ir.Variant) bool { return v.DType == dtype.F32 })
			}
			results, err := parity.Check(context.Background(), &checked, nil, parity.Options{Seed: 5, Chain: []parity.ChainShape{m.shape},
				Params: map[string]float64{"offset": 4000}, Backend: ir.CUDA, Run: b.runner()})
			if err != nil {
				t.Logf("fails as it must: the run stops: %v", buildcache.FirstLines(err.Error(), 2))
				return
			}
			for _, r := range results {
				if r.Failed == 0 {
					t.Errorf("%s: %v passes with %s", r.HostName, m.shape, m.name)
				} else {
					t.Logf("%s fails as it must: %d of %d elements", r.HostName, r.Failed, r.Checked)
				}
			}
		})
	}
}
