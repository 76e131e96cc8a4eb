package parity_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// causalCases are causal_attention's offsets with shapes that make them
// bite: a negative offset masks whole rows (row + offset < 0: NaN, 0/0, in
// the kernel and the reference), offset 0 is the square causal mask, and a
// large one leaves the later rows fully visible and the earlier ones
// masked across several 32-column blocks.
var causalCases = []struct {
	offset float64
	shapes []parity.ChainShape
	masked int // rows 0..masked-1 are fully masked
}{
	{-3, []parity.ChainShape{{9, 33, 7, 33}, {16, 100, 16, 40}}, 3},
	{0, []parity.ChainShape{{33, 64, 33, 64}, {9, 100, 16, 9}}, 0},
	{90, []parity.ChainShape{{16, 100, 16, 40}, {3, 1000, 9, 70}}, 0},
}

func causalAttention(t *testing.T) (*ir.Kernel, []byte) {
	kernels, src := chains(t)
	for _, k := range kernels {
		if k.Name == "causal_attention" {
			return k, src[k.Name]
		}
	}
	t.Fatal("no causal_attention built-in")
	return nil, nil
}

// TestCausalAttention runs causal_attention in every dtype at each of
// causalCases' offsets against the float64 reference, under the real lane
// map and then the scrambled one in shuffled lane order. The fully masked
// rows must be NaN in the reference (and so in the kernel, which parity
// compares NaN for NaN); no other row may be, outside the adversarial ones.
func TestCausalAttention(t *testing.T) {
	needCompiler(t)
	k, src := causalAttention(t)
	for _, c := range causalCases {
		params := map[string]float64{"offset": c.offset}
		for _, r := range checkAll(t, k, src, parity.Options{Seed: 21, Chain: c.shapes, Params: params}) {
			var rest []int
			for _, row := range r.NaNRows {
				if kind := parity.RowKindOf(row, r.Rows); row >= c.masked || kind == parity.NaNRow || kind == parity.PosInfRow || kind == parity.NegInfRow {
					rest = append(rest, row) // checkConfined's to judge
				}
			}
			for row := range c.masked {
				if !slices.Contains(r.NaNRows, row) {
					t.Errorf("%s offset %v: fully masked row %d is not NaN", r.HostName, c.offset, row)
				}
			}
			r.NaNRows = rest
			checkConfined(t, r)
		}
		checkAll(t, k, src, parity.Options{Seed: 22, Chain: c.shapes[:1], Params: params,
			MatrixLanes: mslcpu.ScrambledLanes, Orders: []mslcpu.LaneOrder{mslcpu.Shuffled}})
	}
}

// TestCausalMaskMutationFails: parity fails for a kernel whose mask is
// col >= row + offset (each query loses its own key) where the spec says
// col > row + offset; the rewrite is of the emitted source only, so the
// reference keeps the spec's mask.
func TestCausalMaskMutationFails(t *testing.T) {
	needCompiler(t)
	k, src := causalAttention(t)
	const from = "(col > ((int)((uint)(row) + (uint)(offset)))"
	if strings.Count(string(src), from) != 1 {
		t.Fatalf("the rewrite %q does not apply once", from)
	}
	mutated := []byte(strings.Replace(string(src), from, "(col >= ((int)((uint)(row) + (uint)(offset)))", 1))
	for _, c := range causalCases {
		results, err := parity.Check(context.Background(), k, mutated, parity.Options{Seed: 23, Chain: c.shapes[:1],
			Params: map[string]float64{"offset": c.offset}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range parity.Summarize(results) {
			if r.OK() {
				t.Errorf("%s offset %v: parity passes a mask of col >= row + offset: %s", r.HostName, c.offset, r)
			}
		}
	}
}

