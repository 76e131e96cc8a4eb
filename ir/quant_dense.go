package ir

import (
	"fmt"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/launch"
)

// QuantDense is the quantized matmul's CUDA form for large m (the kernel's
// own entry point, m > QuantCUDA.Mid.MaxM): a generated dequantization
// kernel writes each B as a dense [n, k] matrix of the storage type into a
// workspace (Space), then kgen's CUTLASS SM90 GEMM (GEMM: the same EVT
// epilogue, problem classes and builders as a plain CUDA matmul) multiplies
// x by it. At large m the GEMM's m·n·k work dwarfs the workspace's 2·n·k
// bytes written and read once, and CUTLASS's warp-specialised WGMMA
// mainloop runs at cuBLAS's speed, which kgen's mma.sync tiled kernel does
// not (docs/cuda.md). CUTLASS's SM90 mixed-input GEMM would skip the
// workspace, but it reads neither ggml's blocks nor MLX's layout without
// repacking the weights on the host.
//
// Both launches run inside the library's host function on the caller's
// stream, the workspace from kgen's stream-ordered pool (kgen_workspace)
// as the split's; a call TMA cannot load (n not a multiple of GEMM.Align,
// a tensor off a 16-byte boundary) runs the tiled kernel instead
// (GEMM.Fallback).
type QuantDense struct {
	GEMM *CUTLASS
	// Dequant is the dequantization kernel: one thread per 32-value chunk
	// of a weight row (QuantChunk), read once from its packed words and
	// written as four 16-byte stores. A CUDA-only phase that the host
	// function launches (not a Go-launched form: not in DescriptorPhases).
	Dequant *Phase
	// Space are the workspaces, one [n, k] per B in the storage type
	// (DType Invalid), row-major: the GEMM's column-major B.
	Space []Binding
}

// DenseAbove is the m above which the dense form runs where it is
// planned (the mid tile's MaxM then; 256 without it). The GEMM's cost grows
// with m and the dequantization pass's (2.5·n·k bytes) does not; on the
// H200 (docs/cuda.md) the dense form beat the mid tile at m = 128 for all
// three MLP shapes (1.4–1.7×) and at m = 64 where n = 4096 but not where
// n = 14336 (the mid tile's column tiles fill the GPU there): a rule in n
// for 16 < m ≤ 64 needs measurements there.
const DenseAbove = 64

// DequantThreads are the dequantization kernel's threads per block.
const DequantThreads = 256

// DenseName is B w's dense workspace.
func DenseName(w int) string { return fmt.Sprintf("kgen_wq%d", w) }

// quantDensePlan plans the dense form, or returns nil where the tiled
// kernel stays the large-m form: two Bs (the split's f32 workspaces and
// epilogue pass are not generated over dequantized Bs yet), or an epilogue
// an EVT cannot compute (evtLeaves: index reads, integer params, several
// outputs), which the tiled kernel's per-element epilogue takes.
func quantDensePlan(k *Kernel, mm *Matmul) *QuantDense {
	if len(mm.B) != 1 {
		return nil
	}
	k.Schedule = mm // evtLeaves reads the epilogue stage through k
	leaves, source, why := evtLeaves(k)
	if why != "" {
		return nil
	}
	g := &CUTLASS{Leaves: leaves, Source: source, Align: 8, Why: "the tensor cores take bf16 or f16",
		Configs:  []GemmConfig{CUTLASSConfigs[1], CUTLASSConfigs[2]},
		Fallback: "the tiled kernel (mma.sync, dequantizing in shared memory)"}
	for _, v := range k.Variants {
		g.DTypes = append(g.DTypes, v.DType) // 16-bit: quantCUDAPlan refused others
	}
	d := &QuantDense{GEMM: g}
	var from []int
	roles := map[int]Role{}
	for w, b := range mm.B {
		d.Space = append(d.Space, Binding{Name: DenseName(w), DType: dtype.Invalid, Shape: Shape{"n", "k"}})
		from = append(from, b.Binding)
		for _, t := range []int{b.Scales, b.Biases} {
			if t >= 0 {
				from = append(from, t)
			}
		}
		roles[len(from)] = Output
		from = append(from, -1-w)
	}
	from = append(from, len(k.Bindings)-1) // the args
	l := launch.Launch{
		Grid:        [3]*launch.Expr{launch.Times(launch.V("n"), launch.Ceil(launch.V("k"), launch.N(QuantChunk))), launch.N(1), launch.N(1)},
		Threadgroup: [3]int{DequantThreads, 1, 1},
	}
	p := newPhase(k, d.Space, "dequant", fmt.Sprintf("the dense form's dequantization: one thread per %d-value chunk of a weight row into the [n, k] workspace of the storage type", QuantChunk), Tile{}, from, roles, launch.Launch{})
	p.CUDA = &l
	d.Dequant = &p
	return d
}

// LibraryPlan is the CUTLASS GEMM plan of a matmul whose CUDA port is a
// shared library (`kgen cuda` builds it in parts): a plain matmul's, or a
// quantized one's dense form; nil for a fatbin port.
func (mm *Matmul) LibraryPlan() *CUTLASS {
	if mm.CUDA != nil {
		return mm.CUDA
	}
	if q := mm.QuantCUDA; q != nil && q.Dense != nil {
		return q.Dense.GEMM
	}
	return nil
}

// describe is the dense form in words.
func (d *QuantDense) describe(minM int) string {
	return fmt.Sprintf("CUDA m > %d: dense form — %s_dequant writes each B as a dense [n, k] matrix of the storage type into a workspace from kgen's stream-ordered pool (one thread per %d-value chunk, 16-byte stores), then the CUTLASS SM90 GEMM (EVT epilogue, the matmul's problem classes m ≤ %d and above) on it, both on the caller's stream in the library's host function; n off a multiple of %d or a tensor off 16 bytes runs %s",
		minM, d.Dequant.Entry[:len(d.Dequant.Entry)-len("_dequant")], QuantChunk, d.GEMM.Configs[0].MaxM, d.GEMM.Align, d.GEMM.Fallback)
}
