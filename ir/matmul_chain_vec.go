package ir

import "github.com/kgen-dev/kgen/launch"

// The Metal chain's row-vector form. With a few query rows (a decode step:
// one row per head) the tiled chain's 8-row simdgroup-matrix tile is mostly
// padding, and it stages every block of K and V in threadgroup memory
// between barriers: at m = 1 it moved 4× its device bytes through
// threadgroup memory and met 1.9 barriers per output (docs/metal-cost.md,
// against MLX's sdpa_vector). Where m ≤ VecRows and k ≤ PMax the kernel
// takes the row-vector form instead, decided per launch (the same rule in
// the launcher's grid and the kernel's branch, ChainTiledRule):
//
//   - one threadgroup per query row; its simdgroups take every S-th key
//     (S = the threadgroup's simdgroups), lane l holding q[l + 32t] in
//     registers and reading the key's k[l + 32t] straight from device
//     memory: the score is a simd_sum, and no key or value is staged in
//     threadgroup memory;
//   - each simdgroup keeps its own running max, sum and output columns
//     l + 32t in registers (the online softmax per key);
//   - the simdgroups' partials meet once in threadgroup memory, rescaled to
//     their common max: one barrier per row.
//
// The flash-decoding part (Decode) takes the same form over its split's
// keys and writes the row's partials as the tiled part does. The split
// rule still counts ceildiv(m, 8) groups per batch element (DecodeRules),
// so for 2 ≤ m ≤ 8 it may split a little more than the one-row groups
// need; m = 1, the decode step, is counted exactly.
const VecRows = 8

// ChainTiledRule is 1 where a chain launch takes the tiled form, 0 where it
// takes the row-vector form: m > VecRows or k > PMax.
func (mm *Matmul) ChainTiledRule() *launch.Expr {
	one := launch.N(1)
	return launch.Larger(
		launch.Smaller(one, launch.Over(launch.V("m"), launch.N(VecRows+1))),
		launch.Smaller(one, launch.Over(launch.V("k"), launch.N(mm.Chain.PMax+1))))
}

// chainGroupRows is a chain launch's query rows per threadgroup: the tile's
// BM, or 1 in the row-vector form.
func (mm *Matmul) chainGroupRows() *launch.Expr {
	return launch.Sum(launch.N(1), launch.Times(launch.N(mm.Tile.BM-1), mm.ChainTiledRule()))
}
