package cfam

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/emit/cuda"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/launch"
)

// The dense form of a quantized matmul (ir.QuantDense): the dequantization
// kernel (an entry point of every build: the CPU harness runs it) and, in
// the library build alone (`kgen cuda`'s parts, -DKGEN_PARTS), the CUTLASS
// GEMM over the dequantized workspace and one host function per entry
// point, named by its host name:
//
//	int <host>(void* stream, void* const* ptrs, const void* args, char* err, int errlen)
//
// so that the CUDA port calls the library as it calls a plain matmul's,
// each form (kgenrt's CUDAForms) by its phase's host name. Without
// -DKGEN_PARTS the file is the kernels alone (nvcc's whole-file compile,
// the CPU harness), under their host names; in the library the kernels
// take the prefix kgen_k_ and the host functions the names.

// denseOf is k's dense form on backend d, or nil.
func denseOf(k *ir.Kernel, d *Dialect) *ir.QuantDense {
	if mm := k.Matmul(); d.Backend == ir.CUDA && mm != nil && mm.QuantCUDA != nil {
		return mm.QuantCUDA.Dense
	}
	return nil
}

// dequantEntry is the dequantization kernel's entry.
func dequantEntry(k *ir.Kernel, d *Dialect, kernelOf func(*ir.Phase) *ir.Kernel) entry {
	p := denseOf(k, d).Dequant
	return entry{name: p.Entry, kernel: kernelOf(p), threads: ir.DequantThreads, comment: p.Comment,
		body: func(w *Writer) {
			mw := newMatmulWriter(w, k, d)
			w.P(d.Threads[LocalID].Local)
			mw.cudaQuantDequant()
		}}
}

// cudaQuantDequant writes the dequantization kernel: thread c takes chunk
// c % (k/32) of weight row c / (k/32) of each B, reads its packed words
// once (the tiled kernel's readers: 16-byte loads where the format allows),
// dequantizes them into the storage type exactly as the other forms do and
// restores the natural order. Chunk c lies at c·32 elements of the
// row-major [n, k] workspace, so a block's chunks are one contiguous run:
// each thread stages its 64 bytes in shared memory and the block stores
// the run with consecutive threads on consecutive 16 bytes (a thread's own
// four 16-byte stores would be 64 bytes apart across the warp).
func (mw *matmulWriter) cudaQuantDequant() {
	w := mw.Writer
	t := ir.DequantThreads
	w.P(fmt.Sprintf("__shared__ uint4 kgen_stage[%d * 4]; // each thread's 32 values, in chunk order", t))
	w.P("const unsigned kgen_chunks = args.k / 32u; // k is a multiple of every format's 32-value chunk")
	w.P(fmt.Sprintf("const unsigned long long kgen_c0 = (unsigned long long)%s * %du, kgen_total = (unsigned long long)args.n * kgen_chunks;", mw.tg, t))
	w.P("const unsigned long long kgen_c = kgen_c0 + ", mw.tid, ";")
	w.P("const unsigned kgen_row = (unsigned)(kgen_c / kgen_chunks), kgen_kc = (unsigned)(kgen_c % kgen_chunks) * 32u;")
	w.P(fmt.Sprintf("const unsigned kgen_have = (kgen_total - kgen_c0 < %dull ? (unsigned)(kgen_total - kgen_c0) : %du) * 4u; // this block's 16-byte pieces (no block starts past the end)", t, t))
	for i, r := range mw.readers() {
		raw := fmt.Sprintf("kgen_raw%d", i)
		if i > 0 {
			w.P("__syncthreads(); // the last B's run is stored")
		}
		w.Block("if (kgen_c < kgen_total)", func() {
			mw.lines(r.decl(raw))
			mw.lines(r.load(raw, "kgen_row", "kgen_kc")...)
			w.P("unsigned kgen_p[16], kgen_nat[16];")
			w.P(r.dequant(raw, "kgen_p"))
			w.P("kgen_natural(kgen_p, kgen_nat);")
			w.P("#pragma unroll")
			w.Block("for (unsigned kgen_v = 0; kgen_v < 4; ++kgen_v)", func() {
				w.P("kgen_stage[", mw.tid, " * 4u + kgen_v] = make_uint4(kgen_nat[4 * kgen_v], kgen_nat[4 * kgen_v + 1], kgen_nat[4 * kgen_v + 2], kgen_nat[4 * kgen_v + 3]);")
			})
		})
		w.P("__syncthreads();")
		w.P("uint4* kgen_dst = reinterpret_cast<uint4*>(", ir.DenseName(i), ") + kgen_c0 * 4u;")
		w.Block(fmt.Sprintf("for (unsigned kgen_v = %s; kgen_v < kgen_have; kgen_v += %du)", mw.tid, t), func() {
			w.P("kgen_dst[kgen_v] = kgen_stage[kgen_v];")
		})
	}
}

// libraryHead opens the kernels' section of a dense quantized matmul: in
// the library only its entry part compiles them, each renamed kgen_k_<host>.
func (matmul) libraryHead(w *Writer, k *ir.Kernel, d *Dialect) {
	if denseOf(k, d) == nil {
		return
	}
	w.P("#if !defined(KGEN_PARTS) || defined(KGEN_PART_entry) // the kernels: every build but the library's CUTLASS parts")
	w.P("#if defined(KGEN_PARTS) // the library: the host functions below take the host names")
	for _, n := range quantEntryNames(k) {
		w.P("#define ", n, " kgen_k_", n)
	}
	w.P("#endif")
	w.P()
}

// libraryTail closes the kernels' section and writes the library's
// CUTLASS GEMM and host functions.
func (matmul) libraryTail(w *Writer, k *ir.Kernel, d *Dialect) {
	dense := denseOf(k, d)
	if dense == nil {
		return
	}
	w.P("#if defined(KGEN_PARTS)")
	for _, n := range quantEntryNames(k) {
		w.P("#undef ", n)
	}
	w.P("#endif")
	w.P("#endif // the kernels")
	w.P()
	c, ns := dense.GEMM, "kgen_"+k.Name
	forms := cutlassForms(k) // a quantized B is ColMajor (stored [n, k]), as the workspace is, at the packed tensor's binding, where the host function binds the workspace
	denseGEMM(w, k, c, forms, ns)
	w.P("#if defined(KGEN_PARTS) && defined(KGEN_PART_entry) // the host functions")
	w.Block("static int kgen_launched(const char* kgen_what, char* kgen_err, int kgen_errlen)", func() {
		w.P("const cudaError_t kgen_e = cudaGetLastError();")
		w.P("if (kgen_e == cudaSuccess) return 0;")
		w.P(`std::snprintf(kgen_err, kgen_errlen, "launch of %s: %s", kgen_what, cudaGetErrorString(kgen_e));`)
		w.P("return 2;")
	})
	w.P()
	for _, v := range k.Variants {
		hostFuncs(w, k, d, dense, v, ns)
	}
	w.P("#endif")
}

// denseGEMM writes the CUTLASS GEMM over the workspace: the plain
// matmul's functor, GEMM types and run functions (its CUTLASS parts only)
// and one part function per dtype × problem class.
func denseGEMM(w *Writer, k *ir.Kernel, c *ir.CUTLASS, forms [2]gemmForm, ns string) {
	w.P("#if defined(KGEN_PARTS) && !defined(KGEN_NO_CUTLASS) // the dense form's GEMM: CUTLASS over the dequantized workspace")
	cutlassFunctor(w, k, ns)
	w.P("namespace ", ns, " {")
	w.P("using namespace ::cute;")
	w.P("using namespace ::cutlass::epilogue::fusion;")
	w.P()
	for _, f := range forms {
		cutlassGemmType(w, c, ns, f)
		w.P()
		cutlassRun(w, k, c, f)
		w.P()
	}
	w.P("} // namespace ", ns)
	w.P("#endif")
	w.P()
	w.P("#if defined(KGEN_PARTS)")
	gemmParts(w, k, c, forms, ns, partSig(k), "kgen_stream, kgen_ptrs, kgen_args, kgen_err, kgen_errlen")
	w.P("#endif")
	w.P()
}

// hostFuncs writes variant v's host functions: the kernel's own (the
// dense form, or the tiled kernel where TMA cannot load) and the skinny
// and mid forms' (their kernels over the IR's grids).
func hostFuncs(w *Writer, k *ir.Kernel, d *Dialect, dense *ir.QuantDense, v ir.Variant, ns string) {
	mm := k.Matmul()
	hostFunc(w, k, v.HostName, func() {
		var ptrs []string
		for _, b := range k.Bindings {
			if (b.Role == ir.Input || b.Role == ir.Output) && !isQuantB(mm, b.Index) {
				ptrs = append(ptrs, fmt.Sprintf("kgen_ptrs[%d]", b.Index))
			}
		}
		w.P("// What TMA cannot load runs the tiled kernel (mma.sync, dequantizing in shared memory).")
		own := kernelLaunch(k, d, v, "kgen_k_"+v.HostName, k.Bindings, nil, k.Launch(ir.CUDA))
		unalignedTest(w, k, dense.GEMM, "kgen_args", ptrs, "{ "+own+" return kgen_launched(\""+v.HostName+"\", kgen_err, kgen_errlen); }")
		denseCall(w, k, d, dense, v, ns)
	})
	for _, p := range []*ir.Phase{&mm.Gemv.Phase, mm.QuantCUDA.MidPhase} {
		pv := phaseVariant(p, v.DType)
		hostFunc(w, k, pv.HostName, func() {
			w.P(kernelLaunch(k, d, v, "kgen_k_"+pv.HostName, p.Bindings, p.From, p.LaunchOn(ir.CUDA)))
			w.P("return kgen_launched(\"", pv.HostName, "\", kgen_err, kgen_errlen);")
		})
	}
}

// denseCall writes the dense form: the workspace from kgen's pool, the
// dequantization, then the problem class's GEMM (the first whose MaxM
// admits m) with the workspace bound in B's place, and the workspace freed
// on the stream after it.
func denseCall(w *Writer, k *ir.Kernel, d *Dialect, dense *ir.QuantDense, v ir.Variant, ns string) {
	mm, t := k.Matmul(), d.Types[v.DType]
	w.P(t, "* ", ir.DenseName(0), " = nullptr;")
	w.P("int kgen_rc = kgen_workspace(reinterpret_cast<void**>(&", ir.DenseName(0), "), (size_t)kgen_args.n * kgen_args.k * sizeof(", t, "), kgen_s, \"the dequantized weights\", kgen_err, kgen_errlen);")
	w.P("if (kgen_rc != 0) return kgen_rc;")
	p := dense.Dequant
	pv := phaseVariant(p, v.DType)
	w.P(kernelLaunch(k, d, v, "kgen_k_"+pv.HostName, p.Bindings, p.From, p.LaunchOn(ir.CUDA)))
	w.P("kgen_rc = kgen_launched(\"", pv.HostName, "\", kgen_err, kgen_errlen);")
	w.Block("if (kgen_rc == 0)", func() {
		n := len(k.Bindings) - 1
		w.P(fmt.Sprintf("void* kgen_p[%d];", n))
		w.P(fmt.Sprintf("for (int kgen_i = 0; kgen_i < %d; ++kgen_i) kgen_p[kgen_i] = kgen_ptrs[kgen_i];", n))
		w.P(fmt.Sprintf("kgen_p[%d] = %s; // B: the dense [n, k] weights", mm.B[0].Binding, ir.DenseName(0)))
		for i, g := range dense.GEMM.Configs {
			call := fmt.Sprint("kgen_rc = ", ns, "_", cuda.GemmPart(v.DType, g), "(kgen_stream, kgen_p, kgen_args, kgen_err, kgen_errlen);")
			switch {
			case g.MaxM > 0 && i == 0:
				w.P("if (kgen_args.m <= ", g.MaxM, "u) ", call)
			case g.MaxM > 0:
				w.P("else if (kgen_args.m <= ", g.MaxM, "u) ", call)
			case i == 0:
				w.P(call)
			default:
				w.P("else ", call)
			}
		}
	})
	w.P("cudaFreeAsync(", ir.DenseName(0), ", kgen_s);")
	w.P("return kgen_rc;")
}

// hostFunc writes one host function named host over body, with the args
// struct and the stream at hand.
func hostFunc(w *Writer, k *ir.Kernel, host string, body func()) {
	args := k.Name + "_args"
	w.Block(`extern "C" int `+host+"(void* kgen_stream, void* const* kgen_ptrs, const void* kgen_argp, char* kgen_err, int kgen_errlen)", func() {
		w.P("const ", args, "& kgen_args = *static_cast<const ", args, "*>(kgen_argp);")
		w.P("const cudaStream_t kgen_s = static_cast<cudaStream_t>(kgen_stream);")
		w.P("(void)kgen_s;")
		w.P("if (kgen_args.m == 0 || kgen_args.n == 0) return 0; // no output element")
		body()
	})
	w.P()
}

// kernelLaunch is the statement launching kernel fn of variant v with
// bindings bs (from[i] the kernel binding that binding i is, a negative one
// the dense workspace; nil: the kernel's own) over launch l's grid, which
// the IR gives in threads (blocks of l.Threadgroup[0]).
func kernelLaunch(k *ir.Kernel, d *Dialect, v ir.Variant, fn string, bs []ir.Binding, from []int, l launch.Launch) string {
	var args []string
	for i, b := range bs {
		t := d.Types[v.DType]
		if b.DType != dtype.Invalid {
			t = d.Types[b.DType]
		}
		at := i
		if from != nil {
			at = from[i]
		}
		switch {
		case b.Role == ir.Args:
			args = append(args, "kgen_args")
		case at < 0:
			args = append(args, ir.DenseName(-1-at))
		case b.Role == ir.Input:
			args = append(args, fmt.Sprintf("static_cast<const %s*>(kgen_ptrs[%d])", t, at))
		default:
			args = append(args, fmt.Sprintf("static_cast<%s*>(kgen_ptrs[%d])", t, at))
		}
	}
	tg := l.Threadgroup[0]
	return fmt.Sprintf("%s<<<(unsigned)((%s + %du) / %du), %d, 0, kgen_s>>>(%s);", fn, cExpr(l.Grid[0]), tg-1, tg, tg, strings.Join(args, ", "))
}

// cExpr spells a launch size expression in C over the args struct, in
// 64-bit arithmetic.
func cExpr(e *launch.Expr) string {
	sub := func(i int) string { return cExpr(e.Args[i]) }
	switch e.Op {
	case launch.Lit:
		return fmt.Sprintf("%dull", e.Value)
	case launch.Var:
		return "(unsigned long long)kgen_args." + e.Name
	case launch.Mul:
		return "(" + sub(0) + " * " + sub(1) + ")"
	case launch.Div:
		return "(" + sub(0) + " / " + sub(1) + ")"
	case launch.CeilDiv:
		return "((" + sub(0) + " + " + sub(1) + " - 1ull) / " + sub(1) + ")"
	case launch.Min:
		return "min(" + sub(0) + ", " + sub(1) + ")"
	case launch.Max:
		return "max(" + sub(0) + ", " + sub(1) + ")"
	case launch.Add:
		var ts []string
		for i := range e.Args {
			ts = append(ts, sub(i))
		}
		return "(" + strings.Join(ts, " + ") + ")"
	}
	panic(fmt.Sprintf("cfam: launch expression %s has no C spelling", e))
}

// phaseVariant is p's variant of storage t.
func phaseVariant(p *ir.Phase, t dtype.DType) ir.Variant {
	for _, v := range p.Variants {
		if v.DType == t {
			return v
		}
	}
	panic(fmt.Sprintf("cfam: phase %s has no %s variant", p.Entry, t))
}

// isQuantB reports whether binding i is a quantized B's packed tensor or
// table (read by the dequantization, not by TMA).
func isQuantB(mm *ir.Matmul, i int) bool {
	for _, b := range mm.B {
		if i == b.Binding || i == b.Scales || i == b.Biases {
			return true
		}
	}
	return false
}
