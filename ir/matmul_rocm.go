package ir

import (
	"fmt"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/launch"
	"github.com/kgen-dev/kgen/spec"
)

// HIPGemm is the ROCm port's plan of a matmul: kgen's tiled SIMT GEMM in
// the HIP dialect (emit/cfam/hip_gemm.go). A block of Threads threads
// computes a BM×BN tile of the output, each thread a TM×TN microtile of
// f32 accumulators per B (rows TM·ty … TM·ty+TM-1, columns TN·tx …, tx the
// thread's index across BN/TN threads); the K loop stages a BK-deep slice
// of A and of each B in LDS as f32, k-major ([BK][BM + Pad]), zero outside
// the matrices, so any m, n and k work (k = 0: the epilogue of acc = 0).
// Then the epilogue stage runs once per output element in range, from the
// thread's own registers: the same stage function Metal's and CUDA's
// matmuls call.
//
// With row reductions the block owns BM whole rows and runs the rowwise
// stages over them, recomputing each BN-wide column tile's product in
// every pass instead of keeping a strip of the rows in LDS: (passes + 1)
// products, but any n in one launch, which is what kgenrt's ROCm port
// makes (Metal's split for n above its strip is a second launch). A chain
// owns BM query rows the same way and streams BN-key blocks with Metal's
// online softmax, O in registers per BN columns of p (the scores
// recomputed per chunk of p, so any p takes one launch). A batched matmul
// runs its batch elements along z.
//
// The tile is one choice for both targets (gfx942's 64-lane wavefronts and
// gfx1100's 32-lane ones): nothing in the kernel depends on the wave.
// 64×64 outputs per 256 threads keeps 16 accumulators per B in registers
// (32 for a gated pair) and (16·68 + 16·68·Bs)·4 bytes of LDS, 8.5 KiB for
// one B, so several blocks fit a compute unit's 64 KiB. Pad = 4 floats
// keeps each LDS row 16-byte aligned (a thread's TN columns are one
// 16-byte read) and staggers a k-major store's rows by 4 banks (a
// k-contiguous operand's stores then meet 2-way conflicts on 32 banks; the
// cost, if any, is speed, and nothing here has measured it).
type HIPGemm struct {
	BM, BN, BK, TM, TN, Pad int
}

// HIPTile is the ROCm GEMM's tile (not the spec's `tile:`, which is Metal's).
var HIPTile = HIPGemm{BM: 64, BN: 64, BK: 16, TM: 4, TN: 4, Pad: 4}

// Threads is the block's threads: one per microtile.
func (g *HIPGemm) Threads() int { return (g.BM / g.TM) * (g.BN / g.TN) }

// LDSBytes is the staging of A and bs Bs.
func (g *HIPGemm) LDSBytes(bs int) int { return 4 * g.BK * ((g.BM + g.Pad) + bs*(g.BN+g.Pad)) }

// LDS is the plan's LDS for matmul mm, a chain's or the staging of its Bs.
func (g *HIPGemm) LDS(mm *Matmul) int {
	if mm.Chain != nil {
		return g.ChainLDSBytes()
	}
	return g.LDSBytes(len(mm.B))
}

// ChainLDSBytes is a chain's LDS: A's and B's staging, the block's
// weights [BM][BN + Pad] and V's block [BN][BN + Pad].
func (g *HIPGemm) ChainLDSBytes() int { return g.LDSBytes(1) + 4*(g.BM+g.BN)*(g.BN+g.Pad) }

// launch is one block per output tile, the tiles in row-major order along
// the grid's x: ceildiv(m, BM) · ceildiv(n, BN) blocks of Threads; with
// row reductions one block per BM whole rows, ceildiv(m, BM) blocks; a
// batched matmul's batch elements along z (the product of its batch
// sizes), as on Metal.
func (g *HIPGemm) launch(mm *Matmul) launch.Launch {
	tiles := launch.Times(launch.Ceil(launch.V("m"), launch.N(g.BM)), launch.Ceil(launch.V("n"), launch.N(g.BN)))
	if mm.Rows != nil || mm.Chain != nil {
		tiles = launch.Ceil(launch.V("m"), launch.N(g.BM))
	}
	l := launch.Launch{
		Grid:        [3]*launch.Expr{launch.Times(tiles, launch.N(g.Threads())), launch.N(1), batchGrid(mm.Batch)},
		Threadgroup: [3]int{g.Threads(), 1, 1},
	}
	if mm.Decode != nil { // the args struct has Metal's split fields: set as Metal's launch sets them, read by no HIP code
		l.Derived = DecodeRules(mm.Batch)
	}
	return l
}

// Describe is the plan in words, for the HIP source's header.
func (g *HIPGemm) Describe(k *Kernel, mm *Matmul) []string {
	var bs, quant []string
	for _, b := range mm.B {
		bs = append(bs, fmt.Sprintf("%s = %s·%s", b.Acc, operandText(mm.A, "[m, k]"), operandText(b, "[k, n]")))
		if b.Quant != nil { // one launch for every m: the matrix-vector phase is Metal's
			quant = append(quant, "quantized "+QuantText(k, b)+"; dequantized to f32 as it is staged")
		}
	}
	acc := fmt.Sprintf("accumulate %s in f32 with FMA, K in steps of %d staged k-major in LDS as f32, zero outside the matrices (%d bytes)", joinComma(bs), g.BK, g.LDSBytes(len(mm.B)))
	if ch := mm.Chain; ch != nil {
		out := []string{
			fmt.Sprintf("chain on the SIMT tile %d×%d×%d: one block of %d threads per %d query rows, each thread a %d×%d microtile of each %d-key block", g.BM, g.BN, g.BK, g.Threads(), g.BM, g.TM, g.TN, g.BN),
			fmt.Sprintf("per %d columns of p: every block of keys, acc = %s·%s (%s), the scores, then per row the running max and sum (butterflies over the row's %d threads), rescaled by exp(m_old - m_new)", g.BN, operandText(mm.A, "[m, k]"), operandText(mm.B[0], "[k, n]"), acc, g.BN/g.TN),
			fmt.Sprintf("%s += weights·%s in f32 registers, the weights and V's block staged in LDS (%d bytes in all); the scores are recomputed per %d columns of p, so any p in one launch", ch.Then.Acc, operandText(ch.Then, "[n, p]"), g.ChainLDSBytes(), g.BN),
		}
		if ch.Skip != nil {
			out = append(out, "key blocks the score's mask hides from every row of the block are skipped (proved over the block's rows and columns)")
		}
		return append(out, quant...)
	}
	if mm.Rows != nil {
		return append([]string{
			fmt.Sprintf("SIMT tile %d×%d×%d, row-owning: one block of %d threads per %d whole rows of the output, each thread a %d×%d microtile of each %d-column tile", g.BM, g.BN, g.BK, g.Threads(), g.BM, g.TM, g.TN, g.BN),
			acc,
			fmt.Sprintf("%d reduction pass(es) then the write pass, each over the rows' column tiles, the product recomputed per pass (%d products in all: no strip, so any n in one launch)", mm.Rows.Passes, mm.Rows.Passes+1),
			fmt.Sprintf("a pass folds its terms per thread and row in order, then across the row's %d threads (a shuffle-xor butterfly within the wavefront)", g.BN/g.TN),
		}, quant...)
	}
	if len(mm.Batch) > 0 {
		quant = append(quant, fmt.Sprintf("batched over %s: one grid slice (z) per batch element, every tensor a strided view, its element strides in the args struct", Shape(mm.Batch)))
	}
	return append([]string{
		fmt.Sprintf("SIMT tile %d×%d×%d: one block of %d threads per %d×%d block of the output, each thread a %d×%d microtile", g.BM, g.BN, g.BK, g.Threads(), g.BM, g.BN, g.TM, g.TN),
		acc,
		"epilogue: from each thread's accumulators, every output of each element in range",
	}, quant...)
}

// hipGemmPlan is the ROCm plan of a matmul with `rocm: generated`: the
// one place that decides which matmuls a ROCm port may have. Every form
// the IR builds has one (plain, gated, row-reducing, quantized, batched,
// chains); a form the HIP GEMM could not write would be refused here, at
// the rocm port's position, with the reason.
func hipGemmPlan(*spec.Spec, *Matmul, *diag.List) *HIPGemm {
	g := HIPTile
	return &g
}
