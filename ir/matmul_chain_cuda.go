package ir

import (
	"fmt"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/launch"
)

// ChainCUDA is the CUDA port of a matmul chain: a flash-attention kernel
// (emit/cfam/cuda_chain.go). A block of Warps warps owns BM query rows
// (16 per warp); per block of BN keys it computes the scores on the tensor
// cores (mma.sync m16n8k16, f32 accumulate; 16-bit storage) or in f32 FMA
// (f32 storage: the SIMT form, BNSIMT keys per block), applies the score
// stage per element, updates the running max and sum in registers and adds
// weights·V. The head dimensions (k, p) go through D columns at a time: k
// in chunks of D per score block, p in passes of D output columns (one
// pass, and Q staged once, when both are at most D).
type ChainCUDA struct {
	BM, BN, BNSIMT, D, Warps int
	// PartBM is the rows per block of the flash-decoding part (Decode,
	// cuda_decode_mma.go): one mma row tile, its warps splitting each key
	// block among them, so a decode step's few rows do not pay for BM.
	PartBM int
	// PartBlocksPerSM is the part's __launch_bounds__ minimum of resident
	// blocks: a decode step is bound by the KV bytes in flight, one block's
	// K or V tile at a time, so residency is its bandwidth.
	PartBlocksPerSM int
	// Pack is how the part packs grouped query heads into its rows (set
	// for a batched chain, with its Decode).
	Pack *DecodePack
	// KeyLimit, when the score formula is select(col > row + E, -inf, x)
	// with E a formula of params and constants only, is E: every key past
	// row + E scores -inf (weight exactly 0), so a block of rows stops at
	// the last key its last row can see. Nil: every key block is computed.
	KeyLimit *Expr
}

// chainCUDAPort is the CUDA chain kernel's shape.
func chainCUDAPort(k *Kernel, ch *Chain) *ChainCUDA {
	return &ChainCUDA{BM: 64, BN: 64, BNSIMT: 32, D: 128, Warps: 4, PartBM: 16, PartBlocksPerSM: 4, KeyLimit: keyLimit(k, ch.Score)}
}

// keyLimit recognises a causal mask in score s (through lets):
// select(col > row + E, -inf, x) or select(col > row, -inf, x), E of
// params, constants and literals. It returns E (a literal 0 for the
// second form), or nil.
func keyLimit(k *Kernel, s *Expr) *Expr {
	s = resolveLets(k, s)
	if s.Op != OpCall || s.Func != "select" || len(s.Args) != 3 {
		return nil
	}
	cond, masked := s.Args[0], s.Args[1]
	if !isNegInf(masked) {
		return nil
	}
	if cond.Op != OpBinary || cond.Operator != ">" || !isIndex(cond.Args[0], "col") {
		return nil
	}
	rhs := cond.Args[1]
	if isIndex(rhs, "row") {
		return &Expr{Op: OpLiteral, Text: "0", Int: true}
	}
	if rhs.Op != OpBinary || rhs.Operator != "+" || !isIndex(rhs.Args[0], "row") || !rhs.Args[1].Int || !uniform(k, rhs.Args[1]) {
		return nil
	}
	return rhs.Args[1]
}

func isIndex(e *Expr, name string) bool { return e.Op == OpRef && e.Ref == RefIndex && e.Name == name }

// uniform reports whether e is the same for every element: params,
// constants and literals only.
func uniform(k *Kernel, e *Expr) bool {
	ok := true
	Walk(e, func(x *Expr) {
		switch {
		case x.Op == OpCall:
			ok = false
		case x.Op == OpRef && x.Ref != RefParam && x.Ref != RefConstant:
			ok = false
		}
	})
	return ok
}

// chainCUDALaunch is one block of Warps·32 threads per BM query rows and
// batch element: ceildiv(m, BM) · threads, 1, the batch.
func (mm *Matmul) chainCUDALaunch() launch.Launch {
	c := mm.Chain.CUDA
	l := launch.Launch{
		Grid:        [3]*launch.Expr{launch.Times(launch.Ceil(launch.V("m"), launch.N(c.BM)), launch.N(32*c.Warps)), launch.N(1), batchGrid(mm.Batch)},
		Threadgroup: [3]int{32 * c.Warps, 1, 1},
	}
	if mm.Decode != nil {
		// The decode split by the CUDA chain's tuning: with kgen_splits > 1
		// the port launches Decode's phases (matmul_decode_cuda.go).
		l.Derived = c.DecodeTuning(mm.Batch).Rules(mm.Batch)
	}
	return l
}

// chainCUDADescribe is the CUDA form in words.
func (mm *Matmul) chainCUDADescribe(k *Kernel) string {
	c := mm.Chain.CUDA
	skip := "every key block is computed (the score formula is not a causal mask kgen recognises)"
	if c.KeyLimit != nil {
		skip = "key blocks past the last row's row + " + k.FormatExpr(c.KeyLimit) + " are skipped (their scores are all -inf)"
	}
	out := fmt.Sprintf("CUDA: %d rows per block of %d warps, %d keys per step (%d at f32), head dimensions %d columns at a time; %s", c.BM, c.Warps, c.BN, c.BNSIMT, c.D, skip)
	if mm.Decode != nil {
		out += fmt.Sprintf("; flash decoding when %s > 1 (about %d part blocks, chunks of at least %d keys): the part's blocks of %d packed rows (%s), its %d warps splitting each key block, then the combine, launched by the CUDA port in the kernel's one call",
			SplitsField, DecodeGroupsCUDA, DecodeMinChunkCUDA, c.PartBM, c.Pack, c.Warps)
	}
	return out
}

// String is the packing in words.
func (p *DecodePack) String() string {
	if p.Group == "" && p.Const == 1 {
		return "one query head per block"
	}
	return "the query heads of a KV head packed: " + p.GroupExpr().String() + " heads × m rows"
}

// ChainBlock is the keys per online-softmax step of a chain's port on
// backend b for storage t (the streaming bound's block).
func (k *Kernel) ChainBlock(b Backend, t dtype.DType) int {
	if g := k.Matmul().ROCm; b == ROCm && g != nil {
		return g.BN // the HIP GEMM's key blocks (matmul_rocm.go)
	}
	ch := k.Matmul().Chain
	if b == CUDA && ch.CUDA != nil {
		if t == dtype.F32 {
			return ch.CUDA.BNSIMT
		}
		return ch.CUDA.BN
	}
	return RowTile.BN
}

// ChainWeightUnit is the unit roundoff of the weights as the port on
// backend b multiplies them with V: the CUDA port's tensor cores take the
// weights in the storage type (rounded once, the row sum taken over the
// rounded weights), so 2^-8 for bf16 and 2^-11 for f16; 0 where they stay
// f32.
func (k *Kernel) ChainWeightUnit(b Backend, t dtype.DType) float64 {
	if b != CUDA || k.Matmul().Chain.CUDA == nil {
		return 0
	}
	switch t {
	case dtype.BF16:
		return 0x1p-8
	case dtype.F16:
		return 0x1p-11
	}
	return 0
}
