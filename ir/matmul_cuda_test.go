package ir_test

import (
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// TestCUTLASSPlan: `cuda: generated` on a matmul gives the IR's CUTLASS
// plan — EVT leaves in the epilogue stage's argument order, an [n] input a
// row broadcast, [m] a column broadcast, the [m, n] input the C source —
// CUTLASS for the 16-bit dtypes, the SIMT GEMM (no alignment) for f32;
// what it cannot plan is refused at the port's line and column with the
// reason.
func TestCUTLASSPlan(t *testing.T) {
	head := "kernel: k\nkind: matmul\ndtypes: [f32, bf16]\nmatmul: {a: x, b: w}\nports: {metal: generated, cuda: generated}\n"
	k := mustBuild(t, head+"inputs:\n  - {name: s, shape: [m]}\n  - {name: bias, shape: [n]}\n  - {name: res, shape: [m, n]}\nparams:\n  - {name: alpha, type: f32}\noutputs:\n  - y: alpha * acc * s + bias + res\n")
	c := k.Matmul().CUDA
	if c == nil {
		t.Fatal("no CUDA plan")
	}
	var got []string
	for _, l := range c.Leaves {
		got = append(got, l.Name+":"+l.Kind.String())
	}
	want := "s:column broadcast bias:row broadcast res:C source acc:accumulator"
	if strings.Join(got, " ") != want {
		t.Errorf("leaves %v, want %s", got, want)
	}
	if c.Leaves[3].Kind != ir.EVTAcc || c.Leaves[3].Binding != -1 || c.Leaves[1].Binding != 3 {
		t.Errorf("leaf bindings %+v", c.Leaves)
	}
	if c.Source != 4 || len(c.DTypes) != 1 || c.DTypes[0] != dtype.BF16 || c.Align != 8 {
		t.Errorf("source %d, dtypes %v, align %d", c.Source, c.DTypes, c.Align)
	}
	// bf16 takes any k and n too: what TMA cannot load runs its SIMT GEMM.
	if len(c.SIMT) != 1 || c.SIMT[0] != dtype.F32 || c.AlignOf(dtype.F32) != 1 || c.AlignOf(dtype.BF16) != 1 {
		t.Errorf("simt %v, align f32 %d bf16 %d", c.SIMT, c.AlignOf(dtype.F32), c.AlignOf(dtype.BF16))
	}
	if p := c.SIMTParts(); len(c.Unaligned) != 1 || c.Unaligned[0] != dtype.BF16 || len(p) != 2 || p[0] != dtype.F32 || p[1] != dtype.BF16 {
		t.Errorf("unaligned %v, SIMT parts %v", c.Unaligned, p)
	}
	if e := c.Entries(); len(e) != 2 || e[0] != dtype.BF16 || e[1] != dtype.F32 {
		t.Errorf("entries %v", e)
	}
	if k2 := mustBuild(t, strings.Replace(head, "cuda: generated", "cuda: null", 1)+"outputs:\n  - y: acc\n"); k2.Matmul().CUDA != nil {
		t.Error("a plan without cuda: generated")
	}
	for _, c := range []struct{ body, want string }{
		{"inputs:\n  - {name: a, shape: [m, n]}\n  - {name: b, shape: [m, n]}\noutputs:\n  - y: acc + a + b\n", "more than one [m, n] epilogue input"},
		{"outputs:\n  - y: acc\n  - z: 2 * acc\n", "stores one output"},
		{"params:\n  - {name: c, type: i32}\noutputs:\n  - y: acc * f32(c)\n", "param c is an integer"},
		{"outputs:\n  - y: select(col > row, 0, acc)\n", "reads the index row"},
	} {
		_, diags := build(t, head+c.body)
		if len(diags) == 0 || !strings.Contains(diags[0].String(), "specs/k.yaml:5:") || !strings.Contains(diags[0].String(), c.want) {
			t.Errorf("got %v, want a positioned %q", diags, c.want)
		}
	}
	f32 := mustBuild(t, strings.Replace(head, "[f32, bf16]", "[f32]", 1)+"outputs:\n  - y: acc\n").Matmul().CUDA
	if f32 == nil || len(f32.DTypes) != 0 || len(f32.SIMT) != 1 {
		t.Errorf("f32 only: %+v", f32)
	}
}

// TestCUTLASSSplitPlan: a row-reducing matmul and a gated one get the
// split's CUDA form (ir.SplitCUDA) — the same Split as Metal's, whose
// workspaces and second phase the CUDA port reads — with a block per row
// (or a per-element epilogue) in phase 2; the gated split is CUDA's only
// (no Metal phases); what the split cannot do is refused at the port.
func TestCUTLASSSplitPlan(t *testing.T) {
	head := "kernel: k\nkind: matmul\ndtypes: [f32, f16, bf16]\nmatmul: {a: x, b: w}\nports: {metal: generated, cuda: generated}\n"
	k := mustBuild(t, head+"inputs:\n  - {name: g, shape: [n]}\nparams:\n  - {name: eps, type: f32}\nlet:\n  - inv: rsqrt(row_mean(acc * acc) + eps)\noutputs:\n  - y: acc * inv * g\n")
	mm := k.Matmul()
	if mm.CUDA == nil || mm.Split == nil || mm.Split.CUDA == nil {
		t.Fatalf("no CUDA split: plan %v, split %v", mm.CUDA, mm.Split)
	}
	sc := mm.Split.CUDA
	if !mm.Split.Metal || len(k.Phases()) != 2 {
		t.Errorf("the row kernel's Metal phases are gone: metal %v, %d phases", mm.Split.Metal, len(k.Phases()))
	}
	if sc.Tile.Threads() != 256 || sc.AlignD != 4 || sc.MaxElems != 1<<32-1 || sc.MaxRowBlocks != 1<<20 {
		t.Errorf("CUDA split %+v", sc)
	}
	if len(mm.CUDA.Leaves) != 0 || mm.CUDA.Source != -1 || len(mm.CUDA.DTypes) != 2 {
		t.Errorf("a split plan has EVT leaves or the wrong dtypes: %+v", mm.CUDA)
	}
	if p := mm.CUDA.SIMTParts(); len(p) != 3 || p[0] != dtype.F32 || mm.CUDA.AlignOf(dtype.BF16) != 1 || len(mm.CUDA.Entries()) != 3 {
		t.Errorf("the split's SIMT workspace GEMMs: parts %v (want f32, then the 16-bit fallbacks), bf16 alignment %d, entries %v", p, mm.CUDA.AlignOf(dtype.BF16), mm.CUDA.Entries())
	}
	rows := mm.Split.Rows
	if rows.Entry != "k_rows" || rows.Bindings[0].Name != "kgen_ws0" || rows.From[0] != -1 || !strings.Contains(sc.Comment, "one block of 256 threads per row") {
		t.Errorf("phase 2: %s %v %v %q", rows.Entry, rows.Bindings, rows.From, sc.Comment)
	}
	if !strings.Contains(strings.Join(k.Describe(), "\n"), "CUDA split, two launches in one library call") {
		t.Errorf("the schedule does not describe the CUDA split:\n%s", strings.Join(k.Describe(), "\n"))
	}

	// What the EVT refuses, phase 2 takes: the element's position, two outputs.
	causal := mustBuild(t, head+"let:\n  - s: select(col > row, -inf, acc)\n  - e: exp(s - row_max(s))\noutputs:\n  - y: e / row_sum(e)\n  - z: s\n")
	if causal.Matmul().CUDA == nil || causal.Matmul().Split.CUDA == nil {
		t.Error("a causal row kernel with two outputs has no CUDA split")
	}

	gated := "kernel: k\nkind: matmul\ndtypes: [bf16]\nmatmul:\n  a: x\n  b: [{name: wg, acc: g, layout: col_major}, {name: wu, acc: u, layout: col_major}]\nports: {cuda: generated}\noutputs:\n  - y: g * u\n"
	k = mustBuild(t, gated)
	mm = k.Matmul()
	// Metal's own form for m <= 8 is the matrix-vector phase (matmul_gemv.go), not the split.
	if mm.Split == nil || mm.Split.CUDA == nil || mm.Split.Metal || len(k.Phases()) != 1 || k.Phases()[0].Suffix != "gemv" {
		t.Fatalf("gated: split %+v, phases %v", mm.Split, k.Phases())
	}
	if len(mm.Split.Space) != 2 || mm.Split.Rows.Entry != "k_epilogue" || !strings.Contains(mm.Split.CUDA.Comment, "per element") {
		t.Errorf("gated: %d workspaces, phase 2 %s %q", len(mm.Split.Space), mm.Split.Rows.Entry, mm.Split.CUDA.Comment)
	}
	// f32 storage alone: the SIMT GEMM writes the workspace.
	f32 := mustBuild(t, strings.Replace(head, "[f32, f16, bf16]", "[f32]", 1)+"outputs:\n  - y: acc / row_sum(acc)\n").Matmul()
	if f32.CUDA == nil || f32.Split.CUDA == nil || len(f32.CUDA.DTypes) != 0 || len(f32.CUDA.SIMT) != 1 {
		t.Errorf("f32 split: plan %+v", f32.CUDA)
	}
	for _, c := range []struct{ spec, want string }{
		{strings.Replace(gated, "acc: u, layout: col_major", "acc: u", 1), "different layouts"},
		{strings.Replace(head, "{a: x, b: w}", "{a: {name: x, dtype: bf16}, b: w}", 1) + "outputs:\n  - y: acc / row_sum(acc)\n", "operand x pins its dtype"},
	} {
		_, diags := build(t, c.spec)
		if len(diags) == 0 || !strings.Contains(diags[0].String(), "specs/k.yaml:") || !strings.Contains(diags[0].String(), c.want) {
			t.Errorf("got %v, want a positioned %q", diags, c.want)
		}
	}
}

// TestCUDATiles: `cuda_tiles:` replaces kgen's problem classes with the
// spec's, named by their max_m, and every misfit is an error at its field.
func TestCUDATiles(t *testing.T) {
	head := "kernel: k\nkind: matmul\ndtypes: [bf16]\nmatmul: {a: x, b: w}\nports: {metal: generated, cuda: generated}\noutputs:\n  - y: acc\ncuda_tiles:\n"
	k := mustBuild(t, head+"  - {max_m: 64, swap: true, tile: [128, 32, 128], stream_k: true}\n  - {tile: [64, 128, 64], schedule: pingpong, cluster: [1, 2]}\n")
	got := k.Matmul().CUDA.Configs
	want := []ir.GemmConfig{
		{Name: "m64", Tile: [3]int{128, 32, 128}, Cluster: [2]int{1, 1}, Schedule: "cooperative", MaxM: 64, Swap: true, StreamK: true},
		{Name: "any", Tile: [3]int{64, 128, 64}, Cluster: [2]int{1, 2}, Schedule: "pingpong"},
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("classes %+v, want %+v", got, want)
	}
	for _, c := range []struct{ body, at, want string }{
		{"  - {max_m: 64, tile: [128, 32, 128]}\n", "9:5", "the last cuda_tiles class serves every m left"},
		{"  - {tile: [128, 32, 128]}\n  - {tile: [128, 32, 128]}\n", "9:5", "only the last cuda_tiles class may leave out max_m"},
		{"  - {max_m: 64, tile: [128, 32, 128]}\n  - {max_m: 32, tile: [128, 32, 128]}\n  - {tile: [128, 32, 128]}\n", "10:5", "must grow"},
		{"  - {tile: [64, 32, 128]}\n", "9:12", "tile m 64: the cooperative schedule takes [128 256]"},
		{"  - {tile: [256, 32, 128], schedule: pingpong}\n", "9:12", "the pingpong schedule takes [64 128]"},
		{"  - {tile: [128, 48, 128]}\n", "9:12", "tile n 48"},
		{"  - {tile: [128, 32, 256]}\n", "9:12", "tile k 256"},
		{"  - {tile: [256, 256, 128]}\n", "9:12", "elements per pipeline stage"},
		{"  - {tile: [128, 32, 128], cluster: [4, 2]}\n", "9:37", "cluster 4×2"},
		{"  - {tile: [64, 32, 128], schedule: pingpong, stream_k: true}\n", "9:57", "stream_k needs the cooperative schedule"},
		{"  - {tile: [128, 32]}\n", "9:12", "takes 3 integers, not 2"},
		{"  - {tile: [128, 32, 128], swap: 1}\n", "9:34", "swap must be true or false"},
		{"  - {tile: [128, 32, 128], stream: true}\n", "9:28", "unknown cuda_tiles field \"stream\""},
		{"  - {swap: true}\n", "9:5", "needs tile"},
		{"  []\n", "9:3", "at least one problem class"},
	} {
		_, diags := build(t, head+c.body)
		if len(diags) == 0 || !strings.Contains(diags[0].String(), "specs/k.yaml:"+c.at+":") || !strings.Contains(diags[0].String(), c.want) {
			t.Errorf("%q: got %v, want %s: %q", c.body, diags, c.at, c.want)
		}
	}
	null := strings.Replace(head, "cuda: generated", "cuda: null", 1) + "  - {tile: [128, 32, 128]}\n"
	if _, diags := build(t, null); len(diags) == 0 || !strings.Contains(diags[0].String(), "specs/k.yaml:8:1:") || !strings.Contains(diags[0].String(), "needs kind: matmul and cuda: generated") {
		t.Errorf("cuda: null: %v", diags)
	}
}
