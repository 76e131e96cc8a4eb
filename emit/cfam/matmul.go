package cfam

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kgen-dev/kgen/emit/cuda"
	"github.com/kgen-dev/kgen/ir"
)

// matmul writes matmul kernels (ir.Matmul): per threadgroup one BM×BN tile
// of the output. The K loop stages A and each B as float in threadgroup
// memory, zero-filled outside the matrices, and every simdgroup multiplies
// its 8×8 fragments with simdgroup_multiply_accumulate; the accumulators go
// back to threadgroup memory and the epilogue stage runs once per element
// in range. No thread returns early: every lane reaches every matrix
// operation and barrier.
type matmul struct{}

func (matmul) describe(k *ir.Kernel, d *Dialect, v *view) {
	v.Computes = "Computes, per output element (i, j), in f32 (math: " + k.Math + ")"
	mm := k.Matmul()
	for _, b := range mm.B {
		v.Formulas = append(v.Formulas, fmt.Sprintf("%s = sum over k of %s[i, k] * %s[k, j] (f32)", b.Acc, mm.A.Name, b.Name))
	}
	if ch := mm.Chain; ch != nil {
		v.Formulas = append(v.Formulas, fmt.Sprintf("%s = sum over j of %s[i, j] * %s[j, c] (f32, streamed over j with an online softmax)", ch.Then.Acc, k.Steps[ch.Weight].Name, ch.Then.Name))
	}
	for _, c := range k.Constants {
		v.Formulas = append(v.Formulas, c.Name+" = "+c.Text+" (constant)")
	}
	for _, s := range k.Steps {
		v.Formulas = append(v.Formulas, s.Name+" = "+s.Source)
	}
	v.ScheduleHead = "Schedule"
	v.Schedule = k.Describe()
	if d.Backend == ir.ROCm {
		hipGemmDescribe(k, v)
	}
	if q := mm.QuantCUDA; q != nil && d.Backend == ir.CUDA {
		v.Threads, v.MinBlocks = q.Threads(), 2 // two blocks per SM: 128 registers a thread
		v.EntryNames = strings.Join(quantEntryNames(k), ", ")
	}
	if mm.CUDA != nil && d.Backend == ir.CUDA {
		var entries []string
		for _, variant := range k.Variants {
			if slices.Contains(mm.CUDA.Entries(), variant.DType) {
				entries = append(entries, variant.HostName)
			}
		}
		v.EntryNames = strings.Join(entries, ", ")
	}
}

func (matmul) helpers(k *ir.Kernel, d *Dialect) []helper {
	if d.Backend != ir.CUDA {
		return quantHelpers(k)
	}
	if k.Matmul().Chain != nil {
		return []helper{{name: "mma"}}
	}
	if q := k.Matmul().QuantCUDA; q != nil {
		out := append([]helper{{name: "mma"}}, quantHelpers(k)...)
		if q.Dense != nil {
			out = append(out, helper{name: "quant_dense_head", data: cuda.PlainParts(k)})
		}
		return out
	}
	head := helper{name: "cutlass_head", data: cuda.PlainParts(k)}
	mm := k.Matmul()
	if sp := mm.Split; sp != nil && sp.CUDA != nil {
		out := []helper{head, {name: "cutlass_split"}}
		if mm.Rows != nil { // phase 2's block-wide reductions
			out = append(out, teamHelpers(mm.Rows, d)...)
		}
		return out
	}
	return []helper{head}
}

// owns: the CUDA port is CUTLASS GEMMs (cutlass.go), planned by the IR.
func (matmul) owns(k *ir.Kernel, d *Dialect) (bool, error) {
	if d.Backend == ir.ROCm && k.Matmul().ROCm == nil {
		return false, fmt.Errorf("kernel %s: the IR has no ROCm plan for this matmul (without rocm: generated, or refused)", k.Name)
	}
	if d.Backend != ir.CUDA {
		return false, nil
	}
	if ch := k.Matmul().Chain; ch != nil { // a flash-attention kernel in the templated body (cuda_chain.go)
		if ch.CUDA == nil {
			return false, fmt.Errorf("kernel %s: the IR has no CUDA form for this chain (its spec would have been refused)", k.Name)
		}
		return false, nil
	}
	if k.Matmul().QuantCUDA != nil { // generated tensor-core kernels in the templated body (cuda_quant.go)
		return false, nil
	}
	if k.Matmul().CUDA == nil {
		return false, fmt.Errorf("kernel %s: the IR has no CUDA plan for this matmul (its spec would have been refused)", k.Name)
	}
	return true, nil
}

func (matmul) writeOwn(w *Writer, k *ir.Kernel, d *Dialect) { cutlassCode(w, k, d) }

// threads: a batched matmul reads its batch element from the group
// position's z (GroupXYZ), so it takes the whole position instead of x.
func (matmul) threads(k *ir.Kernel) []ThreadIndex {
	if k.Batched() {
		return []ThreadIndex{LocalID, GroupXYZ, SimdID}
	}
	return []ThreadIndex{LocalID, GroupID, SimdID}
}

// matmulWriter holds what the body's parts share.
type matmulWriter struct {
	*Writer
	k             *ir.Kernel
	d             *Dialect
	mm            *ir.Matmul
	tid, tg, simd string             // the thread coordinates
	accAt         func(i int) string // accumulator i at row kgen_r/kgen_i, column kgen_j of the row passes
	// The CUDA chain's first key, row bound and in-matrix row test: "0",
	// "args.m", "kgen_i < args.m", or a decode part's (packed rows).
	key0, rowEnd, rowIn string
	// rowTeam is how many threads share a row in the row passes: 0 for a
	// simdgroup or warp (a shuffle butterfly), else the whole block
	// (kgen_team_<op>: the butterfly, then the warps' partials).
	rowTeam int
}

func (matmul) body(w *Writer, k *ir.Kernel, d *Dialect) {
	mw := newMatmulWriter(w, k, d)
	if mw.mm.Chain != nil && d.Backend == ir.CUDA {
		for _, ix := range []ThreadIndex{LocalID, GroupXYZ} {
			if l := d.Threads[ix].Local; l != "" {
				w.P(l)
			}
		}
		mw.batchPrologue(k.Bindings)
		mw.cudaChainBody()
		return
	}
	if mw.mm.QuantCUDA != nil && d.Backend == ir.CUDA {
		w.P(d.Threads[LocalID].Local)
		mw.cudaQuantTiled(mw.mm.QuantCUDA.Large)
		return
	}
	if d.Backend == ir.ROCm { // kgen's SIMT GEMM (hip_gemm.go)
		mw.hipGemmBody()
		return
	}
	mw.batchPrologue(k.Bindings)
	if mw.mm.Chain != nil {
		mw.chainBody()
		return
	}
	if mw.mm.Rows != nil {
		mw.rowBody()
		return
	}
	if mw.mm.Big != nil {
		mw.bigBody()
		return
	}
	mw.tiledBody(mw.mm.Tile, "the epilogue", func() { mw.epilogue(mw.tid) })
}

func newMatmulWriter(w *Writer, k *ir.Kernel, d *Dialect) *matmulWriter {
	tg := d.Threads[GroupID].Expr
	if k.Batched() {
		tg = d.Threads[GroupXYZ].Expr + ".x"
	}
	return &matmulWriter{Writer: w, k: k, d: d, mm: k.Matmul(),
		tid: d.Threads[LocalID].Expr, tg: tg, simd: d.Threads[SimdID].Expr,
		accAt: func(i int) string { return fmt.Sprintf("kgen_cs%d[kgen_r * NMAX + kgen_j]", i) }}
}

// batchPrologue moves every tensor pointer of a batched matmul to its
// matrix of this group's batch element: the grid's z, unflattened over the
// batch sizes (last fastest, kgenrt.Kernel.EachBatch's order), each
// tensor's batch dimensions at their strides (a grouped one at index /
// group; a missing one shared). The kernel then reads every matrix through
// its row and column strides (elemAt).
func (mw *matmulWriter) batchPrologue(bindings []ir.Binding) {
	batch := mw.k.Batch()
	if len(batch) == 0 {
		return
	}
	w, u := mw.Writer, mw.d.Uint
	w.P("// Batch element ", mw.d.Threads[GroupXYZ].Expr, ".z of ", ir.Shape(batch).String(), ": each tensor's pointer moves to its matrix (element strides in args).")
	w.P(u, " kgen_z = ", mw.d.Threads[GroupXYZ].Expr, ".z;")
	batchIndices(w, u, batch)
	for _, b := range bindings {
		if b.Role == ir.Args || len(b.Batch) == 0 {
			continue
		}
		w.P(b.Name, " += ", strings.Join(batchTerms(b), " + "), ";")
	}
}

// batchIndices declares kgen_b0, kgen_b1, …: batch element kgen_z's index
// along each batch dimension, unflattened last dimension fastest (the
// order kgenrt.Kernel.EachBatch walks).
func batchIndices(w *Writer, u string, batch []string) {
	for a := len(batch) - 1; a > 0; a-- {
		w.P("const ", u, " kgen_b", a, " = kgen_z % args.", batch[a], ";")
		w.P("kgen_z /= args.", batch[a], ";")
	}
	w.P("const ", u, " kgen_b0 = kgen_z;")
}

// batchTerms are the terms of binding b's offset to its part of batch
// element kgen_b…: each of its batch dimensions' index (a grouped one
// divided by its group; a missing one shared) at its stride.
func batchTerms(b ir.Binding) []string {
	var terms []string
	for j, dim := range b.Batch {
		idx := fmt.Sprint("kgen_b", dim.Axis)
		switch {
		case dim.Group != "":
			idx = "(" + idx + " / args." + dim.Group + ")"
		case dim.GroupConst > 0:
			idx = fmt.Sprint("(", idx, " / ", dim.GroupConst, "u)")
		}
		terms = append(terms, idx+" * args."+ir.StrideField(b, j))
	}
	return terms
}

// elemAt is the offset of element (r, c) of binding b as stored: r * cols
// + c for a dense matrix of cols columns, or through b's row and column
// strides in a batched kernel; a one-dimensional b ([n], [m]) takes r.
func (mw *matmulWriter) elemAt(b ir.Binding, r, c, cols string) string {
	if !mw.k.Batched() {
		if len(b.Shape) == 1 {
			return r
		}
		return r + " * " + cols + " + " + c
	}
	s := len(b.Batch)
	if len(b.Shape) == 1 {
		return r + " * args." + ir.StrideField(b, s)
	}
	return r + " * args." + ir.StrideField(b, s) + " + " + c + " * args." + ir.StrideField(b, s+1)
}

// entries are a split matmul's phases (ir.Split), written after the
// kernel: the tiled product into the workspace, then the row passes over
// it; or a batched chain's flash-decoding phases (ir.Decode).
func (matmul) entries(k *ir.Kernel, d *Dialect) []entry {
	if d.Backend == ir.CUDA && k.Matmul().QuantCUDA != nil {
		return cudaQuantEntries(k, d)
	}
	if d.Backend == ir.CUDA && k.CUDASplit() {
		return cudaDecodeEntries(k, d)
	}
	if d.Backend != ir.Metal {
		return nil // the phases are Metal's launches (ir.Kernel.Phases)
	}
	var out []entry
	for _, p := range k.Phases() {
		pk := *k
		pk.Bindings, pk.Variants = p.Bindings, p.Variants
		out = append(out, entry{name: p.Entry, kernel: &pk, comment: p.Comment, body: func(w *Writer) {
			mw := newMatmulWriter(w, k, d)
			mw.batchPrologue(p.Bindings)
			switch p.Suffix {
			case "gemv":
				mw.gemvBody(*mw.mm.Gemv)
				return
			case "part":
				mw.decodePartBody()
				return
			case "combine":
				mw.decodeCombineBody()
				return
			}
			if p.Suffix == "acc" {
				mw.tiledBody(p.Tile, "the workspace", mw.storeWorkspace)
				return
			}
			mw.accAt = func(i int) string { return fmt.Sprintf("%s[kgen_i * args.n + kgen_j]", ir.WorkspaceName(i)) }
			mw.rowPassBody(p.Tile)
		}})
	}
	return out
}

// tiledBody writes the tiled kernel on tile t: the K loop into the
// simdgroup accumulators, the accumulators into threadgroup memory, then
// finish (then says what: the epilogue, or the workspace stores).
func (mw *matmulWriter) tiledBody(t ir.Tile, then string, finish func()) {
	mw.P("using C = float;")
	mw.declareTiled(t)
	mw.tiledCore(t, then, finish)
}

// tiledCore is tiledBody after the threadgroup memory's declarations.
func (mw *matmulWriter) tiledCore(t ir.Tile, then string, finish func()) {
	w, tg, simd := mw.Writer, mw.tg, mw.simd
	w.P(fmt.Sprintf("constexpr uint BM = %d, BN = %d, BK = %d, WN = %d, TM = %d, TN = %d;", t.BM, t.BN, t.BK, t.WN, t.FragsM(), t.FragsN()))
	w.P("constexpr uint kThreads = ", t.Threads(), ";")
	slots := mw.slots(t)
	for _, s := range slots {
		mw.declare(s)
	}
	w.P("const uint kgen_tiles_n = (args.n + BN - 1) / BN;")
	w.P("const uint kgen_row0 = (", tg, " / kgen_tiles_n) * BM, kgen_col0 = (", tg, " % kgen_tiles_n) * BN;")
	w.P("// This simdgroup's block of TM x TN fragments within the tile.")
	w.P("const uint kgen_sm = (", simd, " / WN) * (TM * 8), kgen_sn = (", simd, " % WN) * (TN * 8);")
	for i := range mw.mm.B {
		w.P(fmt.Sprintf("simdgroup_float8x8 kgen_acc%d[TM][TN];", i))
	}
	mw.fragLoop(func() {
		for i := range mw.mm.B {
			w.P(fmt.Sprintf("kgen_acc%d[kgen_fm][kgen_fn] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);", i))
		}
	})
	w.Block("for (uint kgen_k0 = 0; kgen_k0 < args.k; kgen_k0 += BK)", func() {
		w.P("// Stage this step's slices, zeros outside the matrices.")
		for _, s := range slots {
			mw.stageSlot(s)
		}
		w.P("threadgroup_barrier(mem_flags::mem_threadgroup);")
		mw.multiply(slots)
		w.P("threadgroup_barrier(mem_flags::mem_threadgroup);")
	})
	w.P("// The accumulators to threadgroup memory, then ", then, " per element.")
	mw.fragLoop(func() {
		for i := range mw.mm.B {
			w.P(fmt.Sprintf("simdgroup_store(kgen_acc%d[kgen_fm][kgen_fn], kgen_cs%d, BN, ulong2(kgen_sn + 8 * kgen_fn, kgen_sm + 8 * kgen_fm));", i, i))
		}
	})
	w.P("threadgroup_barrier(mem_flags::mem_threadgroup);")
	finish()
}

// storeWorkspace writes the split's first phase's stores: each accumulator
// of an element inside [m, n] into its f32 workspace.
func (mw *matmulWriter) storeWorkspace() {
	mw.Block("for (uint kgen_e = "+mw.tid+"; kgen_e < BM * BN; kgen_e += kThreads)", func() {
		mw.P("const uint kgen_i = kgen_row0 + kgen_e / BN, kgen_j = kgen_col0 + kgen_e % BN;")
		mw.Block("if (kgen_i < args.m && kgen_j < args.n)", func() {
			for i := range mw.mm.B {
				mw.P(ir.WorkspaceName(i), "[kgen_i * args.n + kgen_j] = kgen_cs", i, "[kgen_e];")
			}
		})
	})
}

// fragLoop writes the loops over this simdgroup's fragments (kgen_fm, kgen_fn).
func (mw *matmulWriter) fragLoop(body func()) {
	mw.Block("for (uint kgen_fm = 0; kgen_fm < TM; ++kgen_fm)", func() {
		mw.Block("for (uint kgen_fn = 0; kgen_fn < TN; ++kgen_fn)", body)
	})
}

// stage writes one operand's slice into tile (row-major, width cols
// elements, size elements in all): element (r, c) of the slice is the
// operand's logical (r0 + r, c0 + c), zero where that is outside rows ×
// colsLim; a column-major operand is read transposed.
func (mw *matmulWriter) stage(tile, cols, size string, o ir.Operand, r0, c0, rowsLim, colsLim, tid string) {
	mw.Block("for (uint kgen_e = "+tid+"; kgen_e < "+size+"; kgen_e += kThreads)", func() {
		mw.P("const uint kgen_r = ", r0, " + kgen_e / ", cols, ", kgen_c = ", c0, " + kgen_e % ", cols, ";")
		mw.P(tile, "[kgen_e] = (kgen_r < ", rowsLim, " && kgen_c < ", colsLim, ") ? ", mw.operandValue(o, "kgen_r", "kgen_c", rowsLim, colsLim), " : 0.0f;")
	})
}

// operandAt is the stored offset of element (r, c) of operand o, logical
// [rows, cols]: row-major is stored r * cols + c, column-major transposed,
// c * rows + r (or through the strides of a batched kernel, elemAt).
func (mw *matmulWriter) operandAt(o ir.Operand, r, c, rows, cols string) string {
	b := mw.k.Bindings[o.Binding]
	if o.ColMajor {
		return mw.elemAt(b, c, r, rows)
	}
	return mw.elemAt(b, r, c, cols)
}

// operandValue is element (r, c) of operand o as a float: its stored
// element converted, or a packed B's dequantized value (quantAt: B's
// logical [k, n] is stored [n, k]).
func (mw *matmulWriter) operandValue(o ir.Operand, r, c, rows, cols string) string {
	if o.Quant != nil {
		return mw.quantAt(o, c, r)
	}
	return "float(" + o.Name + "[" + mw.operandAt(o, r, c, rows, cols) + "])"
}

// multiply writes the fragment products of one staged K step: fragments
// of each operand's staged type, accumulated in float.
func (mw *matmulWriter) multiply(slots []slot) {
	mw.Block("for (uint kgen_kk = 0; kgen_kk < BK; kgen_kk += 8)", func() {
		mw.P("simdgroup_matrix<", slots[0].typ, ", 8, 8> kgen_a[TM];")
		mw.Block("for (uint kgen_fm = 0; kgen_fm < TM; ++kgen_fm)", func() {
			mw.fragLoad("kgen_a[kgen_fm]", slots[0], "kgen_sm + 8 * kgen_fm", "kgen_kk")
		})
		for i, s := range slots[1:] {
			mw.Block("for (uint kgen_fn = 0; kgen_fn < TN; ++kgen_fn)", func() {
				mw.P("simdgroup_matrix<", s.typ, ", 8, 8> kgen_b;")
				mw.fragLoad("kgen_b", s, "kgen_kk", "kgen_sn + 8 * kgen_fn")
				mw.Block("for (uint kgen_fm = 0; kgen_fm < TM; ++kgen_fm)", func() {
					mw.P(fmt.Sprintf("simdgroup_multiply_accumulate(kgen_acc%d[kgen_fm][kgen_fn], kgen_a[kgen_fm], kgen_b, kgen_acc%d[kgen_fm][kgen_fn]);", i, i))
				})
			})
		}
	})
}

// epilogue writes the element loop: each thread takes strided elements of
// the tile and, where the element is inside the output, calls the epilogue
// stage and stores its outputs.
func (mw *matmulWriter) epilogue(tid string) {
	mw.Block("for (uint kgen_e = "+tid+"; kgen_e < BM * BN; kgen_e += kThreads)", func() {
		mw.P("const uint kgen_i = kgen_row0 + kgen_e / BN, kgen_j = kgen_col0 + kgen_e % BN;")
		mw.Block("if (kgen_i < args.m && kgen_j < args.n)", func() {
			mw.storeElement(func(i int) string { return fmt.Sprintf("kgen_cs%d[kgen_e]", i) })
		})
	})
}

// storeElement calls the epilogue stage at element (kgen_i, kgen_j), in
// range, with accumulator i read as acc(i), and stores its outputs.
func (mw *matmulWriter) storeElement(acc func(i int) string) {
	d := mw.d
	st := mw.k.Stages()[0]
	outs := mw.k.BindingsOf(ir.Output)
	args := mw.elementArgs(st, acc)
	for _, b := range outs {
		mw.P("C kgen_c_", b.Name, ";")
		args = append(args, "kgen_c_"+b.Name)
	}
	mw.P(st.Name, "(", strings.Join(args, ", "), ");")
	for _, b := range outs {
		mw.P(b.Name, "[", mw.elemAt(b, "kgen_i", "kgen_j", "args.n"), "] = ", d.Cvt(d.TypeName(b.DType), "kgen_c_"+b.Name), ";")
	}
}

// elementArgs are the epilogue stage st's arguments at element (kgen_i,
// kgen_j), accumulator i read as acc(i).
func (mw *matmulWriter) elementArgs(st ir.Stage, acc func(i int) string) []string {
	ins := mw.k.ElementInputs(0)
	var args []string
	for _, a := range st.Args {
		switch a.Kind {
		case ir.ArgInput:
			args = append(args, mw.d.Cvt("C", ins[a.Index].Name+"["+mw.inputAt(ins[a.Index])+"]"))
		case ir.ArgParam:
			args = append(args, paramArg(mw.d, a))
		case ir.ArgAcc:
			args = append(args, acc(a.Index))
		case ir.ArgIndex:
			args = append(args, matmulIndexArg(a.Name))
		}
	}
	return args
}

// matmulIndexArg is index name (ir.IndexNames[ir.KindMatmul]) at element
// (kgen_i, kgen_j) of the product, as the stage's int argument: every
// matmul body names the element so.
func matmulIndexArg(name string) string {
	return map[string]string{"row": "(int)kgen_i", "col": "(int)kgen_j", "m": "(int)args.m", "n": "(int)args.n"}[name]
}

// inputAt is an epilogue input's offset at element (kgen_i, kgen_j) by
// its shape.
func (mw *matmulWriter) inputAt(b ir.Binding) string {
	if !mw.k.Batched() {
		return elemIndex(b)
	}
	switch b.Shape.String() {
	case "[n]":
		return mw.elemAt(b, "kgen_j", "", "")
	case "[m]":
		return mw.elemAt(b, "kgen_i", "", "")
	}
	return mw.elemAt(b, "kgen_i", "kgen_j", "args.n")
}

// elemIndex is an epilogue input's index at element (i, j) by its shape.
func elemIndex(b ir.Binding) string {
	switch b.Shape.String() {
	case "[n]":
		return "kgen_j"
	case "[m]":
		return "kgen_i"
	}
	return "kgen_i * args.n + kgen_j"
}
