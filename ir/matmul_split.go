package ir

import (
	"fmt"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/launch"
)

// Split is a matmul's two-launch form. On Metal it is a row-reducing
// matmul's launcher path when n is wider than the row-owning kernel's strip
// (n > Matmul.NMax); on CUDA (Split.CUDA, set with a CUDA port) it is how
// every row-reducing or gated matmul runs, for any n, inside one library
// call. Metal's phases:
//
//  1. Acc: the tiled matmul (AutoTile) writes every accumulator (acc,
//     acc2) as f32 into an [m, n] workspace; no epilogue.
//  2. Rows: the row-owning kernel's passes (the same stage functions, the
//     same 8 rows per threadgroup, 2 rows per simdgroup, strided lanes and
//     shuffle butterfly) read the accumulators from the workspace instead
//     of a threadgroup strip, so n is bounded only by memory.
//
// Both phases are entry points of the kernel's one source and share its
// args struct. A reduction-free let is evaluated in the row stages, as in
// the row-owning kernel, so the workspace holds the accumulators only: the
// rounding, the summation order and so the parity bound are the row-owning
// kernel's (Kernel.EvalMatmulRowBound).
//
// A gated matmul without row reductions has a split on CUDA only: its
// second phase (suffix "epilogue") runs the epilogue stage per element over
// the two workspaces; Metal's tiled kernel holds both accumulators itself.
type Split struct {
	Over int // the row-owning Metal kernel serves n ≤ Over; the split, any n above (Metal only)
	// Metal reports whether Metal launches the phases (chained Go calls,
	// Kernel.Phases); false for a CUDA-only split.
	Metal bool
	Acc   Phase     // the accumulators into the workspace
	Rows  Phase     // the row passes over the workspace (gated: the epilogue)
	Space []Binding // the workspace tensors, one f32 [m, n] per B, in B order
	// CUDA is the CUDA port's form of the same phases (nil without one).
	CUDA *SplitCUDA
}

// SplitCUDA is how the CUDA port runs a Split: both phases inside the one
// host function of the kernel's library, so the Go call is one call
// (Run/Enqueue/LaunchCUDA) whatever n is.
//
//  1. Acc: one CUTLASS SM90 GEMM per B, the plan's problem classes
//     (CUTLASS.Configs), whose epilogue is the identity with an f32 D: the
//     accumulator, unrounded, into workspace Space[w], row-major [m, n].
//  2. Rows: a plain CUDA kernel with the Rows phase's bindings: the
//     row-owning kernel's passes (the same stage functions), one warp per
//     row, Tile.BM rows per block, lanes strided and a __shfl_xor_sync
//     butterfly; or, gated without reductions, the epilogue stage per
//     element over a grid-stride loop of Tile.Threads() per block.
//
// The epilogue cannot be CUTLASS's: an EVT sees one CTA's tile, and a row
// of n up to 14336 spans many CTAs, with no cross-CTA row reduction; a
// gated product needs two accumulators in one epilogue, which one GEMM
// does not have. The split's cost is the f32 workspace: written once by
// phase 1 and read once per row pass by phase 2, 4·m·n bytes per B.
type SplitCUDA struct {
	// Tile is phase 2's block. Its Threads share one row in the row passes
	// (each striding the row by Threads, the warps' partials combined in
	// warp order through shared memory), or stride the elements in the
	// gated form's grid-stride loop.
	Tile Tile
	// MaxRowBlocks caps phase 2's grid; the blocks loop over the rows.
	MaxRowBlocks int
	// AlignD is the workspace's TMA alignment in elements: 16 bytes of f32.
	AlignD int
	// MaxElems bounds m·n: phase 2 indexes the [m, n] tensors in 32 bits.
	MaxElems uint64
	// Comment says what phase 2 does, for comments and the inventory.
	Comment string
}

// CUDARowTile is the CUDA phase 2's block: 8 warps, 256 threads. The row
// passes give a block one row at a time (SplitCUDA.Tile): one warp
// per row kept each lane's loads in a serial chain of n/32 (0.42–0.68× the
// best torch arm at n = 4096–14336 on the H200); the epilogue form uses its
// 256 threads over elements.
var CUDARowTile = Tile{BM: 8, BN: 32, BK: 16, WM: 1, WN: 8}

// RowsPerWarp is the rows each warp (simdgroup) of tile t reduces.
func (t Tile) RowsPerWarp() int { return t.BM / (t.WM * t.WN) }

// Phase is one launch of a split kernel: an entry point of the kernel's
// source with its own signature, host names and launch.
type Phase struct {
	// Suffix names the phase: entry point <kernel>_<Suffix>, host names
	// <kernel>_<Suffix>_<dtype>.
	Suffix string
	Entry  string
	// Bindings is the phase's signature in buffer-index order (the args
	// struct last, the kernel's own).
	Bindings []Binding
	// From maps each binding to the kernel's binding it is (its index in
	// Kernel.Bindings), or to workspace w as -1-w.
	From     []int
	Variants []Variant
	Launch   launch.Launch // Metal's
	// CUDA is the phase's CUDA launch where the CUDA port takes it in place
	// of the kernel's own entry point (Kernel.CUDAForms); nil otherwise.
	CUDA    *launch.Launch
	Tile    Tile
	Comment string // what the phase does, for comments and the inventory
}

// LaunchOn is the phase's launch on backend b: its CUDA launch, or the
// Metal one (the only launch of the phases CUDA runs inside its library).
func (p *Phase) LaunchOn(b Backend) launch.Launch {
	if b == CUDA && p.CUDA != nil {
		return *p.CUDA
	}
	return p.Launch
}

// Phases lists a kernel's split launches in order (nil for a kernel that
// always launches once). These are Metal's: the CUDA port runs its split
// inside one library call (SplitCUDA).
func (k *Kernel) Phases() []*Phase {
	if c := k.ColReductions(); c != nil {
		if c.HasTotal() {
			return []*Phase{&c.Rows, &c.Combine, &c.Total}
		}
		return []*Phase{&c.Rows, &c.Combine}
	}
	mm := k.Matmul()
	switch {
	case mm == nil:
	case mm.Split != nil && mm.Split.Metal:
		return []*Phase{&mm.Split.Acc, &mm.Split.Rows}
	case mm.Decode != nil:
		return []*Phase{&mm.Decode.Part, &mm.Decode.Combine}
	case mm.Gemv != nil:
		return []*Phase{&mm.Gemv.Phase}
	}
	return nil
}

// PhaseCond is when a kernel with Phases takes them instead of its one
// launch: size field Field above Bound, or at most Bound with AtMost;
// always when Field is "" (column reductions have no one-launch form).
type PhaseCond struct {
	Field  string
	Bound  int
	AtMost bool
}

// Always reports whether the phases are the kernel's only form.
func (c PhaseCond) Always() bool { return c.Field == "" }

// Holds reports whether the condition holds at these sizes.
func (c PhaseCond) Holds(sizes map[string]int) bool {
	switch {
	case c.Always():
		return true
	case c.AtMost:
		return sizes[c.Field] <= c.Bound
	}
	return sizes[c.Field] > c.Bound
}

// Op is the comparison's Go and C spelling.
func (c PhaseCond) Op() string {
	if c.AtMost {
		return "<="
	}
	return ">"
}

func (c PhaseCond) String() string {
	if c.Always() {
		return "every launch"
	}
	return fmt.Sprintf("%s %s %d", c.Field, c.Op(), c.Bound)
}

// PhasesWhen says when a kernel with Phases takes them: always for column
// reductions, a row split when n is above the strip, a decode split when
// kgen_splits is above 1, the matrix-vector phase of quantized weights
// when m is at most GemvRows.
func (k *Kernel) PhasesWhen() PhaseCond {
	if k.ColReductions() != nil {
		return PhaseCond{}
	}
	mm := k.Matmul()
	switch {
	case mm.Decode != nil:
		return PhaseCond{Field: SplitsField, Bound: 1}
	case mm.Gemv != nil:
		return PhaseCond{Field: "m", Bound: GemvRows, AtMost: true}
	}
	return PhaseCond{Field: "n", Bound: mm.Split.Over}
}

// Workspaces are the f32 tensors between a kernel's Phases, each Shape
// naming its dimensions by size fields (derived ones included).
func (k *Kernel) Workspaces() []Binding {
	if c := k.ColReductions(); c != nil {
		return c.Space
	}
	mm := k.Matmul()
	switch {
	case mm.Decode != nil:
		return mm.Decode.Space
	case mm.Gemv != nil:
		return nil
	}
	return mm.Split.Space
}

// WorkspaceName is the name of workspace w's binding: reserved (spec names
// cannot start with kgen), so it clashes with no tensor.
func WorkspaceName(w int) string { return fmt.Sprintf("kgen_ws%d", w) }

// newPhase lays out one launch of a kernel's split form: its bindings
// (From: the kernel's binding, or workspace w of space as -1-w, given its
// role for this phase by roles), one variant per kernel variant with host
// name <entry>_<dtype>, and launch l.
func newPhase(k *Kernel, space []Binding, suffix, comment string, tile Tile, from []int, roles map[int]Role, l launch.Launch) Phase {
	p := Phase{Suffix: suffix, Entry: k.Name + "_" + suffix, From: from, Tile: tile, Comment: comment, Launch: l}
	for i, f := range from {
		var b Binding
		if f < 0 {
			b = space[-1-f]
			b.Role = roles[i]
		} else {
			b = k.Bindings[f]
		}
		b.Index = i
		p.Bindings = append(p.Bindings, b)
	}
	for _, v := range k.Variants {
		p.Variants = append(p.Variants, Variant{DType: v.DType, HostName: p.Entry + "_" + v.DType.String(), Tolerance: v.Tolerance})
	}
	return p
}

// splitOf lays out a matmul's split form: a row-reducing one's (metal:
// Metal launches it above NMax), or a gated one's for CUDA only.
func splitOf(k *Kernel, mm *Matmul, metal bool) *Split {
	s := &Split{Over: mm.NMax, Metal: metal}
	for w := range mm.B {
		s.Space = append(s.Space, Binding{Name: WorkspaceName(w), DType: dtype.F32, Shape: Shape{"m", "n"}})
	}
	phase := func(suffix, comment string, tile Tile, tiles *launch.Expr, from []int, roles map[int]Role) Phase {
		return newPhase(k, s.Space, suffix, comment, tile, from, roles, launch.Launch{
			Grid:        [3]*launch.Expr{launch.Times(tiles, launch.N(tile.Threads())), launch.N(1), launch.N(1)},
			Threadgroup: [3]int{tile.Threads(), 1, 1},
		})
	}
	args := len(k.Bindings) - 1
	var accFrom, rowsFrom []int
	accRoles, rowsRoles := map[int]Role{}, map[int]Role{}
	for _, b := range k.Bindings[:args] { // A, the Bs and a quantized B's tables
		if b.Operand {
			accFrom = append(accFrom, b.Index)
		}
	}
	for w := range mm.B {
		accRoles[len(accFrom)] = Output
		accFrom = append(accFrom, -1-w)
		rowsRoles[len(rowsFrom)] = Input
		rowsFrom = append(rowsFrom, -1-w)
	}
	for _, b := range k.Bindings[:args] {
		if !b.Operand {
			rowsFrom = append(rowsFrom, b.Index)
		}
	}
	t := AutoTile
	s.Acc = phase("acc", fmt.Sprintf("launch 1: the accumulators as f32 into the [m, n] workspace, tile %s", t), t,
		launch.Times(launch.Ceil(launch.V("m"), launch.N(t.BM)), launch.Ceil(launch.V("n"), launch.N(t.BN))), append(accFrom, args), accRoles)
	r := RowTile
	if mm.Rows == nil {
		s.Rows = phase("epilogue", "launch 2: the epilogue per element over the workspaces", t,
			launch.Ceil(launch.Times(launch.V("m"), launch.V("n")), launch.N(t.Threads())), append(rowsFrom, args), rowsRoles)
		return s
	}
	s.Rows = phase("rows", fmt.Sprintf("launch 2: the row passes over the workspace, %d rows per threadgroup of %d threads", r.BM, r.Threads()), r,
		launch.Ceil(launch.V("m"), launch.N(r.BM)), append(rowsFrom, args), rowsRoles)
	return s
}
