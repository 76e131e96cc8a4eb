package ir_test

import (
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// decodeSpec is a GQA decode chain with a CUDA port; kv is the KV
// tensors' batch and q's the query's.
func decodeSpec(q, kv string) string {
	return `
kernel: dec
kind: matmul
dtypes: [f32, bf16]
matmul:
  batch: [b, h]
  a: {name: q, batch: ` + q + `}
  b: {name: kc, layout: col_major, batch: ` + kv + `}
  then: {name: v, batch: ` + kv + `}
params:
  - {name: scale, type: f32}
let:
  - s: acc * scale
  - e: exp(s - row_max(s))
outputs:
  - o: acc2 / row_sum(e)
ports: {metal: generated, cuda: generated}
`
}

// TestDecodePack: the CUDA part packs the query heads of a grouped last
// batch axis (a runtime or a constant group), and packs nothing (group 1)
// when the grouped axis is another.
func TestDecodePack(t *testing.T) {
	for _, c := range []struct {
		q, kv, group string
		groupConst   int
	}{
		{"[b, h]", "[b, h / group]", "group", 0},
		{"[b, h]", "[b, h / 4]", "", 4},
		{"[b, h]", "[b / group, h]", "", 1},
		{"[b, h]", "[b, h]", "", 1},
	} {
		k := mustBuild(t, decodeSpec(c.q, c.kv))
		p := k.Matmul().Chain.CUDA.Pack
		if p == nil || p.Axis != 1 || p.Group != c.group || p.Const != c.groupConst {
			t.Errorf("kv %s: pack %+v, want group %q / %d on axis 1", c.kv, p, c.group, c.groupConst)
		}
	}
}

// TestDecodeSplitCUDA: the CUDA launch's split for a decode step of 32
// query heads over 8 KV heads fills about DecodeGroupsCUDA part blocks
// (the heads packed: 8 blocks per split), in whole 64-key blocks, and a
// prefill's grid takes no split.
func TestDecodeSplitCUDA(t *testing.T) {
	k := mustBuild(t, decodeSpec("[b, h]", "[b, h / group]"))
	l := k.Launch(ir.CUDA)
	for _, c := range []struct{ m, n, splits, chunk int }{
		{1, 4096, 32, 128}, {1, 16384, 64, 256}, {1, 100, 1, 128}, {4096, 4096, 1, 4096},
	} {
		sizes, err := l.Sizes(map[string]int{"m": c.m, "n": c.n, "k": 128, "p": 128, "b": 1, "h": 32, "group": 4})
		if err != nil {
			t.Fatal(err)
		}
		if sizes[ir.SplitsField] != c.splits || sizes[ir.ChunkField] != c.chunk {
			t.Errorf("m %d n %d: %d splits of %d keys, want %d of %d", c.m, c.n, sizes[ir.SplitsField], sizes[ir.ChunkField], c.splits, c.chunk)
		}
		grid, err := k.Matmul().Decode.Part.LaunchOn(ir.CUDA).GridSize(sizes)
		if err != nil {
			t.Fatal(err)
		}
		if c.splits > 1 && (grid[0]/128 != c.splits || grid[2] != 8) {
			t.Errorf("m %d n %d: part grid %v, want %d blocks along x, 8 KV heads along z", c.m, c.n, grid, c.splits)
		}
	}
	if !strings.Contains(strings.Join(k.Describe(), "\n"), "flash decoding") {
		t.Error("the schedule does not mention the split")
	}
}
