package ir_test

import (
	"testing"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// TestHIPGemmPlan: a plain or gated matmul with `rocm: generated` gets
// the HIP GEMM's plan and its launch (one block of 256 threads per 64×64
// output tile), a row-reducing one a block per 64 whole rows at any n, a
// batched one its batch elements along z; without the port a matmul has
// none.
func TestHIPGemmPlan(t *testing.T) {
	k := mustBuild(t, `
kernel: m
kind: matmul
dtypes: [f32, f16]
matmul:
  a: x
  b:
    - {name: wg, layout: col_major, acc: gate}
    - {name: wu, acc: up}
outputs:
  - y: gate * up
ports:
  rocm: generated
`)
	mm := k.Matmul()
	if mm.ROCm == nil || *mm.ROCm != ir.HIPTile {
		t.Fatalf("ROCm plan %v; want %v", mm.ROCm, ir.HIPTile)
	}
	l := k.Launch(ir.ROCm)
	if l.Threadgroup != [3]int{256, 1, 1} {
		t.Errorf("ROCm threadgroup %v; want 256 threads", l.Threadgroup)
	}
	for _, c := range []struct{ m, n, blocks int }{{1, 1, 1}, {64, 64, 1}, {65, 64, 2}, {130, 129, 9}, {0, 5, 0}} {
		sizes, err := l.Sizes(map[string]int{"m": c.m, "n": c.n, "k": 3, "elem_bytes": 4})
		if err != nil {
			t.Fatal(err)
		}
		grid, err := l.GridSize(sizes)
		if err != nil {
			t.Fatal(err)
		}
		if grid != [3]int{256 * c.blocks, 1, 1} {
			t.Errorf("m %d n %d: grid %v; want %d blocks of 256", c.m, c.n, grid, c.blocks)
		}
	}
	if got := mm.ROCm.LDSBytes(2); got != 4*16*(68+2*68) {
		t.Errorf("LDS of two Bs: %d bytes", got)
	}
	rows := mustBuild(t, `
kernel: r
kind: matmul
dtypes: [f32]
matmul: {a: x, b: w}
outputs:
  - y: acc / row_sum(acc)
ports:
  rocm: generated
`)
	rl := rows.Launch(ir.ROCm)
	sizes, err := rl.Sizes(map[string]int{"m": 130, "n": 1000, "k": 3, "elem_bytes": 4})
	if err != nil {
		t.Fatal(err)
	}
	if grid, err := rl.GridSize(sizes); err != nil || grid != [3]int{3 * 256, 1, 1} || rows.Matmul().ROCm == nil {
		t.Errorf("row-owning ROCm launch at m 130, n 1000: grid %v (%v); want 3 blocks of 256, whole rows each", grid, err)
	}
	batched := mustBuild(t, `
kernel: b
kind: matmul
dtypes: [f32]
matmul: {a: x, b: w, batch: [h]}
outputs:
  - y: acc
ports:
  rocm: generated
`)
	bl := batched.Launch(ir.ROCm)
	sizes, err = bl.Sizes(map[string]int{"m": 65, "n": 64, "k": 3, "h": 5, "elem_bytes": 4})
	if err != nil {
		t.Fatal(err)
	}
	if grid, err := bl.GridSize(sizes); err != nil || grid != [3]int{2 * 256, 1, 5} {
		t.Errorf("batched ROCm launch at m 65, n 64, h 5: grid %v (%v); want 2 blocks of 256 per batch element along z", grid, err)
	}
	plain := mustBuild(t, `
kernel: m
kind: matmul
dtypes: [f32]
matmul: {a: x, b: w}
outputs:
  - y: acc
`)
	if plain.Matmul().ROCm != nil {
		t.Errorf("a matmul without rocm: generated has a ROCm plan")
	}
}

// TestHIPGemmChain: a chain with rocm: generated gets the plan, one
// block of 256 threads per 64 query rows, and its streaming bound's key
// block is the plan's (ChainBlock).
func TestHIPGemmChain(t *testing.T) {
	k := mustBuild(t, `
kernel: c
kind: matmul
dtypes: [f32]
matmul: {a: q, b: {name: kc, layout: col_major}, then: v}
let:
  - e: exp(acc - row_max(acc))
outputs:
  - o: acc2 / row_sum(e)
ports:
  rocm: generated
`)
	l := k.Launch(ir.ROCm)
	sizes, err := l.Sizes(map[string]int{"m": 65, "n": 1000, "k": 3, "p": 300, "elem_bytes": 4})
	if err != nil {
		t.Fatal(err)
	}
	if grid, err := l.GridSize(sizes); err != nil || grid != [3]int{2 * 256, 1, 1} {
		t.Errorf("chain's ROCm launch at m 65: grid %v (%v); want 2 blocks of 256", grid, err)
	}
	if b := k.ChainBlock(ir.ROCm, dtype.F32); b != ir.HIPTile.BN {
		t.Errorf("ROCm chain block %d; want the plan's %d", b, ir.HIPTile.BN)
	}
}
