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
	// DecodeGroupsCUDA is the part blocks the CUDA split aims at: about
	// four per SM of an H100/H200 (132 SMs), two resident at a time (238
	// registers a thread), so a short last wave costs little.
	DecodeGroupsCUDA = 512
	// DecodeMinChunkCUDA: a split streams at least two 64-key blocks, so
	// the next keys' load overlaps the last block's math; with the query
	// heads packed, a 4096-key decode of 8 KV heads is 256 blocks of 128.
	DecodeMinChunkCUDA = 128
)

// DecodeTuning is the CUDA chain's split tuning for a chain over batch:
// whole BN-key blocks per chunk (a multiple of the f32 form's BNSIMT too,
// so no block of either form straddles two splits), and the part's own
// blocks per split (PartBlocks) as the grid the split fills.
func (c *ChainCUDA) DecodeTuning(batch []string) DecodeTuning {
	return DecodeTuning{RowsPerGroup: c.BM, KeyBlock: max(c.BN, c.BNSIMT), Groups: DecodeGroupsCUDA, MinChunk: DecodeMinChunkCUDA,
		Blocks: c.PartBlocks(batch)}
}

// DecodePack is how the CUDA part packs the query heads that share a KV
// head into one block's rows (grouped-query attention: a decode step's
// one row per query head would leave 15 of a 16-row tile idle and stream
// each KV head once per query head). The packed axis is the last batch
// axis, which the grouped operands read at index / group: the part's
// grid runs over the batch with that axis divided by the group, and its
// packed row r is query row r % m of head (axis index) · group + r / m.
// Without grouped operands the group is 1 and a packed row is a row.
type DecodePack struct {
	Axis  int    // the packed batch axis (the last)
	Group string // the group's size field, or "" with Const
	Const int    // the group when constant (1: nothing grouped)
}

// GroupExpr is the group as a launch expression.
func (p *DecodePack) GroupExpr() *launch.Expr {
	if p.Group != "" {
		return launch.V(p.Group)
	}
	return launch.N(p.Const)
}

// decodePackOf finds the packing of mm's operands: every grouped batch
// dimension on the last axis with one group, A and the outputs reading
// that axis whole; otherwise (or with none grouped) a group of 1.
func decodePackOf(k *Kernel, mm *Matmul) *DecodePack {
	last := len(mm.Batch) - 1
	one := &DecodePack{Axis: last, Const: 1}
	var pack *DecodePack
	for _, b := range k.Bindings {
		whole := false
		for _, d := range b.Batch {
			grouped := d.Group != "" || d.GroupConst > 0
			switch {
			case grouped && (d.Axis != last || b.Role != Input || b.Index == mm.A.Binding):
				return one
			case grouped && pack == nil:
				pack = &DecodePack{Axis: last, Group: d.Group, Const: d.GroupConst}
			case grouped && (pack.Group != d.Group || pack.Const != d.GroupConst):
				return one
			case d.Axis == last:
				whole = true
			}
		}
		if (b.Role == Output || b.Index == mm.A.Binding) && !whole {
			return one // a row's head must come from its own tensor's axis
		}
	}
	if pack == nil {
		return one
	}
	return pack
}

// PartBlocks is the part's blocks per split: ceildiv(group · m, PartBM)
// times the batch with its packed axis over the group.
func (c *ChainCUDA) PartBlocks(batch []string) *launch.Expr {
	g := c.Pack.GroupExpr()
	return launch.Times(launch.Ceil(launch.Times(g, launch.V("m")), launch.N(c.PartBM)), c.PartBatch(batch))
}

// PartBatch is the part's grid z: the batch with the packed axis divided
// by the group (the launcher has checked that it divides).
func (c *ChainCUDA) PartBatch(batch []string) *launch.Expr {
	z := launch.Ceil(launch.V(batch[c.Pack.Axis]), c.Pack.GroupExpr())
	for i, b := range batch {
		if i != c.Pack.Axis {
			z = launch.Times(launch.V(b), z)
		}
	}
	return z
}

// cudaLaunches sets the CUDA launches of d's phases: the part's blocks are
// (split, block of PartBM packed rows) pairs along x — kgenrt's grids are
// x times a batch along z — split-minor, so a row block's splits run side
// by side, over the packed batch (DecodePack) along z; the combine is
// Metal's (one thread per output element, the batch along z).
func (d *Decode) cudaLaunches(c *ChainCUDA, batch []string) {
	threads := 32 * c.Warps
	g := c.Pack.GroupExpr()
	part := launch.Launch{
		Grid: [3]*launch.Expr{launch.Times(launch.Times(launch.Ceil(launch.Times(g, launch.V("m")), launch.N(c.PartBM)), launch.V(SplitsField)), launch.N(threads)),
			launch.N(1), c.PartBatch(batch)},
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
