package ir

import (
	"fmt"

	"github.com/kgen-dev/kgen/backend"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/launch"
	"github.com/kgen-dev/kgen/spec"
)

// QuantCUDA is the CUDA port of a matmul whose Bs are all quantized: two
// generated kernels in one fatbin (emit/cfam/cuda_quant.go), no CUTLASS —
// CUTLASS's mixed-input GEMM reads neither ggml's blocks (each scale inside
// its block) nor MLX's biases without repacking the weights on the host,
// which kgen does not do. Both multiply on the tensor cores (mma.sync
// m16n8k16, f32 accumulate), the weights dequantized in f32 or in the
// storage type and rounded once to it (Kernel.QuantWeightRounding).
//
//   - The tiled kernel (the kernel's own entry point, m > SkinnyMax): one
//     block per BM×BN tile of the output; per step of BK, x's tile goes to
//     shared memory by cp.async (double-buffered) while each thread loads
//     one 32-value chunk of packed weights into registers, and after the
//     step's products dequantizes it into the block's BN×BK tile of the
//     storage type; ldmatrix feeds both operands to the tensor cores.
//   - The skinny kernel (phase Matmul.Gemv, m ≤ SkinnyMax: decode): the
//     weights are the mma's A operand (16 output columns per block), x the
//     B operand (8 tokens per n8 tile, two tiles for m ≤ 16), so a block
//     reads each packed weight once and no thread stages it through shared
//     memory; the block's SkinnyWarps warps split k, each thread
//     dequantizing whole 32-value chunks from 16-byte loads in registers,
//     and their partial sums meet in shared memory before the epilogue.
//
// The CUDA port picks the form per call from m (Kernel.CUDAForms), for
// Run, Enqueue and LaunchCUDA alike.
type QuantCUDA struct {
	// Large is the tiled kernel's tile (the kernel's own entry point), Mid
	// the same kernel on a smaller tile for SkinnyMax < m ≤ Mid.MaxM (the
	// phase MidPhase): a 128-row tile leaves most SMs idle there (m = 128,
	// n = 4096 is 32 blocks for 132 SMs).
	Large, Mid QuantTile
	// SkinnyMax is the largest m the skinny kernel takes (two n8 tiles of
	// tokens); SkinnyWarps its warps per block, which split k.
	SkinnyMax, SkinnyWarps int
	// MidPhase is the Mid tile's entry point: a CUDA-only phase (not one of
	// Metal's Kernel.Phases; Kernel.DescriptorPhases lists it after them).
	MidPhase *Phase
	// Dense is the large-m form where it is planned (quant_dense.go): the
	// kernel's own entry point is then the library's host function, which
	// dequantizes into a workspace and runs the CUTLASS GEMM; nil: the
	// tiled kernel is the own entry point.
	Dense *QuantDense
}

// QuantTile is one block tile of the tiled kernel: BM rows of x, BN output
// columns of each B, BK of k per step, WarpsM×WarpsN warps each owning
// (BM/WarpsM)×(BN/WarpsN); every thread dequantizes one 32-value chunk of
// packed weights per step (NB·BN·BK/32 = threads). MaxM is the largest m
// it runs (0: any).
type QuantTile struct {
	BM, BN, BK, WarpsM, WarpsN, MaxM int
}

// Threads is the tile's threads per block.
func (t QuantTile) Threads() int { return t.WarpsM * t.WarpsN * 32 }

// Bytes is the tile's static shared memory: x's two stages and one
// dequantized tile per B, 16-bit elements.
func (t QuantTile) Bytes(nb int) int { return 2 * (2*t.BM*t.BK + nb*t.BN*t.BK) }

// launch is the tile's: one block per BM×BN tile of the output.
func (t QuantTile) launch() launch.Launch {
	tiles := launch.Times(launch.Ceil(launch.V("m"), launch.N(t.BM)), launch.Ceil(launch.V("n"), launch.N(t.BN)))
	return launch.Launch{
		Grid:        [3]*launch.Expr{launch.Times(tiles, launch.N(t.Threads())), launch.N(1), launch.N(1)},
		Threadgroup: [3]int{t.Threads(), 1, 1},
	}
}

// QuantChunk is the values a thread of either CUDA kernel dequantizes at
// once: a ggml block, or 32 codes of an affine row (Bits words), within
// one group since every group is a multiple of 32.
const QuantChunk = 32

// SkinnyCols are the output columns one skinny block owns: the 16 rows of
// the mma's A operand.
const SkinnyCols = 16

// quantCUDAPlan plans the CUDA port of a quantized matmul, or refuses it
// at the spec's `cuda: generated` with the reason.
func quantCUDAPlan(s *spec.Spec, k *Kernel, mm *Matmul, diags *diag.List) *QuantCUDA {
	pos := s.Ports[spec.CUDA].Pos
	refuse := func(why string) *QuantCUDA {
		diags.Addf(pos, "kgen cannot generate the CUDA port of this quantized matmul yet: %s; set `cuda: null`", why)
		return nil
	}
	switch {
	case mm.Rows != nil:
		return refuse("its epilogue reduces rows (row_*), and the CUDA kernels own 16, 64 or 128 output columns of a row, not whole rows (the f32-workspace split is not generated for quantized Bs)")
	case mm.A.ColMajor:
		return refuse(fmt.Sprintf("operand %s is stored [k, m] (col_major); the CUDA kernels read x row-major in 16-byte pieces", mm.A.Name))
	case k.Bindings[mm.A.Binding].DType != dtype.Invalid:
		return refuse(fmt.Sprintf("operand %s pins its dtype; the tensor cores take x in the storage type", mm.A.Name))
	}
	for _, b := range mm.B {
		if b.Quant == nil {
			return refuse(fmt.Sprintf("B %s is not quantized; the CUDA kernels dequantize every B (quantize it too)", b.Name))
		}
	}
	for _, v := range k.Variants {
		if v.DType.Size() != 2 {
			return refuse(fmt.Sprintf("storage %s: the CUDA kernels multiply on the tensor cores, which take bf16 or f16 (drop %s from dtypes)", v.DType, v.DType))
		}
	}
	nb := len(mm.B)
	q := &QuantCUDA{
		Large:     QuantTile{BM: 128, BN: 128 / nb, BK: 2 * QuantChunk, WarpsM: 2, WarpsN: 4},
		Mid:       QuantTile{BM: 64, BN: 64 / nb, BK: 4 * QuantChunk, WarpsM: 2 * nb, WarpsN: 4 / nb, MaxM: 256}, // a warp 32×16 (16×16 of each of two Bs)
		SkinnyMax: 16, SkinnyWarps: 8,
	}
	for _, t := range []QuantTile{q.Large, q.Mid} {
		if b, lim := t.Bytes(nb), backend.Table[CUDA].ThreadgroupBytes; b > lim {
			return refuse(fmt.Sprintf("%d Bs need %d bytes of shared memory; CUDA allows %d", nb, b, lim))
		}
	}
	if q.Dense = quantDensePlan(k, mm); q.Dense != nil {
		q.Mid.MaxM = DenseAbove
	}
	var from []int
	for i := range k.Bindings {
		from = append(from, i)
	}
	l := q.Mid.launch()
	mid := newPhase(k, nil, "mid", fmt.Sprintf("%d < m <= %d: the tiled kernel on a %d×%d tile (more blocks than the %d-row tile gives there); CUDA only", q.SkinnyMax, q.Mid.MaxM, q.Mid.BM, q.Mid.BN, q.Large.BM), Tile{}, from, nil, launch.Launch{})
	mid.CUDA = &l
	q.MidPhase = &mid
	return q
}

// Threads is the tiled kernel's threads per block (its own entry point).
func (q *QuantCUDA) Threads() int { return q.Large.Threads() }

// launch is the tiled kernel's own (the large tile).
func (q *QuantCUDA) launch() launch.Launch { return q.Large.launch() }

// DescriptorPhases are the launches a kernel's descriptor lists beside its
// own: Metal's Kernel.Phases first (the call builder chains them by these
// indices), then the CUDA-only ones that Kernel.CUDAForms name (a
// quantized matmul's Mid tile), which only the CUDA port launches.
func (k *Kernel) DescriptorPhases() []*Phase {
	out := k.Phases()
	if mm := k.Matmul(); mm != nil && mm.QuantCUDA != nil {
		out = append(out, mm.QuantCUDA.MidPhase)
	}
	return out
}

// skinnyLaunch is the skinny kernel's: one block per SkinnyCols output
// columns.
func (q *QuantCUDA) skinnyLaunch() *launch.Launch {
	t := q.SkinnyWarps * 32
	return &launch.Launch{
		Grid:        [3]*launch.Expr{launch.Times(launch.Ceil(launch.V("n"), launch.N(SkinnyCols)), launch.N(t)), launch.N(1), launch.N(1)},
		Threadgroup: [3]int{t, 1, 1},
	}
}

// CUDAForm is a launch the CUDA port takes instead of the kernel's own
// entry point, for a call whose size field Field is at most AtMost: phase
// Phase of Kernel.Phases, launched alone (not as a chain).
type CUDAForm struct {
	Phase  int
	Field  string
	AtMost int
}

// CUDAForms are the kernel's CUDA launches by size, tried in order (nil:
// the kernel's own entry point always): a quantized matmul's skinny kernel
// for m ≤ SkinnyMax.
func (k *Kernel) CUDAForms() []CUDAForm {
	mm := k.Matmul()
	if mm == nil || mm.QuantCUDA == nil {
		return nil
	}
	q := mm.QuantCUDA
	return []CUDAForm{{Phase: 0, Field: "m", AtMost: q.SkinnyMax}, {Phase: len(k.Phases()), Field: "m", AtMost: q.Mid.MaxM}}
}

// QuantWeightRounding is how the port on backend b rounds a quantized
// weight before multiplying it, for storage t: |ŵ − w| ≤ unit·mag + abs,
// mag the weight's bound magnitude (parity's operandValues). The CUDA
// kernels give the tensor cores the weights in t: computed in t with one
// rounding (affine 4-bit: an fma of t's scale and bias, exact before it
// rounds) or in f32 then rounded to t (the other formats: an f32 fma for
// affine, an exact d·q for ggml), so unit = u_t + u_f32 covers both, and
// abs is half t's smallest subnormal (a weight rounded into t's subnormal
// range has an absolute error); the products of the two roundings and
// f32's own subnormal half-step are added so the bound holds exactly.
// Metal multiplies the f32 weights: 0, 0.
func (k *Kernel) QuantWeightRounding(b Backend, t dtype.DType) (unit, abs float64) {
	if mm := k.Matmul(); b != CUDA || mm == nil || mm.QuantCUDA == nil {
		return 0, 0
	}
	switch t {
	case dtype.BF16:
		return 0x1p-8 + 0x1p-24 + 0x1p-32, 0x1p-134 + 0x1p-150
	case dtype.F16:
		return 0x1p-11 + 0x1p-24 + 0x1p-35, 0x1p-25 + 0x1p-150
	}
	return 0, 0
}

// describe is the CUDA form in words.
func (q *QuantCUDA) describe(mm *Matmul) []string {
	l, d := q.Large, q.Mid
	var dense []string
	if q.Dense != nil {
		dense = []string{q.Dense.describe(d.MaxM)}
	}
	return append(dense,
		fmt.Sprintf("CUDA m > %d: tiled tensor-core kernel (mma.sync m16n8k16, f32 accumulate), %d×%d output tile per block of %d warps (%d×%d with k steps of %d for m ≤ %d), k in steps of %d: x by cp.async into swizzled shared tiles (two stages), each thread dequantizing one %d-value chunk of packed weights per step into the block's tile of the storage type",
			q.SkinnyMax, l.BM, l.BN, l.WarpsM*l.WarpsN, d.BM, d.BN, d.BK, d.MaxM, l.BK, QuantChunk),
		fmt.Sprintf("CUDA m ≤ %d (decode): skinny tensor-core kernel, the weights as the mma's A operand dequantized in registers (%d output columns per block), x as its B operand (8 tokens per tile), %d warps per block splitting k and summing in shared memory; each packed weight read once, with 16-byte loads where the format allows",
			q.SkinnyMax, SkinnyCols, q.SkinnyWarps),
	)
}
