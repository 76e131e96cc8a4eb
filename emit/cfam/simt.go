package cfam

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/emit/cuda"
	"github.com/kgen-dev/kgen/ir"
)

// The CUDA matmul's f32 storage: kgen's own SIMT GEMM (ir.SIMTConfig), in
// plain CUDA, one more part of the library that needs none of CUTLASS's
// headers. WGMMA would multiply f32 as TF32; this multiplies and
// accumulates with f32 FMA, so its error is the CPU reference's kind
// (within γ_K), and it guards every tail: any m, n, k (k = 0 included: the
// epilogue of acc = 0). Its epilogue calls the same stage function the
// CUTLASS EVT does, per element, with the same leaves (ir.CUTLASS.Leaves)
// and params.
//
// Grid: x over row tiles (2³¹-1 blocks: any uint32 m), y over column tiles
// capped at 65535, each CTA looping over the column tiles gridDim.y apart,
// so no m or n overflows the grid. Global indices are of the kernel's
// template type: unsigned when m, n, k and the products m·k, k·n, m·n are
// all below 2³¹ (then every index, offset and row or column past an edge,
// n + 65535·128 included, stays below 2³², and unsigned wraps only in
// offsets that are never read), size_t otherwise. 32-bit indices save
// about 40 registers (127 against 169: two CTAs per SM instead of one).

// simtIO is what one SIMT GEMM reads and writes around its K loop: a
// single GEMM's epilogue inputs and output (the stage function per
// element, simtSingle) or a split's f32 workspace (simtWorkspace).
type simtIO struct {
	params []string       // the kernel's parameters before the args struct
	name   map[int]string // parameter names by binding: A's and B's at least
	ptrs   []string       // the host's launch arguments before the args struct
	sig    string         // the part function's signature after its name
	alias  string         // a host statement that names the args struct kgen_args, if needed
	// store writes the epilogue of element (kgen_i, kgen_j), at offset
	// kgen_at of an [m, n] output, from kgen_acc[kgen_r][kgen_c].
	store func(w *Writer)
}

// simtCode writes the SIMT GEMM of storage t: its kernel and its part
// function, defined in its own part and declared in the others.
func simtCode(w *Writer, k *ir.Kernel, d *Dialect, t dtype.DType, ns string) {
	io := simtSingle(k, d, t)
	if sp := k.Matmul().Split; sp != nil && sp.CUDA != nil {
		io = simtWorkspace(k, d, t)
	}
	part := cuda.SIMTPart(t)
	inner := ns + "_" + part + "_gemm" // the kernel's namespace
	g := ir.SIMTConfig
	w.P("#if !defined(KGEN_PARTS) || defined(KGEN_PART_", part, ")")
	w.P("namespace ", inner, " {")
	w.P(fmt.Sprintf("constexpr int kgen_BM = %d, kgen_BN = %d, kgen_BK = %d, kgen_TM = %d, kgen_TN = %d, kgen_THREADS = %d;",
		g.Tile[0], g.Tile[1], g.Tile[2], g.Micro[0], g.Micro[1], g.Threads))
	w.P("constexpr int kgen_TX = kgen_BN / kgen_TN; // threads along n")
	w.P("constexpr int kgen_PAD = 4; // tile rows of BM + 4 floats: k-major stores free of bank conflicts, rows 16-byte aligned")
	w.P("constexpr int kgen_LA = kgen_BK * kgen_BM / kgen_THREADS, kgen_LB = kgen_BK * kgen_BN / kgen_THREADS; // tile elements per thread")
	w.P("static_assert(kgen_THREADS == (kgen_BM / kgen_TM) * (kgen_BN / kgen_TN), \"one thread per microtile\");")
	w.P("static_assert(kgen_TM == 8 && kgen_TN == 8, \"a microtile is two float4 halves BM/2 (BN/2) apart\");")
	w.P("static_assert(kgen_LA * kgen_THREADS == kgen_BK * kgen_BM && kgen_LB * kgen_THREADS == kgen_BK * kgen_BN, \"whole tiles per thread\");")
	w.P("static_assert(kgen_THREADS % kgen_BK == 0 && kgen_THREADS % kgen_BM == 0 && kgen_THREADS % kgen_BN == 0, \"slots one stride apart\");")
	w.P()
	simtKernel(w, k, io)
	w.P("} // namespace ", inner)
	w.P()
	simtHost(w, io, ns+"_"+part, inner)
	w.P("#else")
	w.P(`extern "C" int `, ns, "_", part, io.sig, ";")
	w.P("#endif")
	w.P()
}

// simtHost writes the part's host function fn: the grid, the index type
// (32-bit where every index fits) and the launch on the caller's stream.
func simtHost(w *Writer, io simtIO, fn, inner string) {
	w.Block(`extern "C" int `+fn+io.sig, func() {
		w.P("using namespace ", inner, ";")
		if io.alias != "" {
			w.P(io.alias)
		}
		w.P("const size_t kgen_rt = (size_t(kgen_args.m) + kgen_BM - 1) / kgen_BM, kgen_ct = (size_t(kgen_args.n) + kgen_BN - 1) / kgen_BN;")
		w.P("if (kgen_rt == 0 || kgen_ct == 0) return 0;")
		w.P("const dim3 kgen_grid(unsigned(kgen_rt), unsigned(kgen_ct < 65535 ? kgen_ct : 65535));")
		w.P("const unsigned long long kgen_m = kgen_args.m, kgen_n = kgen_args.n, kgen_k = kgen_args.k, kgen_lim = 1ull << 31;")
		w.P("const bool kgen_narrow = kgen_m < kgen_lim && kgen_n < kgen_lim && kgen_k < kgen_lim && kgen_m * kgen_k < kgen_lim && kgen_k * kgen_n < kgen_lim && kgen_m * kgen_n < kgen_lim;")
		args := strings.Join(append(io.ptrs, "kgen_args"), ", ")
		w.P("cudaStream_t kgen_s = static_cast<cudaStream_t>(kgen_stream);")
		w.P("if (kgen_narrow) kgen_gemm<unsigned><<<kgen_grid, kgen_THREADS, 0, kgen_s>>>(", args, ");")
		w.P("else kgen_gemm<size_t><<<kgen_grid, kgen_THREADS, 0, kgen_s>>>(", args, ");")
		w.P("const cudaError_t kgen_e = cudaGetLastError();")
		w.Block("if (kgen_e != cudaSuccess)", func() {
			w.P(`std::snprintf(kgen_err, kgen_errlen, "SIMT GEMM launch (m=%u n=%u k=%u): %s", kgen_args.m, kgen_args.n, kgen_args.k, cudaGetErrorString(kgen_e));`)
			w.P("return 3;")
		})
		w.P("return 0;")
	})
}

// simtSingle is a single GEMM's IO: the kernel's bindings in order (A and
// B read-only, epilogue inputs, the output) from the host's pointer array,
// and the epilogue stage per element.
func simtSingle(k *ir.Kernel, d *Dialect, t dtype.DType) simtIO {
	T := d.TypeName(t)
	mm := k.Matmul()
	io := simtIO{name: map[int]string{}, sig: partSig(k)}
	for _, b := range k.Bindings {
		switch {
		case b.Role == ir.Input && (b.Index == mm.A.Binding || b.Index == mm.B[0].Binding):
			io.params = append(io.params, "const "+T+"* __restrict__ "+b.Name) // read-only path: never written by this launch
			io.ptrs = append(io.ptrs, fmt.Sprintf("static_cast<const %s*>(kgen_ptrs[%d])", T, b.Index))
		case b.Role == ir.Input:
			io.params = append(io.params, "const "+T+"* "+b.Name) // may be the output itself (in place)
			io.ptrs = append(io.ptrs, fmt.Sprintf("static_cast<const %s*>(kgen_ptrs[%d])", T, b.Index))
		case b.Role == ir.Output:
			io.params = append(io.params, T+"* "+b.Name)
			io.ptrs = append(io.ptrs, fmt.Sprintf("static_cast<%s*>(kgen_ptrs[%d])", T, b.Index))
		default:
			continue
		}
		io.name[b.Index] = b.Name
	}
	io.store = func(w *Writer) { simtEpilogue(w, k, io.name, T) }
	return io
}

// simtWorkspace is a split's workspace GEMM: A and one B (the split calls
// it once per B, all Bs in one layout) into the f32 [m, n] workspace
// kgen_d, the accumulator itself; the signature is the CUTLASS workspace
// GEMMs' (splitRunParams).
func simtWorkspace(k *ir.Kernel, d *Dialect, t dtype.DType) simtIO {
	T := d.TypeName(t)
	mm := k.Matmul()
	return simtIO{
		params: []string{"const " + T + "* __restrict__ kgen_A", "const " + T + "* __restrict__ kgen_B", "float* __restrict__ kgen_D"},
		name:   map[int]string{mm.A.Binding: "kgen_A", mm.B[0].Binding: "kgen_B"},
		ptrs:   []string{"static_cast<const " + T + "*>(kgen_pa)", "static_cast<const " + T + "*>(kgen_pb)", "kgen_d"},
		sig:    "(" + splitRunParams(k) + ")",
		alias:  "const " + k.Name + "_args& kgen_args = kgen_a;",
		store:  func(w *Writer) { w.P("kgen_D[kgen_at] = kgen_acc[kgen_r][kgen_c];") },
	}
}

// simtOperand is how the kernel stages one operand's tile. Thread t's
// LA (LB) elements of a tile are its slots q: contiguous, slot q is
// (x, kk) = (t % side, t / side + q·THREADS/side); otherwise (t / BK +
// q·THREADS/BK, t % BK). Consecutive threads so read consecutive
// addresses of the operand's layout (coalesced; along k, a row's 8 floats
// fill one 32-byte sector), and each slot is one offset, one stride and
// one step per K tile from the thread's first.
type simtOperand struct {
	id     string // "a" or "b": the suffix of its variables
	name   string // the binding's parameter name
	side   string // BM or BN
	extent string // M or N
	origin string // the tile's first row (A) or column (B)
	// contiguous: the tile's non-k index is the fastest in memory (A
	// column-major, stored [k, m]; B row-major, [k, n]); otherwise k is
	// (A row-major [m, k]; B column-major, stored [n, k]).
	contiguous bool
}

func simtOperands(k *ir.Kernel, name map[int]string) [2]simtOperand {
	mm := k.Matmul()
	return [2]simtOperand{
		{id: "a", name: name[mm.A.Binding], side: "kgen_BM", extent: "kgen_M", origin: "kgen_i0", contiguous: mm.A.ColMajor},
		{id: "b", name: name[mm.B[0].Binding], side: "kgen_BN", extent: "kgen_N", origin: "kgen_j0", contiguous: !mm.B[0].ColMajor},
	}
}

// v names one of the operand's variables.
func (o simtOperand) v(s string) string { return "kgen_" + s + o.id }

// count is its tile elements per thread.
func (o simtOperand) count() string { return "kgen_L" + strings.ToUpper(o.id) }

// setup writes the thread's first slot and its offset at K tile 0 (x, kk,
// o), the offset between slots (s) and from one K tile to the next (d).
func (o simtOperand) setup(w *Writer) {
	if o.contiguous {
		w.P("const int ", o.v("x"), " = int(threadIdx.x) % ", o.side, ", ", o.v("k"), " = int(threadIdx.x) / ", o.side, ";")
		w.P("kgen_I ", o.v("o"), " = kgen_I(", o.v("k"), ") * ", o.extent, " + ", o.origin, " + ", o.v("x"), ";")
		w.P("const kgen_I ", o.v("s"), " = kgen_I(kgen_THREADS / ", o.side, ") * ", o.extent, ", ", o.v("d"), " = kgen_I(kgen_BK) * ", o.extent, ";")
		return
	}
	w.P("const int ", o.v("x"), " = int(threadIdx.x) / kgen_BK, ", o.v("k"), " = int(threadIdx.x) % kgen_BK;")
	w.P("kgen_I ", o.v("o"), " = (", o.origin, " + ", o.v("x"), ") * kgen_K + ", o.v("k"), ";")
	w.P("const kgen_I ", o.v("s"), " = kgen_I(kgen_THREADS / kgen_BK) * kgen_K, ", o.v("d"), " = kgen_BK;")
}

// slot is slot q's tile coordinates.
func (o simtOperand) slot() string {
	if o.contiguous {
		return fmt.Sprintf("const int kgen_x = %s, kgen_kk = %s + kgen_q * (kgen_THREADS / %s);", o.v("x"), o.v("k"), o.side)
	}
	return fmt.Sprintf("const int kgen_x = %s + kgen_q * (kgen_THREADS / kgen_BK), kgen_kk = %s;", o.v("x"), o.v("k"))
}

// fetch writes the loads of the K tile at kgen_k into registers, zero past
// the matrix's edges, and steps the offset to the next K tile.
func (o simtOperand) fetch(w *Writer) {
	w.P("#pragma unroll")
	w.Block("for (int kgen_q = 0; kgen_q < "+o.count()+"; ++kgen_q)", func() {
		w.P(o.slot())
		w.P(o.v("r"), "[kgen_q] = (", o.origin, " + kgen_x < ", o.extent, " && kgen_k + kgen_kk < kgen_K) ? kgen_f(",
			o.name, "[", o.v("o"), " + kgen_q * ", o.v("s"), "]) : 0.0f;")
	})
	w.P(o.v("o"), " += ", o.v("d"), ";")
}

// store writes the fetched registers into the shared tile, k-major.
func (o simtOperand) store(w *Writer) {
	w.P("#pragma unroll")
	w.Block("for (int kgen_q = 0; kgen_q < "+o.count()+"; ++kgen_q)", func() {
		w.P(o.slot())
		w.P("kgen_", o.id, "s[kgen_kk][kgen_x] = ", o.v("r"), "[kgen_q];")
	})
}

// simtKernel writes the GEMM kernel: per CTA a BM×BN output tile, A and B
// staged k-major in shared memory (the next K tile fetched into registers
// while this one is multiplied), an 8×8 FMA microtile per thread read as
// float4s, then the epilogue stage per element in range.
func simtKernel(w *Writer, k *ir.Kernel, io simtIO) {
	params := append(append([]string(nil), io.params...), k.Name+"_args kgen_args")
	ops := simtOperands(k, io.name)
	w.P("template <typename kgen_I> // the index type: unsigned where every index fits (kgen_narrow), else size_t")
	w.P("__global__ void __launch_bounds__(kgen_THREADS) kgen_gemm(", strings.Join(params, ", "), ") {")
	w.Indent(func() {
		w.P("__shared__ __align__(16) float kgen_as[kgen_BK][kgen_BM + kgen_PAD];")
		w.P("__shared__ __align__(16) float kgen_bs[kgen_BK][kgen_BN + kgen_PAD];")
		w.P("const kgen_I kgen_M = kgen_args.m, kgen_N = kgen_args.n, kgen_K = kgen_args.k;")
		w.P("const unsigned kgen_kt = unsigned((kgen_K + kgen_BK - 1) / kgen_BK); // K tiles")
		w.P("const int kgen_tx = int(threadIdx.x) % kgen_TX, kgen_ty = int(threadIdx.x) / kgen_TX;")
		w.P("const kgen_I kgen_i0 = kgen_I(blockIdx.x) * kgen_BM;")
		w.Block("for (kgen_I kgen_jt = blockIdx.y; kgen_jt * kgen_BN < kgen_N; kgen_jt += gridDim.y)", func() {
			w.P("const kgen_I kgen_j0 = kgen_jt * kgen_BN;")
			w.P("float kgen_acc[kgen_TM][kgen_TN] = {};")
			w.P("float kgen_ra[kgen_LA], kgen_rb[kgen_LB];")
			for _, o := range ops {
				o.setup(w)
			}
			w.Block("if (kgen_kt > 0)", func() {
				w.P("const kgen_I kgen_k = 0;")
				for _, o := range ops {
					o.fetch(w)
					o.store(w)
				}
			})
			w.P("__syncthreads();")
			w.Block("for (unsigned kgen_t = 0; kgen_t < kgen_kt; ++kgen_t)", func() {
				w.P("const bool kgen_next = kgen_t + 1 < kgen_kt;")
				w.Block("if (kgen_next)", func() {
					w.P("const kgen_I kgen_k = kgen_I(kgen_t + 1) * kgen_BK;")
					for _, o := range ops {
						o.fetch(w)
					}
				})
				simtMultiply(w)
				w.P("__syncthreads();")
				w.Block("if (kgen_next)", func() {
					for _, o := range ops {
						o.store(w)
					}
					w.P("__syncthreads();")
				})
			})
			simtStores(w, io)
		})
	})
	w.P("}")
	w.P()
}

// simtMultiply writes one K tile's FMAs: thread (tx, ty) holds rows
// 4·ty + {0..3} and BM/2 + 4·ty + {0..3}, columns likewise from tx, read as
// float4s (A's are broadcasts within a warp, B's consecutive).
func simtMultiply(w *Writer) {
	w.P("#pragma unroll")
	w.Block("for (int kgen_kk = 0; kgen_kk < kgen_BK; ++kgen_kk)", func() {
		w.P("float kgen_a[kgen_TM], kgen_b[kgen_TN];")
		w.P("*reinterpret_cast<float4*>(&kgen_a[0]) = *reinterpret_cast<const float4*>(&kgen_as[kgen_kk][4 * kgen_ty]);")
		w.P("*reinterpret_cast<float4*>(&kgen_a[4]) = *reinterpret_cast<const float4*>(&kgen_as[kgen_kk][kgen_BM / 2 + 4 * kgen_ty]);")
		w.P("*reinterpret_cast<float4*>(&kgen_b[0]) = *reinterpret_cast<const float4*>(&kgen_bs[kgen_kk][4 * kgen_tx]);")
		w.P("*reinterpret_cast<float4*>(&kgen_b[4]) = *reinterpret_cast<const float4*>(&kgen_bs[kgen_kk][kgen_BN / 2 + 4 * kgen_tx]);")
		w.P("#pragma unroll")
		w.P("for (int kgen_r = 0; kgen_r < kgen_TM; ++kgen_r)")
		w.P("#pragma unroll")
		w.P("    for (int kgen_c = 0; kgen_c < kgen_TN; ++kgen_c) kgen_acc[kgen_r][kgen_c] = fmaf(kgen_a[kgen_r], kgen_b[kgen_c], kgen_acc[kgen_r][kgen_c]);")
	})
}

// simtStores writes the epilogue's loops over the thread's microtile,
// io.store per element in range. A thread's rows and columns rise with r
// and c, so the first out of range ends the loop.
func simtStores(w *Writer, io simtIO) {
	w.P("#pragma unroll")
	w.Block("for (int kgen_r = 0; kgen_r < kgen_TM; ++kgen_r)", func() {
		w.P("const kgen_I kgen_i = kgen_i0 + 4 * kgen_ty + (kgen_r % 4) + (kgen_r / 4) * (kgen_BM / 2);")
		w.P("if (kgen_i >= kgen_M) break;")
		w.P("#pragma unroll")
		w.Block("for (int kgen_c = 0; kgen_c < kgen_TN; ++kgen_c)", func() {
			w.P("const kgen_I kgen_j = kgen_j0 + 4 * kgen_tx + (kgen_c % 4) + (kgen_c / 4) * (kgen_BN / 2);")
			w.P("if (kgen_j >= kgen_N) break;")
			w.P("const kgen_I kgen_at = kgen_i * kgen_N + kgen_j;")
			io.store(w)
		})
	})
}

// simtEpilogue writes a single GEMM's store: the stage function, its
// leaves read as the EVT's are (ir.EVTLeaf) and its params from the args
// struct, into the output.
func simtEpilogue(w *Writer, k *ir.Kernel, name map[int]string, T string) {
	c := k.Matmul().CUDA
	st, out := k.Stages()[0], k.BindingsOf(ir.Output)[0]
	var call []string
	leaf := 0
	for _, a := range st.Args {
		if a.Kind == ir.ArgParam {
			call = append(call, "kgen_args."+a.Name)
			continue
		}
		l := c.Leaves[leaf]
		leaf++
		switch l.Kind {
		case ir.EVTAcc:
			call = append(call, "kgen_acc[kgen_r][kgen_c]")
		case ir.EVTRow:
			call = append(call, "kgen_f("+name[l.Binding]+"[kgen_j])")
		case ir.EVTCol:
			call = append(call, "kgen_f("+name[l.Binding]+"[kgen_i])")
		case ir.EVTSource:
			call = append(call, "kgen_f("+name[l.Binding]+"[kgen_at])")
		}
	}
	w.P("float kgen_y;")
	w.P(st.Name, "(", strings.Join(append(call, "kgen_y"), ", "), ");")
	w.P(out.Name, "[kgen_at] = kgen_to<", T, ">(kgen_y);")
}
