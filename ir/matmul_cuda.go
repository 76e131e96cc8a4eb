package ir

import (
	"fmt"
	"slices"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/spec"
)

// CUTLASS is the CUDA port of a matmul: a CUTLASS 3.x SM90 GEMM (TMA loads,
// warp-specialised WGMMA mainloop, f32 accumulate) whose epilogue is an
// Epilogue Visitor Tree: one compute node, the kernel's epilogue stage
// function applied per element, over the leaves below. Everything the
// emitter instantiates is decided here.
type CUTLASS struct {
	// Leaves are the compute node's children, in the epilogue stage's
	// argument order (params excluded: they travel in the compute node's
	// arguments, the args struct by value).
	Leaves []EVTLeaf
	// Source is the binding read as CUTLASS's C operand (the one [m, n]
	// epilogue input, loaded by TMA like the output is stored), -1 none.
	Source int
	// DTypes are the storage dtypes with a CUTLASS kernel (16-bit: the
	// tensor cores' bf16/f16 WGMMA).
	DTypes []dtype.DType
	// SIMT are the storage dtypes with kgen's own SIMT GEMM instead (f32):
	// WGMMA multiplies f32 as TF32 (10-bit mantissas), which misses the f32
	// bound by orders of magnitude, and CUTLASS's SM90 builders have no
	// exact-f32 path; the SIMT GEMM is f32 FMA throughout, as the CPU
	// reference, and takes any m, n, k.
	SIMT []dtype.DType
	// Unaligned are the CUTLASS storage dtypes whose calls CUTLASS cannot
	// take — k or n not a multiple of Align, k = 0, or a tensor not on a
	// 16-byte boundary (TMA) — and run the SIMT GEMM instead, with the
	// same epilogue and bound, at CUDA-core speed (callers who want the
	// tensor cores pad k and n to multiples of Align). In a split the SIMT
	// GEMM is the workspace GEMM (an identity epilogue into f32).
	Unaligned []dtype.DType
	// Configs are the problem classes, tried in order: the first whose
	// MaxM is 0 or at least m runs.
	Configs []GemmConfig
	// Align is the element multiple k and n must be: TMA needs 16-byte
	// row strides (8 elements of 16-bit storage).
	Align int
	// Why says why the storage dtypes without an entry have none.
	Why string
	// Fallback, where set, is what the host function runs for a call TMA
	// cannot load instead of the SIMT GEMM (a quantized matmul's tiled
	// kernel, QuantDense): any size runs, and no SIMT part is built.
	Fallback string
}

// EVTLeafKind is how an EVT leaf reads its value at element (i, j).
type EVTLeafKind int

// The leaves.
const (
	EVTAcc    EVTLeafKind = iota // the accumulator (Sm90AccFetch)
	EVTRow                       // an [n] input: one value per column (Sm90RowBroadcast)
	EVTCol                       // an [m] input: one value per row (Sm90ColBroadcast)
	EVTSource                    // the [m, n] input read as C (Sm90SrcFetch)
)

var evtNames = [...]string{"accumulator", "row broadcast", "column broadcast", "C source"}

func (l EVTLeafKind) String() string { return evtNames[l] }

// EVTLeaf is one child of the compute node.
type EVTLeaf struct {
	Kind    EVTLeafKind
	Binding int // the input's buffer index (EVTAcc: -1)
	Name    string
}

// GemmConfig is one problem class's CUTLASS kernel: CTA tile M×N×K, thread
// block cluster M×N, mainloop schedule. Swap computes the transposed
// problem, yᵀ = Bᵀ·Aᵀ (n in the tile's M, m in its N): a short m then fills
// the tensor cores' 64-row side with n instead of padding m up to it.
type GemmConfig struct {
	Name     string // the part's suffix: "tiny", "small", "large"
	Tile     [3]int
	Cluster  [2]int
	Schedule string // "cooperative" or "pingpong"
	MaxM     int    // 0: any m
	Swap     bool
	// StreamK runs CUTLASS's stream-K tile scheduler: the CTAs share out
	// the K loops of all tiles, so a problem with fewer tiles than SMs
	// still fills the GPU; its partial sums need a workspace.
	StreamK bool
}

// CUTLASSConfigs are kgen's problem classes. Large m: the cooperative
// kernel with a 128×256×64 tile on 2×1 clusters, the tile the H200 probe
// measured at 1.03–1.05× cuBLAS (shared/notes/matmul.md §8b). Small m
// (≤ 256): the swapped problem on a cooperative 128×32×128 tile with
// stream-K, so 32 column tiles of n = 4096 share their K loops over the 132
// SMs (the class sweep, docs/cuda.md: 0.96× cuBLAS at m = 128 against 1.16×
// for the unswapped 64×128×64 pingpong tile). Tiny m (≤ 64): the swapped
// problem on a 64×32×128 pingpong tile without stream-K (the probe's M = 16
// kernel; the unswapped 64-row tile measured 1.87× cuBLAS at m = 16, every
// stream-K class 1.38–1.60×, this one 1.07×).
var CUTLASSConfigs = []GemmConfig{
	{Name: "tiny", Tile: [3]int{64, 32, 128}, Cluster: [2]int{1, 1}, Schedule: "pingpong", MaxM: 64, Swap: true},
	{Name: "small", Tile: [3]int{128, 32, 128}, Cluster: [2]int{1, 1}, Schedule: "cooperative", MaxM: 256, Swap: true, StreamK: true},
	{Name: "large", Tile: [3]int{128, 256, 64}, Cluster: [2]int{2, 1}, Schedule: "cooperative"},
}

// SIMTGemm is the shape of the SIMT GEMM (emit/cfam/simt.go): a
// Tile[0]×Tile[1] block of the output per CTA of Threads threads, K in
// steps of Tile[2] staged in shared memory, each thread a Micro[0]×Micro[1]
// microtile of f32 accumulators in two float4-wide halves half a tile
// apart (its shared reads: float4 broadcasts along m, consecutive float4s
// along n).
type SIMTGemm struct {
	Tile    [3]int
	Micro   [2]int
	Threads int
}

// SIMTConfig is the standard SGEMM structure: 128×128×8 tiles, 256
// threads of 8×8 accumulators.
var SIMTConfig = SIMTGemm{Tile: [3]int{128, 128, 8}, Micro: [2]int{8, 8}, Threads: 256}

// CUDAMatmulWhy says which storage dtypes the CUDA matmul has kernels for.
const CUDAMatmulWhy = "the CUDA matmul has CUTLASS WGMMA kernels for bf16/f16 storage and kgen's SIMT GEMM (exact f32 FMA) for f32 storage only"

// AlignOf is the element multiple k and n must be for storage t: Align for
// CUTLASS's 16-bit storage, 1 (any size, k = 0 included) for the SIMT GEMM.
func (c *CUTLASS) AlignOf(t dtype.DType) int {
	if c.Fallback != "" {
		return 1
	}
	if slices.Contains(c.SIMT, t) || slices.Contains(c.Unaligned, t) {
		return 1
	}
	return c.Align
}

// Entries are the storage dtypes with a host function: CUTLASS's, then
// the SIMT GEMM's.
func (c *CUTLASS) Entries() []dtype.DType {
	return append(append([]dtype.DType(nil), c.DTypes...), c.SIMT...)
}

// SIMTParts are the storage dtypes with a SIMT GEMM in the library: the
// SIMT dtypes and the unaligned fallbacks.
func (c *CUTLASS) SIMTParts() []dtype.DType {
	return append(append([]dtype.DType(nil), c.SIMT...), c.Unaligned...)
}

// cutlassPlan decides the CUDA port of a matmul, or says at the spec's
// `cuda: generated` why kgen cannot write it yet. A matmul with a split
// (row reductions, or two Bs) gets the split's CUDA form (splitPlan);
// any other one an EVT epilogue.
func cutlassPlan(s *spec.Spec, k *Kernel, mm *Matmul, diags *diag.List) *CUTLASS {
	pos := s.Ports[spec.CUDA].Pos
	refuse := func(why string) *CUTLASS {
		diags.Addf(pos, "kgen cannot generate the CUDA port of this matmul yet: %s; set `cuda: null`", why)
		return nil
	}
	plan := &CUTLASS{Source: -1, Configs: CUTLASSConfigs, Align: 8, Why: CUDAMatmulWhy}
	if s.CUDATiles != nil {
		if plan.Configs = cudaClasses(s.CUDATiles, diags); plan.Configs == nil {
			return nil
		}
	}
	for _, v := range k.Variants {
		switch {
		case v.DType.Size() == 2:
			plan.DTypes = append(plan.DTypes, v.DType)
			plan.Unaligned = append(plan.Unaligned, v.DType)
		case v.DType == dtype.F32:
			plan.SIMT = append(plan.SIMT, v.DType)
		}
	}
	if len(plan.DTypes)+len(plan.SIMT) == 0 {
		return refuse(CUDAMatmulWhy)
	}
	for _, o := range append([]Operand{mm.A}, mm.B...) {
		if k.Bindings[o.Binding].DType != dtype.Invalid {
			return refuse(fmt.Sprintf("operand %s pins its dtype; the GEMM's A and B are in the storage type", o.Name))
		}
	}
	if mm.Split != nil {
		return splitPlan(plan, mm, refuse)
	}
	leaves, source, why := evtLeaves(k)
	if why != "" {
		return refuse(why)
	}
	plan.Leaves, plan.Source = leaves, source
	return plan
}

// evtLeaves are the EVT compute node's leaves of k's epilogue stage and
// the binding read as CUTLASS's C operand (-1 none), or why an EVT cannot
// compute the epilogue: one place for the CUTLASS matmul and the quantized
// matmul's dense form (quant_dense.go).
func evtLeaves(k *Kernel) (leaves []EVTLeaf, source int, why string) {
	source = -1
	if len(k.BindingsOf(Output)) != 1 {
		return nil, -1, "the CUTLASS epilogue stores one output"
	}
	ins := k.ElementInputs(0)
	for _, a := range k.Stages()[0].Args {
		switch a.Kind {
		case ArgAcc:
			leaves = append(leaves, EVTLeaf{Kind: EVTAcc, Binding: -1, Name: a.Name})
		case ArgParam:
			if a.Int {
				return nil, -1, fmt.Sprintf("param %s is an integer; the epilogue takes f32 params", a.Name)
			}
		case ArgInput:
			b := ins[a.Index]
			if b.DType != dtype.Invalid {
				return nil, -1, fmt.Sprintf("input %s pins its dtype; epilogue inputs are in the storage type", b.Name)
			}
			leaf := EVTLeaf{Binding: b.Index, Name: a.Name}
			switch b.Shape.String() {
			case "[n]":
				leaf.Kind = EVTRow
			case "[m]":
				leaf.Kind = EVTCol
			default:
				if source >= 0 {
					return nil, -1, "more than one [m, n] epilogue input (one is read as C; a second needs an auxiliary load)"
				}
				leaf.Kind, source = EVTSource, b.Index
			}
			leaves = append(leaves, leaf)
		case ArgIndex:
			return nil, -1, fmt.Sprintf("the epilogue reads the index %s; the EVT compute node is given values, not the element's coordinates (a coordinate leaf is not generated yet)", a.Name)
		default:
			return nil, -1, fmt.Sprintf("the epilogue reads %s, which is not a value at one element", a.Name)
		}
	}
	return leaves, source, ""
}

// splitPlan is the CUDA form of the matmul's split (SplitCUDA): its GEMMs
// are the plan's problem classes with an identity epilogue, one GEMM type
// per class for every B, or the SIMT GEMM writing its f32 accumulators (f32
// storage, and what TMA cannot load of the 16-bit). Phase 2 is plain CUDA
// over the row-owning kernel's stages, so what the EVT refuses (index
// reads, integer params, pinned epilogue inputs, several outputs) it takes.
func splitPlan(plan *CUTLASS, mm *Matmul, refuse func(string) *CUTLASS) *CUTLASS {
	for _, b := range mm.B[1:] {
		if b.ColMajor != mm.B[0].ColMajor {
			return refuse(fmt.Sprintf("B %s and B %s are stored in different layouts; the split's GEMMs share one type per problem class, so the Bs must share a layout", mm.B[0].Name, b.Name))
		}
	}
	sc := &SplitCUDA{Tile: CUDARowTile, AlignD: 4, MaxElems: 1<<32 - 1, MaxRowBlocks: 1 << 20}
	t := sc.Tile
	sc.Comment = fmt.Sprintf("the row passes over the workspace, one block of %d threads per row (up to %d blocks, looping over the rows)", t.Threads(), sc.MaxRowBlocks)
	if mm.Rows == nil {
		sc.Comment = fmt.Sprintf("the epilogue per element over the workspaces, grid-stride, blocks of %d threads", t.Threads())
	}
	mm.Split.CUDA = sc
	return plan
}

// describeCUDA is the CUDA port's schedule in words.
func (c *CUTLASS) describeCUDA(mm *Matmul) []string {
	leaves := ""
	for i, l := range c.Leaves {
		if i > 0 {
			leaves += ", "
		}
		leaves += l.Name + " (" + l.Kind.String() + ")"
	}
	var cfgs string
	for i, g := range c.Configs {
		if i > 0 {
			cfgs += "; "
		}
		when := "otherwise"
		if g.MaxM > 0 {
			when = fmt.Sprintf("m ≤ %d", g.MaxM)
		}
		swap := ""
		if g.Swap {
			swap = " on yᵀ = Bᵀ·Aᵀ"
		}
		if g.StreamK {
			swap += ", stream-K"
		}
		cfgs += fmt.Sprintf("%s: %s %d×%d×%d, cluster %d×%d%s", when, g.Schedule, g.Tile[0], g.Tile[1], g.Tile[2], g.Cluster[0], g.Cluster[1], swap)
	}
	var out []string
	split := mm.Split != nil && mm.Split.CUDA != nil
	if len(c.DTypes) > 0 {
		out = append(out, fmt.Sprintf("CUDA %v: CUTLASS 3.x SM90 GEMM (TMA, warp-specialised WGMMA, f32 accumulate), %s", c.DTypes, cfgs))
		if !split {
			out = append(out, "CUDA epilogue: an EVT whose compute node is the epilogue stage over "+leaves+"; params by value")
		}
		if len(c.Unaligned) > 0 {
			out = append(out, fmt.Sprintf("CUDA %v: what TMA cannot load (k or n not a multiple of %d, m too with a column-major A; k = 0; a tensor off a 16-byte boundary) runs the SIMT GEMM below instead", c.Unaligned, c.Align))
		} else {
			out = append(out, fmt.Sprintf("CUDA %v: k and n must be multiples of %d (16-byte TMA strides)", c.DTypes, c.Align))
		}
	}
	if simt := c.SIMTParts(); len(simt) > 0 {
		g := SIMTConfig
		epi := "the epilogue stage per element over " + leaves
		if split {
			epi = "its f32 accumulators into the split's workspace"
		}
		out = append(out, fmt.Sprintf("CUDA %v: kgen's SIMT GEMM (f32 FMA), %d×%d×%d tile in shared memory, %d threads of %d×%d accumulators; any m, n, k; %s",
			simt, g.Tile[0], g.Tile[1], g.Tile[2], g.Threads, g.Micro[0], g.Micro[1], epi))
	}
	if split {
		out = append(out, mm.Split.describeCUDA()...)
	}
	return out
}

// describeCUDA is the CUDA split's two launches and workspace in words.
func (sp *Split) describeCUDA() []string {
	var ws []string
	for _, b := range sp.Space {
		ws = append(ws, b.Name)
	}
	return []string{
		fmt.Sprintf("CUDA split, two launches in one library call for any n: launch 1, per B, the GEMM with an identity epilogue writing its f32 accumulator into an f32 [m, n] workspace (%s); launch 2, %s: %s", joinComma(ws), sp.Rows.Entry, sp.CUDA.Comment),
		"CUDA workspace: 4·m·n bytes per B, written once and read by launch 2, from a stream-ordered pool on the caller's stream (cudaMallocFromPoolAsync, cudaFreeAsync); m·n < 2^32",
	}
}
