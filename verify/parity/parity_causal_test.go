package parity_test

import (
	"context"
	"os"
	"path/filepath"
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
			} else {
				t.Logf("col >= row + offset, offset %v: %s", c.offset, r)
			}
		}
	}
}

// indexMatmuls builds two downstream matmul specs whose formulas read row,
// col, m and n: a tiled epilogue (a lower-triangular product) and a
// row-owning causal softmax with a per-row let of row (split above n = 928).
func indexMatmuls(t *testing.T) ([]*ir.Kernel, map[string][]byte) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "specs"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"kgen.yaml": "version: 1\nspecs: specs\nout:\n  msl: gen/msl\n  go: gen/kernels\ngo:\n  package: kernels\n",
		"specs/tril.yaml": "kernel: tril\nkind: matmul\ndtypes: [f32, f16, bf16]\nmatmul: {a: x, b: w}\n" +
			"outputs:\n  - y: select(col > row, 0, acc) + f32(m - n) * 0.125\nports: {metal: generated, cuda: null, rocm: null}\n",
		"specs/causal_mm.yaml": "kernel: causal_mm\nkind: matmul\ndtypes: [f32, f16, bf16]\nmatmul: {a: x, b: w}\n" +
			"params:\n  - {name: offset, type: i32}\n" +
			"let:\n  - s: select(col > row + offset, -inf, acc)\n  - e: exp(s - row_max(s))\n  - r: f32(row % 3 + m % 2) * 0.25\n" +
			"outputs:\n  - y: e / row_sum(e) + r\nports: {metal: generated, cuda: null, rocm: null}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kernels, src := projectKernels(t, filepath.Join(dir, "kgen.yaml"))
	if len(kernels) != 2 || kernels[0].Matmul().Rows == nil || kernels[0].Matmul().NMax != 928 || kernels[1].Matmul().Rows != nil {
		t.Fatalf("want the row-owning causal_mm (NMax 928) and the tiled tril, got %d kernels", len(kernels))
	}
	return kernels, src
}

// indexShapes: tiles with ragged edges, a wide row within the strip and
// n = 1000, where the row-owning kernel's launcher takes the split form.
var indexShapes = []parity.MatmulShape{{1, 1, 1}, {9, 33, 17}, {33, 7, 8}, {9, 1000, 33}}

// TestMatmulIndicesParity: matmul formulas reading row, col, m and n pass
// parity in every dtype in each form — the tiled epilogue, the row-owning
// kernel and the split phases — under the real and the scrambled lane map;
// and fail it when the kernel passes the column as the row and the row as
// the column, in each form (the split's shape alone runs only its phases).
func TestMatmulIndicesParity(t *testing.T) {
	needCompiler(t)
	kernels, src := indexMatmuls(t)
	for _, k := range kernels {
		for _, lanes := range []mslcpu.MatrixLaneMap{mslcpu.AppleLanes, mslcpu.ScrambledLanes} {
			for _, r := range checkAll(t, k, src[k.Name], parity.Options{Seed: 9, Matmul: indexShapes, MatrixLanes: lanes}) {
				checkConfined(t, r)
			}
		}
		const from, to = "(int)kgen_i, (int)kgen_j", "(int)kgen_j, (int)kgen_i"
		if !strings.Contains(string(src[k.Name]), from) {
			t.Fatalf("%s: the rewrite %q does not apply", k.Name, from)
		}
		mutated := []byte(strings.ReplaceAll(string(src[k.Name]), from, to))
		forms := [][]parity.MatmulShape{{{33, 40, 8}}}
		if k.Matmul().Split != nil {
			forms = append(forms, []parity.MatmulShape{{9, 1000, 33}})
		}
		for _, shapes := range forms {
			results, err := parity.Check(context.Background(), k, mutated, parity.Options{Seed: 10, Matmul: shapes, Params: map[string]float64{"offset": 2}})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range parity.Summarize(results) {
				if r.OK() {
					t.Errorf("%s %v: parity passes row and col swapped: %s", r.HostName, shapes, r)
				} else {
					t.Logf("row and col swapped, %v: %s (%d results)", shapes, r, len(results))
				}
			}
		}
	}
}
