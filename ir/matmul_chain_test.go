package ir_test

import (
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

const chainSpec = `kernel: attn
kind: matmul
dtypes: [f32]
matmul:
  a: q
  b: {name: kc, layout: col_major}
  then: {name: v, layout: col_major}
params:
  - {name: scale, type: f32}
let:
  - s: acc * scale
  - e: exp(s - row_max(s))
outputs:
  - o: acc2 / row_sum(e)
`

// TestChainLayout: a chain's bindings (V [n, p], col-major stored [p, n]),
// args (m, n, k, p, then params), outputs [m, p], the row-owning tile and
// the output strip's width within Metal's threadgroup memory.
func TestChainLayout(t *testing.T) {
	k := mustBuild(t, chainSpec)
	mm := k.Matmul()
	if mm.Chain == nil || mm.Chain.Then.Name != "v" || !mm.Chain.Then.ColMajor || mm.Chain.Then.Acc != "acc2" {
		t.Fatalf("chain %+v", mm.Chain)
	}
	var got []string
	for _, b := range k.Bindings {
		got = append(got, b.Name+b.Shape.String())
	}
	if strings.Join(got, " ") != "q[m, k] kc[n, k] v[p, n] o[m, p] args[]" {
		t.Errorf("bindings %v", got)
	}
	var fields []string
	for _, f := range k.ArgsBinding().Fields {
		fields = append(fields, f.Name)
	}
	if strings.Join(fields, " ") != "m n k p scale" {
		t.Errorf("args %v", fields)
	}
	if mm.Tile != ir.RowTile || mm.Chain.PMax != 768 || mm.ThreadgroupBytes > 32768 {
		t.Errorf("tile %s, PMax %d, %d bytes", mm.Tile, mm.Chain.PMax, mm.ThreadgroupBytes)
	}
	if st := k.Stages(); len(st) != 2 || st[0].Suffix != "score" || st[1].Suffix != "write" {
		t.Errorf("stages %+v", st)
	}
}

// TestChainMisuse: every form the streaming chain cannot compute is a
// positioned error at the field or formula that makes it so.
func TestChainMisuse(t *testing.T) {
	cases := []struct {
		name  string
		edits []string // from, to pairs
		want  string
	}{
		{"two bs", []string{"b: {name: kc, layout: col_major}", "b: [kc, {name: kd, acc: g}]", "s: acc * scale", "s: acc * scale + g", "o: acc2 /", "o: acc3 /"},
			"6:18: a chain (then) takes one b"},
		{"epilogue input", []string{"params:", "inputs:\n  - {name: bias, shape: [n]}\nparams:", "s: acc * scale", "s: acc * scale + bias"},
			"9:12: input bias: a chain's formulas see acc, acc2, params and constants"},
		{"no weights", []string{"e: exp(s - row_max(s))", "e: exp(s - row_max(acc))"}, "7:16: a chain streams softmax(s)·v: write the weights as a let e: exp(s - row_max(s))"},
		{"other output", []string{"o: acc2 / row_sum(e)", "o: acc2 * row_sum(e)"}, "14:5: output o: a chain streams softmax"},
		{"acc2 in a score", []string{"s: acc * scale", "s: acc * scale + acc2"}, "11:5: let s: acc2 and the weights are read only by the output"},
		{"tile", []string{"params:", "tile: {bm: 32}\nparams:"}, "8:7: a chain uses the row-owning tile"},
		{"param named like a size", []string{"{name: scale, type: f32}", "{name: p, type: f32}", "acc * scale", "acc * p"}, "9:12: param p: the matmul's args struct has the size field p"},
		{"two outputs", []string{"o: acc2 / row_sum(e)", "o: acc2 / row_sum(e)\n  - o2: acc2 / row_sum(e)"}, "2:7: a chain has one output, acc2 / row_sum(e); this spec has 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := chainSpec
			for i := 0; i < len(c.edits); i += 2 {
				if !strings.Contains(spec, c.edits[i]) {
					t.Fatalf("%q is not in the spec", c.edits[i])
				}
				spec = strings.Replace(spec, c.edits[i], c.edits[i+1], 1)
			}
			_, diags := build(t, spec)
			var all []string
			for _, d := range diags {
				all = append(all, d.String())
			}
			if !strings.Contains(strings.Join(all, "\n"), c.want) {
				t.Errorf("diagnostics %q, want one containing %q", all, c.want)
			}
		})
	}
}

// TestChainCUDAKeyLimit: the CUDA chain skips key blocks only for the
// causal form it can prove (select(col > row + E, -inf, x), E uniform).
func TestChainCUDAKeyLimit(t *testing.T) {
	for _, c := range []struct {
		score string
		skip  bool
	}{
		{"select(col > row + offset, -inf, acc * scale)", true},
		{"select(col > row, -inf, acc * scale + f32(offset))", true},
		{"select(col > row + offset, -inf, acc * scale) + 0", false},
		{"select(col >= row + offset, -inf, acc * scale)", false},
		{"select(col > row + col, -inf, acc * scale + f32(offset))", false},
		{"select(col > row + offset, 0, acc * scale)", false},
	} {
		src := "kernel: ch\nkind: matmul\ndtypes: [bf16]\nmatmul: {a: q, b: {name: kc, layout: col_major}, then: v}\nparams:\n  - {name: scale, type: f32}\n  - {name: offset, type: i32}\nlet:\n  - s: " + c.score +
			"\n  - e: exp(s - row_max(s))\noutputs:\n  - o: acc2 / row_sum(e)\nports: {metal: generated, cuda: generated}\n"
		k, diags := build(t, src)
		if len(diags) > 0 || k == nil {
			t.Fatalf("%s: %v", c.score, diags)
		}
		ch := k.Matmul().Chain
		if ch.CUDA == nil || (ch.CUDA.KeyLimit != nil) != c.skip {
			t.Errorf("%s: CUDA %+v, want skipping %v", c.score, ch.CUDA, c.skip)
		}
	}
}
