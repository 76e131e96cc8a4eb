package ir

import "github.com/kgen-dev/kgen/launch"

// The CUDA port's flash decoding: the same two phases as Metal's (Decode:
// the part over split s's keys into the f32 workspaces, then the combine),
// the same derived fields and workspace layout, with the CUDA chain's own
// tuning. The split decision is Rules' alone: the CUDA port evaluates its
// launch's derived fields and, where kgen_splits > 1, launches Part and
// Combine in the kernel's one call (kgenrt.Kernel.PortSplit), else the
// chain's one kernel; parity and the Go launcher read the same rules.
const (
	// DecodeGroupsCUDA is the blocks the CUDA split aims at: about four
	// per SM of an H100/H200 (132 SMs), two resident at a time (245
	// registers a thread), so a short last wave costs little.
	DecodeGroupsCUDA = 512
	// DecodeMinChunkCUDA: a split streams at least four 64-key blocks, so
	// the loads of one block overlap the math of another.
	DecodeMinChunkCUDA = 256
)

// DecodeTuning is the CUDA chain's split tuning: its BM rows per block and
// whole BN-key blocks per chunk (a multiple of the f32 form's BNSIMT too,
// so no block of either form straddles two splits).
func (c *ChainCUDA) DecodeTuning() DecodeTuning {
	return DecodeTuning{RowsPerGroup: c.BM, KeyBlock: max(c.BN, c.BNSIMT), Groups: DecodeGroupsCUDA, MinChunk: DecodeMinChunkCUDA}
}

// cudaLaunches sets the CUDA launches of d's phases: the part's blocks are
// (split, row block of PartBM rows) pairs along x — kgenrt's grids are x
// times a batch along z — split-minor, so a row block's splits run side by
// side; the combine is Metal's (one thread per output element, the batch
// along z).
func (d *Decode) cudaLaunches(c *ChainCUDA, batch []string) {
	threads := 32 * c.Warps
	part := launch.Launch{
		Grid:        [3]*launch.Expr{launch.Times(launch.Times(launch.Ceil(launch.V("m"), launch.N(c.PartBM)), launch.V(SplitsField)), launch.N(threads)), launch.N(1), batchGrid(batch)},
		Threadgroup: [3]int{threads, 1, 1},
	}
	comb := d.Combine.Launch
	d.Part.CUDA, d.Combine.CUDA = &part, &comb
}

// CUDASplit reports whether the kernel's CUDA port takes the flash-decoding
// phases (Phases, when PhasesWhen holds at its CUDA launch's sizes).
func (k *Kernel) CUDASplit() bool {
	mm := k.Matmul()
	return mm != nil && mm.Decode != nil && mm.Decode.Part.CUDA != nil
}
