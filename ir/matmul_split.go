package ir

import (
	"fmt"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/launch"
)

// Split is a row-reducing matmul's two-launch form, the launcher's path
// when n is wider than the row-owning kernel's strip (n > Matmul.NMax):
//
//  1. Acc: the tiled matmul (DefaultTile) writes every accumulator (acc,
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
type Split struct {
	Over  int       // the row-owning kernel serves n ≤ Over; the split, any n above
	Acc   Phase     // the accumulators into the workspace
	Rows  Phase     // the row passes over the workspace
	Space []Binding // the workspace tensors, one f32 [m, n] per B, in B order
}

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
	Launch   launch.Launch
	Tile     Tile
	Comment  string // what the phase does, for comments and the inventory
}

// Phases lists a kernel's split launches in order (nil for a kernel that
// always launches once).
func (k *Kernel) Phases() []*Phase {
	if mm := k.Matmul(); mm != nil && mm.Split != nil {
		return []*Phase{&mm.Split.Acc, &mm.Split.Rows}
	}
	return nil
}

// WorkspaceName is the name of workspace w's binding: reserved (spec names
// cannot start with kgen), so it clashes with no tensor.
func WorkspaceName(w int) string { return fmt.Sprintf("kgen_ws%d", w) }

// splitOf lays out a row-reducing matmul's split form.
func splitOf(k *Kernel, mm *Matmul) *Split {
	s := &Split{Over: mm.NMax}
	for w := range mm.B {
		s.Space = append(s.Space, Binding{Name: WorkspaceName(w), DType: dtype.F32, Shape: Shape{"m", "n"}})
	}
	phase := func(suffix, comment string, tile Tile, tiles *launch.Expr, from []int, roles map[int]Role) Phase {
		p := Phase{Suffix: suffix, Entry: k.Name + "_" + suffix, From: from, Tile: tile, Comment: comment}
		for i, f := range from {
			var b Binding
			if f < 0 {
				b = s.Space[-1-f]
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
		p.Launch = launch.Launch{
			Grid:        [3]*launch.Expr{launch.Times(tiles, launch.N(tile.Threads())), launch.N(1), launch.N(1)},
			Threadgroup: [3]int{tile.Threads(), 1, 1},
		}
		return p
	}
	args := len(k.Bindings) - 1
	var accFrom, rowsFrom []int
	accRoles, rowsRoles := map[int]Role{}, map[int]Role{}
	accFrom = append(accFrom, mm.A.Binding)
	for _, b := range mm.B {
		accFrom = append(accFrom, b.Binding)
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
	t := DefaultTile
	s.Acc = phase("acc", fmt.Sprintf("launch 1: the accumulators as f32 into the [m, n] workspace, tile %s", t), t,
		launch.Times(launch.Ceil(launch.V("m"), launch.N(t.BM)), launch.Ceil(launch.V("n"), launch.N(t.BN))), append(accFrom, args), accRoles)
	r := RowTile
	s.Rows = phase("rows", fmt.Sprintf("launch 2: the row passes over the workspace, %d rows per threadgroup of %d threads", r.BM, r.Threads()), r,
		launch.Ceil(launch.V("m"), launch.N(r.BM)), append(rowsFrom, args), rowsRoles)
	return s
}
