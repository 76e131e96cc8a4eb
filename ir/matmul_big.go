package ir

import "github.com/kgen-dev/kgen/launch"

// The tiled Metal matmul's large-output tile. Each output of a BM×BN tile
// reads k elements of A per BN outputs and k of B per BM, so its device
// bytes per output are k·size·(1/BM + 1/BN): 32×32 reads every A and B
// element n/32 and m/32 times (18 B/out at m = n = k = 128, f16), 64×64
// half that (10 B/out, MLX steel's figure; docs/metal-cost.md). What the
// counts cannot see is the grid: 64×64 makes a quarter of the
// threadgroups. MLX, which measures on the hardware, picks 64×64 for 16-bit
// types at every size on M-series GPUs (mlx/backend/metal/matmul.cpp,
// GEMM_TPARAM_MACRO). The rule (BigRule, one place for the launcher's grid
// and the kernel's branch): the big tile where its grid has at least
// BigMinGroups threadgroups and m, n are at least 64 — 32×32 only for the
// small products where 64×64 would leave one to three groups, mostly
// padding. Both tiles run on the same 128 threads (2×2 simdgroups), so the
// launch's threadgroup is one size; the big tile's simdgroups own 32×32
// outputs (4×4 fragments) each.

// AutoTile is the 32×32 tile a tiled matmul takes when its spec sets none
// (DefaultTile, the base of a spec's override, with a K step of 32): a
// K step costs two barriers whatever its depth, so 32 halves the barriers
// per output of 16 (0.033 -> 0.017 at m = 16, n = k = 128; MLX steel's
// 64×64×16: 0.016) with the same sums in the same order, for 13 KB of
// threadgroup memory (f32) instead of 9.
var AutoTile = Tile{BM: 32, BN: 32, BK: 32, WM: 2, WN: 2}

// BigTile is the large-output tile.
var BigTile = Tile{BM: 64, BN: 64, BK: 16, WM: 2, WN: 2}

// MidTile is the tile for 9–16 rows (beyond the matrix-vector form's
// GemvRows): 32×32 would read A once per 32 columns with half its rows
// padding, 16×64 reads it once per 64 (device bytes per output at
// m = 16, n = k = 128, f16: 26 → 22, MLX steel's 64-column figure), on the
// same 128 threads (1×4 simdgroups of 16×16 outputs each). Its K step of
// 16 keeps its staging within the big tile's (no more threadgroup memory
// for the kernel) at two barriers per 16 of K, steel's.
var MidTile = Tile{BM: 16, BN: 64, BK: 16, WM: 1, WN: 4}

// BigMinGroups is the fewest threadgroups the big tile's grid may have.
const BigMinGroups = 4

// bigOf is a tiled matmul's big tile, nil where it keeps one tile: a tile
// set in the spec (the spec's choice stands), row reductions and chains
// (their own tiles), batched kernels (the batch multiplies the grid, which
// the rule does not count yet) and gated ones (two Bs' accumulators of
// 64×64 exceed Metal's threadgroup memory).
func bigOf(mm *Matmul, specTile bool) *Tile {
	if specTile || mm.Rows != nil || mm.Chain != nil || len(mm.Batch) > 0 || len(mm.B) != 1 || mm.Tile != AutoTile {
		return nil
	}
	t := BigTile
	return &t
}

// BigRule is 1 where the big tile serves sizes m and n, else 0: m ≥ BM,
// n ≥ BN and ceildiv(m, BM)·ceildiv(n, BN) ≥ BigMinGroups.
func (mm *Matmul) BigRule() *launch.Expr {
	t := *mm.Big
	one := launch.N(1)
	groups := launch.Times(launch.Ceil(launch.V("m"), launch.N(t.BM)), launch.Ceil(launch.V("n"), launch.N(t.BN)))
	return launch.Times(launch.Times(
		launch.Smaller(one, launch.Over(launch.V("m"), launch.N(t.BM))),
		launch.Smaller(one, launch.Over(launch.V("n"), launch.N(t.BN)))),
		launch.Smaller(one, launch.Over(groups, launch.N(BigMinGroups))))
}

// MidRule is 1 where the mid tile serves sizes m and n, else 0:
// GemvRows < m ≤ Mid.BM and n ≥ Mid.BN (exclusive with BigRule, which
// needs m ≥ 64; m ≤ GemvRows takes the matrix-vector phase).
func (mm *Matmul) MidRule() *launch.Expr {
	t := *mm.Mid
	one, m := launch.N(1), launch.V("m")
	return launch.Times(launch.Times(
		launch.Smaller(one, launch.Over(m, launch.N(GemvRows+1))),
		launch.Smaller(one, launch.Over(launch.N(t.BM+1), launch.Sum(m, one)))),
		launch.Smaller(one, launch.Over(launch.V("n"), launch.N(t.BN))))
}

// tiles is the tiled kernel's threadgroups: ceildiv(m, BM)·ceildiv(n, BN)
// of its tile, or with big and mid tiles of the one BigRule and MidRule
// pick.
func (mm *Matmul) tiles() *launch.Expr {
	t := mm.Tile
	if mm.Big == nil {
		return launch.Times(launch.Ceil(launch.V("m"), launch.N(t.BM)), launch.Ceil(launch.V("n"), launch.N(t.BN)))
	}
	big, mid := mm.BigRule(), mm.MidRule()
	bm := launch.Sum(launch.N(t.BM), launch.Times(launch.N(mm.Big.BM-t.BM), big), launch.Times(launch.N(mm.Mid.BM-t.BM), mid))
	bn := launch.Sum(launch.N(t.BN), launch.Times(launch.N(mm.Big.BN-t.BN), big), launch.Times(launch.N(mm.Mid.BN-t.BN), mid))
	return launch.Times(launch.Ceil(launch.V("m"), bm), launch.Ceil(launch.V("n"), bn))
}
