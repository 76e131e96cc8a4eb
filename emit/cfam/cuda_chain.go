package cfam

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/ir"
)

// cudaChainBody writes the CUDA port of a matmul chain (ir.ChainCUDA): a
// flash-attention kernel. A block owns BM query rows, 16 per warp; per
// block of keys it computes the scores, calls the score stage on each with
// its (row, col), keeps each row's running max and sum in registers and
// adds weights·V. 16-bit storage runs on the tensor cores (mma.sync
// m16n8k16, f32 accumulate): Q, K and V tiles in shared memory (16-byte
// chunks XOR-swizzled by row, so ldmatrix is conflict-free), loaded by
// cp.async when every operand's head dimension is contiguous and 16-byte
// aligned (decided per block from the strides in args), element by element
// otherwise; V's load overlaps the scores and the next K's load overlaps
// weights·V. The weights go to the tensor cores in the storage type and the
// row sum is taken over those rounded weights (ir.Kernel.ChainWeightUnit).
// f32 storage runs the SIMT form: f32 FMA throughout, lane j of a warp owns
// key j of a block of BNSIMT.
func (mw *matmulWriter) cudaChainBody() { mw.cudaChain(false) }

// cudaChain writes the chain kernel, or with part the flash-decoding part
// (ir.Decode, cuda_decode.go): block x is split x % kgen_splits of row
// block x / kgen_splits, its keys [split · kgen_chunk, + kgen_chunk), and
// it writes each row's unnormalised output, max and sum into the
// workspaces instead of the outputs.
func (mw *matmulWriter) cudaChain(part bool) {
	w, mm := mw.Writer, mw.mm
	c := mm.Chain.CUDA
	mw.key0, mw.rowEnd, mw.rowIn = "0", "args.m", "kgen_i < args.m"
	if part {
		mw.key0, mw.rowEnd, mw.rowIn = "kgen_key0", "kgen_mend", "kgen_pr < kgen_mend"
	}
	w.P("using C = float;")
	w.P(fmt.Sprintf("constexpr unsigned BM = %d, BN = %d, BNS = %d, D = %d, kThreads = %d;", c.BM, c.BN, c.BNSIMT, c.D, 32*c.Warps))
	if part {
		w.P(fmt.Sprintf("constexpr unsigned PBM = %d; // the part's rows per block", c.PartBM))
	}
	w.P("const float kgen_ninf = ", mw.d.NegInf, ";")
	w.P("const unsigned kgen_warp = ", mw.tid, " / 32, kgen_lane = ", mw.tid, " % 32;")
	if part {
		g := mw.d.Threads[GroupXYZ].Expr
		w.P("// Split kgen_split of row block kgen_row0 / PBM: keys [kgen_key0, kgen_key0 + kgen_chunk), whole blocks.")
		w.P("const unsigned kgen_split = ", g, ".x % args.", ir.SplitsField, ";")
		w.P("// Rows are packed (ir.DecodePack): packed row r is query row r % m of head r / m of the block's group.")
		w.P("const unsigned kgen_row0 = (", g, ".x / args.", ir.SplitsField, ") * PBM, kgen_mend = min(", mw.packGroup(), " * args.m, kgen_row0 + PBM);")
		w.P("const unsigned kgen_key0 = kgen_split * args.", ir.ChunkField, ";")
	} else {
		w.P("// Row blocks in reverse: under a causal mask the later rows see the most keys; they start first.")
		w.P("const unsigned kgen_row0 = ((args.m + BM - 1) / BM - 1 - ", mw.tg, ") * BM;")
	}
	mw.paramLocals()
	w.P("// The keys any row of this block can see: [", mw.key0, ", kgen_nend).")
	if part {
		w.P("unsigned kgen_nend = min(args.n, kgen_key0 + args.", ir.ChunkField, ");")
	} else {
		w.P("unsigned kgen_nend = args.n;")
	}
	if c.KeyLimit != nil {
		r := renderer{d: mw.d, compute: dtype.F32, math: mw.k.Math}
		w.P("// The score is -inf wherever col > row + ", mw.k.FormatExpr(c.KeyLimit), ": no key past the last row's limit counts.")
		w.Block("", func() {
			w.P("const long long kgen_lim = (long long)", mw.lastRowEnd(part), " + (long long)(", r.expr(c.KeyLimit), ");")
			w.P("kgen_nend = (unsigned)max(0LL, min((long long)kgen_nend, kgen_lim));")
		})
	}
	w.P("// Tile (r, c) of each operand in global coordinates: q (row, d), ", mm.B[0].Name, " (key, d), ", mm.Chain.Then.Name, " (key, d).")
	a, b, v := mm.A, mm.B[0], mm.Chain.Then
	if part && mw.packed() {
		mw.packedQAt()
	} else {
		mw.tileAt("kgen_q_at", a, false, "args.m", "args.k")
	}
	mw.tileAt("kgen_k_at", b, true, "args.k", "args.n")
	mw.tileAt("kgen_v_at", v, false, "args.n", "args.p")
	w.Block("if constexpr (sizeof(T) == 2)", func() {
		if part {
			mw.cudaDecodeMMA()
			return
		}
		mw.cudaChainMMA()
	})
	w.Block("else", func() {
		mw.cudaChainSIMT(part)
	})
}

// lastRowEnd is one past the block's last query row: the chain's BM
// rows, or the decode part's packed rows' bound.
func (mw *matmulWriter) lastRowEnd(part bool) string {
	if part { // packed rows: a row's query row is below m and below its packed row
		return "min(args.m, kgen_mend)"
	}
	return "min(kgen_row0 + BM, args.m)"
}

// tileAt defines lambda name: the stored offset of an operand's tile
// element (r, c), where c runs along the head dimension. transposed says
// the operand's logical [rows, cols] has the head dimension first (the
// scores' b, logical [k, n]).
func (mw *matmulWriter) tileAt(name string, o ir.Operand, transposed bool, rows, cols string) {
	lr, lc := "kgen_r", "kgen_c" // the logical (row, col) of tile (r, c)
	if transposed {
		lr, lc = "kgen_c", "kgen_r"
	}
	mw.P("auto ", name, " = [&](unsigned long long kgen_r, unsigned long long kgen_c) { return ", mw.operandAt(o, lr, lc, rows, cols), "; };")
}

// vecOK is the C condition under which operand o's tile rows are
// contiguous 16-byte-aligned runs of its head dimension (cp.async).
func (mw *matmulWriter) vecOK(o ir.Operand, transposed bool, cols string) string {
	b := mw.k.Bindings[o.Binding]
	if o.ColMajor != transposed { // the head dimension is the stored rows' stride
		return "false"
	}
	align := "(reinterpret_cast<unsigned long long>(" + o.Name + ") % 16 == 0)"
	if !mw.k.Batched() {
		return cols + " % 8 == 0 && " + align
	}
	s := len(b.Batch)
	return fmt.Sprintf("args.%s %% 8 == 0 && args.%s == 1 && %s", ir.StrideField(b, s), ir.StrideField(b, s+1), align)
}

// expSpelling is exp in the kernel's math mode.
func (mw *matmulWriter) expSpelling() string {
	f, _ := funcs.Lookup("exp")
	return mw.d.Spell(f, mw.k.Math).Name
}

// scoreCall applies the score stage to acc at `at` for element (kgen_i,
// kgen_j) into `to`, -inf outside the matrix.
func (mw *matmulWriter) scoreCall(at, to string) {
	mw.P("C kgen_sc = kgen_ninf;")
	mw.Block("if ("+mw.rowIn+" && kgen_j < args.n)", func() {
		mw.P(mw.chainCall(mw.k.Stages()[0], at, "kgen_sc"))
	})
	mw.P(to, " = kgen_sc;")
}

// writeOut writes the outputs of element (kgen_i, kgen_c) from acc2 at
// `at` and the row sum kgen_r0, when inside the output.
func (mw *matmulWriter) writeOut(at string) {
	outs := mw.k.BindingsOf(ir.Output)
	mw.Block("if (kgen_i < args.m && kgen_c < args.p)", func() {
		var names []string
		for _, b := range outs {
			names = append(names, "kgen_o_"+b.Name)
		}
		mw.P("C ", strings.Join(names, ", "), ";")
		mw.P(mw.chainCall(mw.k.Stages()[1], at, strings.Join(names, ", ")))
		for i, b := range outs {
			mw.P(b.Name, "[", mw.elemAt(b, "kgen_i", "kgen_c", "args.p"), "] = ", mw.d.Cvt(mw.d.TypeName(b.DType), names[i]), ";")
		}
	})
}

// noteKind: the CUDA chain's prose is its own (templates/cuda/notes.tmpl,
// title_matmul_chain and launch_matmul_chain).
func (matmul) noteKind(k *ir.Kernel, d *Dialect) string {
	if d.Backend == ir.CUDA && k.Matmul().Chain != nil {
		return "matmul_chain"
	}
	if d.Backend == ir.CUDA && k.Matmul().QuantCUDA != nil {
		return "matmul_quant"
	}
	return k.Kind.String()
}
