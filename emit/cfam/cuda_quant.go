package cfam

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgenrt"
)

// The CUDA port of a matmul with quantized Bs (ir.QuantCUDA): a tiled
// tensor-core kernel (the kernel's own entry point) and a skinny one (the
// Gemv phase's entry point, which the CUDA port launches for m ≤
// SkinnyMax). Both read each B's packed words as its producer wrote them
// and dequantize 32-value chunks with the readers of templates/cuda/
// quant.tmpl; the fragment code is cuda_mma.go's, shared with the chain.

// cudaQuantEntries are the CUDA entry points beside the tiled kernel: the
// skinny kernel, the Gemv phase's entry (ir.Kernel.CUDAForms).
func cudaQuantEntries(k *ir.Kernel, d *Dialect) []entry {
	mm := k.Matmul()
	q, g, mid := mm.QuantCUDA, mm.Gemv, mm.QuantCUDA.MidPhase
	kernelOf := func(p *ir.Phase) *ir.Kernel {
		pk := *k
		pk.Bindings, pk.Variants = p.Bindings, p.Variants
		return &pk
	}
	out := []entry{
		{name: g.Entry, kernel: kernelOf(&g.Phase), threads: g.CUDA.Threadgroup[0], comment: fmt.Sprintf("m <= %d: the skinny kernel (the CUDA port launches it for such m)", q.SkinnyMax),
			body: func(w *Writer) {
				mw := newMatmulWriter(w, k, d)
				w.P(d.Threads[LocalID].Local)
				mw.cudaQuantSkinny(*g)
			}},
		{name: mid.Entry, kernel: kernelOf(mid), threads: q.Mid.Threads(), comment: mid.Comment,
			body: func(w *Writer) {
				mw := newMatmulWriter(w, k, d)
				w.P(d.Threads[LocalID].Local)
				mw.cudaQuantTiled(q.Mid)
			}},
	}
	if q.Dense != nil {
		out = append(out, dequantEntry(k, d, kernelOf))
	}
	return out
}

// quantEntryNames are every CUDA entry point of a quantized matmul.
func quantEntryNames(k *ir.Kernel) []string {
	var out []string
	q := k.Matmul().QuantCUDA
	vss := [][]ir.Variant{k.Variants, k.Matmul().Gemv.Variants, q.MidPhase.Variants}
	if q.Dense != nil {
		vss = append(vss, q.Dense.Dequant.Variants)
	}
	for _, vs := range vss {
		for _, v := range vs {
			out = append(out, v.HostName)
		}
	}
	return out
}

// cudaQuantReader writes one quantized B's chunk reads: the registers a
// chunk's raw words take, their loads, and their dequantization into 16
// pairs of the storage type.
type cudaQuantReader struct {
	mw *matmulWriter
	o  ir.Operand
}

// decl declares raw registers name for one chunk.
func (r cudaQuantReader) decl(name string) string {
	switch q := r.o.Quant; q.Format {
	case kgenrt.Q4_0:
		return fmt.Sprintf("kgen_ggml_raw<4> %s;", name)
	case kgenrt.Q8_0:
		return fmt.Sprintf("kgen_ggml_raw<8> %s;", name)
	default:
		return fmt.Sprintf("unsigned %s[%d];\nT %s_s, %s_b;", name, q.Bits, name, name)
	}
}

// load writes the loads of weight row `row`'s chunk starting at k = kk
// into name (64-bit offsets: a packed tensor may hold 2^32 elements).
func (r cudaQuantReader) load(name, row, kk string) []string {
	q, w := r.o.Quant, r.o.Name
	kk = "(" + kk + ")"
	if q.Format != kgenrt.Affine {
		bb := q.BlockBytes()
		return []string{fmt.Sprintf("kgen_ggml_load<%d>(%s + (unsigned long long)%s * (args.k / 32u * %du) + %s / 32u * %du, %s);", (bb-2)/4, w, row, bb, kk, bb, name)}
	}
	k := r.mw.k
	at := fmt.Sprintf("(unsigned long long)%s * (args.k / %du) + %s / %du", row, q.Group, kk, q.Group)
	return []string{
		fmt.Sprintf("kgen_affine_load<%d>(%s + (unsigned long long)%s * (args.k / 32u * %du), %s / 32u * %du, %s);", q.Bits, w, row, q.Bits, kk, q.Bits, name),
		fmt.Sprintf("%s_s = __ldg(&%s[%s]);", name, k.Bindings[r.o.Scales].Name, at),
		fmt.Sprintf("%s_b = __ldg(&%s[%s]);", name, k.Bindings[r.o.Biases].Name, at),
	}
}

// dequant writes raw name's 16 pairs into out.
func (r cudaQuantReader) dequant(name, out string) string {
	switch q := r.o.Quant; q.Format {
	case kgenrt.Q4_0:
		return fmt.Sprintf("kgen_q4_0_chunk<T>(%s, %s);", name, out)
	case kgenrt.Q8_0:
		return fmt.Sprintf("kgen_q8_0_chunk<T>(%s, %s);", name, out)
	default:
		return fmt.Sprintf("kgen_affine_chunk<T, %d>(%s, %s_s, %s_b, %s);", q.Bits, name, name, name, out)
	}
}

func (mw *matmulWriter) readers() []cudaQuantReader {
	var out []cudaQuantReader
	for _, b := range mw.mm.B {
		out = append(out, cudaQuantReader{mw: mw, o: b})
	}
	return out
}

// lines writes each of ls (a decl may hold two lines).
func (mw *matmulWriter) lines(ls ...string) {
	for _, l := range ls {
		for _, s := range splitLines(l) {
			mw.P(s)
		}
	}
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := range s {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// quantLocals declares the thread's coordinates in its warp: lane, the
// mma groups' g (lane / 4) and t (lane % 4).
func (mw *matmulWriter) quantLocals() {
	mw.P("const unsigned kgen_warp = ", mw.tid, " / 32, kgen_lane = ", mw.tid, " % 32, kgen_g = kgen_lane / 4, kgen_t = kgen_lane % 4;")
}

// cudaQuantTiled writes the tiled kernel (ir.QuantCUDA): one block per
// BM×BN tile of the output, k in steps of BK. Per step, x's next tile
// goes to shared memory by cp.async and each thread's chunk of the next
// packed weights into registers while the warps multiply the current
// tiles; then each thread dequantizes its chunk into the block's tile of
// the storage type (the natural order, 16-byte stores). A thread's chunk
// past n or k is zeros, as is x past m or k.
func (mw *matmulWriter) cudaQuantTiled(q ir.QuantTile) {
	w, mm := mw.Writer, mw.mm
	nb := len(mm.B)
	w.P("using C = float;")
	w.P(fmt.Sprintf("constexpr unsigned BM = %d, BN = %d, BK = %d, WM = %d, WN = %d, NB = %d, kThreads = %d;", q.BM, q.BN, q.BK, q.WarpsM, q.WarpsN, nb, q.Threads()))
	w.P("constexpr unsigned TM = BM / WM / 16, TN = BN / WN / 8; // this warp's m16 and n8 tiles")
	w.P("static_assert(NB * BN * (BK / 32) == kThreads, \"one chunk of packed weights per thread and step\");")
	w.P("constexpr unsigned CH = BK / 32; // chunks of a row per step")
	w.P("alignas(128) __shared__ T kgen_xs[2][BM * BK]; // ", mm.A.Name, "'s tile [BM][BK], two stages (swizzled: kgen_sw)")
	w.P("alignas(128) __shared__ T kgen_ws[NB][BN * BK]; // each B's dequantized tile [BN][BK]")
	mw.mmaSwizzle("BK")
	mw.quantLocals()
	w.P("const unsigned kgen_tiles_m = (args.m + BM - 1) / BM;")
	w.P("const unsigned kgen_row0 = (", mw.tg, " % kgen_tiles_m) * BM, kgen_col0 = (", mw.tg, " / kgen_tiles_m) * BN;")
	w.P("const unsigned kgen_wm = (kgen_warp / WN) * (BM / WM), kgen_wn = (kgen_warp % WN) * (BN / WN);")
	w.P("// This thread's chunk of each step: B kgen_qb (warp-uniform), row kgen_qr of its tile, chunk kgen_qc of the step.")
	w.P("const unsigned kgen_qb = ", mw.tid, " / (CH * BN), kgen_qr = ", mw.tid, " / CH % BN, kgen_qc = ", mw.tid, " % CH;")
	w.P("const unsigned kgen_qrow = kgen_col0 + kgen_qr;")
	w.P("// Stage x's tile of step k0 into buffer buf: 16-byte pieces, zeros past m or k (k is a multiple of 32).")
	w.P("auto kgen_stage_x = [&](unsigned kgen_buf, unsigned kgen_k0) {")
	w.Indent(func() {
		w.Block("for (unsigned kgen_e = "+mw.tid+"; kgen_e < BM * BK / 8; kgen_e += kThreads)", func() {
			w.P("const unsigned kgen_r = kgen_e / (BK / 8), kgen_ch = kgen_e % (BK / 8);")
			w.P("const bool kgen_in = kgen_row0 + kgen_r < args.m && kgen_k0 + kgen_ch * 8 < args.k;")
			w.P("const T* kgen_p = kgen_in ? ", mm.A.Name, " + (unsigned long long)(kgen_row0 + kgen_r) * args.k + kgen_k0 + kgen_ch * 8 : ", mm.A.Name, ";")
			w.P("kgen_cp16(&kgen_xs[kgen_buf][kgen_sw(kgen_r, kgen_ch * 8)], kgen_p, kgen_in ? 16 : 0);")
		})
	})
	w.P("};")
	rs := mw.readers()
	for i, r := range rs {
		mw.lines(r.decl(fmt.Sprintf("kgen_raw%d", i)))
	}
	w.P("bool kgen_qin = false; // the chunk in the registers lies inside n and k")
	load := func(k0 string) {
		w.P("kgen_qin = kgen_qrow < args.n && ", k0, " + 32 * kgen_qc < args.k;")
		for i, r := range rs {
			w.Block(fmt.Sprintf("if (kgen_qin && kgen_qb == %d)", i), func() {
				mw.lines(r.load(fmt.Sprintf("kgen_raw%d", i), "kgen_qrow", k0+" + 32 * kgen_qc")...)
			})
		}
	}
	store := func() {
		w.Bare(func() {
			w.P("unsigned kgen_p[16], kgen_nat[16];")
			w.IfElse("kgen_qin", func() {
				for i, r := range rs {
					if nb == 1 {
						w.P(r.dequant("kgen_raw0", "kgen_p"))
						continue
					}
					w.Block(fmt.Sprintf("if (kgen_qb == %d)", i), func() { w.P(r.dequant(fmt.Sprintf("kgen_raw%d", i), "kgen_p")) })
				}
				w.P("kgen_natural(kgen_p, kgen_nat);")
			}, func() {
				w.P("#pragma unroll")
				w.Block("for (unsigned kgen_v = 0; kgen_v < 16; ++kgen_v)", func() { w.P("kgen_nat[kgen_v] = 0u;") })
			})
			w.P("#pragma unroll")
			w.Block("for (unsigned kgen_v = 0; kgen_v < 4; ++kgen_v)", func() {
				w.P("*reinterpret_cast<uint4*>(&kgen_ws[kgen_qb][kgen_sw(kgen_qr, 32 * kgen_qc + 8 * kgen_v)]) = make_uint4(kgen_nat[4 * kgen_v], kgen_nat[4 * kgen_v + 1], kgen_nat[4 * kgen_v + 2], kgen_nat[4 * kgen_v + 3]);")
			})
		})
	}
	w.P("float kgen_acc[NB][TM][TN][4] = {};")
	w.P("kgen_stage_x(0, 0);")
	w.P("kgen_cp_commit();")
	load("0u")
	store()
	w.P("kgen_cp_wait_all();")
	w.P("__syncthreads();")
	w.Block("for (unsigned kgen_k0 = 0; kgen_k0 < args.k; kgen_k0 += BK)", func() {
		w.P("const unsigned kgen_cur = (kgen_k0 / BK) % 2;")
		w.P("const bool kgen_more = kgen_k0 + BK < args.k;")
		w.P("// The next step's x and packed weights load while this step multiplies.")
		w.Block("if (kgen_more)", func() {
			w.P("kgen_stage_x(kgen_cur ^ 1u, kgen_k0 + BK);")
			load("kgen_k0 + BK")
		})
		w.P("kgen_cp_commit();")
		mw.tiledProducts()
		w.P("__syncthreads(); // every warp is done with the dequantized tiles")
		w.Block("if (kgen_more)", store)
		w.P("kgen_cp_wait_all();")
		w.P("__syncthreads();")
	})
	w.P("// The epilogue per element of this warp's fragments: rows g and g + 8, columns 2t and 2t + 1 of each.")
	loop := func(v, n string, body func()) {
		w.P("#pragma unroll")
		w.Block("for (unsigned "+v+" = 0; "+v+" < "+n+"; ++"+v+")", body)
	}
	loop("kgen_tm", "TM", func() {
		loop("kgen_tn", "TN", func() {
			loop("kgen_e", "4", func() {
				w.P("const unsigned kgen_i = kgen_row0 + kgen_wm + kgen_tm * 16 + kgen_g + (kgen_e / 2) * 8, kgen_j = kgen_col0 + kgen_wn + kgen_tn * 8 + 2 * kgen_t + kgen_e % 2;")
				w.Block("if (kgen_i < args.m && kgen_j < args.n)", func() {
					mw.storeElement(func(i int) string { return fmt.Sprintf("kgen_acc[%d][kgen_tm][kgen_tn][kgen_e]", i) })
				})
			})
		})
	})
}

// tiledProducts writes one step's products: per k16 the warp's A
// fragments of x, then per B and pair of n8 tiles one ldmatrix and the
// mma of every m16 tile.
func (mw *matmulWriter) tiledProducts() {
	w := mw.Writer
	w.P("#pragma unroll")
	w.Block("for (unsigned kgen_ks = 0; kgen_ks < BK / 16; ++kgen_ks)", func() {
		w.P("unsigned kgen_af[TM][4];")
		w.P("#pragma unroll")
		w.Block("for (unsigned kgen_tm = 0; kgen_tm < TM; ++kgen_tm)", func() {
			w.P(ldsmA("kgen_af[kgen_tm]", "kgen_xs[kgen_cur]", "kgen_wm + kgen_tm * 16", "kgen_ks * 16"))
		})
		for i := range mw.mm.B {
			w.P("#pragma unroll")
			w.Block("for (unsigned kgen_tn = 0; kgen_tn < TN / 2; ++kgen_tn)", func() {
				w.P("unsigned kgen_b[4];")
				w.P(ldsmB("kgen_b", fmt.Sprintf("kgen_ws[%d]", i), "kgen_wn + kgen_tn * 16", "kgen_ks * 16"))
				w.P("#pragma unroll")
				w.Block("for (unsigned kgen_tm = 0; kgen_tm < TM; ++kgen_tm)", func() {
					mw.mmaPair(fmt.Sprintf("kgen_acc[%d][kgen_tm][2 * kgen_tn]", i), fmt.Sprintf("kgen_acc[%d][kgen_tm][2 * kgen_tn + 1]", i), "kgen_af[kgen_tm]", "kgen_b")
				})
			})
		}
	})
}

// cudaQuantSkinny writes the skinny kernel (m ≤ SkinnyMax; any m runs,
// 16 tokens per pass): the block's 16 output columns are the A operand's
// rows — thread (g, t) dequantizes rows g and g + 8 of chunk t of each k
// step of 128 — and up to 16 tokens of x its B operand in two n8 tiles.
// The warps split the steps (warp w takes w, w + WARPS, …), two steps'
// packed words in flight per thread, and sum their fragments through
// shared memory; thread e then finishes element e of the 16 × 16 block.
func (mw *matmulWriter) cudaQuantSkinny(g ir.Gemv) {
	w, mm, q := mw.Writer, mw.mm, mw.mm.QuantCUDA
	nb := len(mm.B)
	w.P("using C = float;")
	w.P(fmt.Sprintf("constexpr unsigned WARPS = %d, NB = %d, COLS = %d;", q.SkinnyWarps, nb, ir.SkinnyCols))
	w.P("static_assert(WARPS * 32 >= 2 * 8 * COLS, \"a thread per element of the 16 x 16 block\");")
	w.P("__shared__ float kgen_red[WARPS * NB * 2 * 128]; // each warp's fragments: [warp][B][token tile][lane][4]")
	mw.quantLocals()
	w.P("const unsigned kgen_col0 = ", mw.tg, " * COLS;")
	w.P("// The weight rows (output columns) this thread dequantizes; a row past n is read at n - 1 and never stored.")
	w.P("const unsigned kgen_ra = min(kgen_col0 + kgen_g, args.n - 1u), kgen_rb = min(kgen_col0 + kgen_g + 8u, args.n - 1u);")
	w.P("const unsigned kgen_steps = (args.k + 127u) / 128u; // k in steps of 4 chunks, chunk t of a step for lane t of each quad")
	rs := mw.readers()
	w.Block("for (unsigned kgen_tok0 = 0; kgen_tok0 < args.m; kgen_tok0 += 16u)", func() {
		w.P("const bool kgen_two = args.m - kgen_tok0 > 8u; // a second tile of 8 tokens (uniform)")
		w.P("float kgen_acc[NB][2][4] = {};")
		for d := range 2 {
			for i, r := range rs {
				mw.lines(r.decl(fmt.Sprintf("kgen_ra%d_%d", i, d)), r.decl(fmt.Sprintf("kgen_rb%d_%d", i, d)))
			}
		}
		load := func(d int, step string) {
			w.Block(fmt.Sprintf("if (%s < kgen_steps && %s * 128u + 32u * kgen_t < args.k)", step, step), func() {
				kk := step + " * 128u + 32u * kgen_t"
				for i, r := range rs {
					mw.lines(r.load(fmt.Sprintf("kgen_ra%d_%d", i, d), "kgen_ra", kk)...)
					mw.lines(r.load(fmt.Sprintf("kgen_rb%d_%d", i, d), "kgen_rb", kk)...)
				}
			})
		}
		w.P("// Two steps' packed words in flight: the first two of this warp's.")
		load(0, "kgen_warp")
		load(1, "(kgen_warp + WARPS)")
		w.Block("for (unsigned kgen_s = kgen_warp; kgen_s < kgen_steps; kgen_s += 2 * WARPS)", func() {
			mw.skinnyStep(rs, 0, "kgen_s", load)
			w.Block("if (kgen_s + WARPS < kgen_steps)", func() { mw.skinnyStep(rs, 1, "(kgen_s + WARPS)", load) })
		})
		mw.skinnyFinish()
	})
}

// skinnyStep multiplies step `step` from raw buffer d, then refills d
// with the step 2·WARPS later.
func (mw *matmulWriter) skinnyStep(rs []cudaQuantReader, d int, step string, load func(int, string)) {
	w, a := mw.Writer, mw.mm.A.Name
	w.Bare(func() {
		w.P("const unsigned kgen_kc = ", step, " * 128u + 32u * kgen_t; // this thread's chunk")
		w.P("const bool kgen_in = kgen_kc < args.k;")
		for i := range rs {
			w.P(fmt.Sprintf("unsigned kgen_wa%d[16], kgen_wb%d[16]; // rows ra and rb, in the readers' pair order", i, i))
		}
		w.IfElse("kgen_in", func() {
			for i, r := range rs {
				w.P(r.dequant(fmt.Sprintf("kgen_ra%d_%d", i, d), fmt.Sprintf("kgen_wa%d", i)))
				w.P(r.dequant(fmt.Sprintf("kgen_rb%d_%d", i, d), fmt.Sprintf("kgen_wb%d", i)))
			}
		}, func() {
			w.P("#pragma unroll")
			w.Block("for (unsigned kgen_v = 0; kgen_v < 16; ++kgen_v)", func() {
				for i := range rs {
					w.P(fmt.Sprintf("kgen_wa%d[kgen_v] = kgen_wb%d[kgen_v] = 0u;", i, i))
				}
			})
		})
		load(d, "("+step+" + 2 * WARPS)")
		w.P("// x: tokens tok0 + g (tile 0) and tok0 + g + 8 (tile 1) at this chunk, in the readers' pair order; zeros past m or k.")
		w.P("unsigned kgen_x[2][16];")
		w.P("#pragma unroll")
		w.Block("for (unsigned kgen_h = 0; kgen_h < 2; ++kgen_h)", func() {
			w.P("const unsigned kgen_i = kgen_tok0 + kgen_g + 8u * kgen_h;")
			w.P("unsigned kgen_n[16];")
			w.IfElse("kgen_in && kgen_i < args.m && (kgen_h == 0 || kgen_two)", func() {
				w.P("const uint4* kgen_p = reinterpret_cast<const uint4*>(", a, " + (unsigned long long)kgen_i * args.k + kgen_kc);")
				w.P("#pragma unroll")
				w.Block("for (unsigned kgen_v = 0; kgen_v < 4; ++kgen_v)", func() {
					w.P("const uint4 kgen_u = __ldg(kgen_p + kgen_v);")
					w.P("kgen_n[4 * kgen_v] = kgen_u.x, kgen_n[4 * kgen_v + 1] = kgen_u.y, kgen_n[4 * kgen_v + 2] = kgen_u.z, kgen_n[4 * kgen_v + 3] = kgen_u.w;")
				})
			}, func() {
				w.P("#pragma unroll")
				w.Block("for (unsigned kgen_v = 0; kgen_v < 16; ++kgen_v)", func() { w.P("kgen_n[kgen_v] = 0u;") })
			})
			w.P("kgen_xpairs(kgen_n, kgen_x[kgen_h]);")
		})
		w.P("#pragma unroll")
		w.Block("for (unsigned kgen_st = 0; kgen_st < 8; ++kgen_st)", func() {
			for i := range rs {
				w.P(fmt.Sprintf("const unsigned kgen_a%d[4] = {kgen_wa%d[2 * kgen_st], kgen_wb%d[2 * kgen_st], kgen_wa%d[2 * kgen_st + 1], kgen_wb%d[2 * kgen_st + 1]};", i, i, i, i, i))
				w.P(fmt.Sprintf("kgen_mma<T>(kgen_acc[%d][0], kgen_a%d, kgen_x[0][2 * kgen_st], kgen_x[0][2 * kgen_st + 1]);", i, i))
				w.Block("if (kgen_two)", func() {
					w.P(fmt.Sprintf("kgen_mma<T>(kgen_acc[%d][1], kgen_a%d, kgen_x[1][2 * kgen_st], kgen_x[1][2 * kgen_st + 1]);", i, i))
				})
			}
		})
	})
}

// skinnyFinish sums the warps' fragments in warp order through shared
// memory and runs the epilogue: thread e < 256 takes element e % 128 of
// token tile e / 128 (lane l = e / 4 % 32 of the fragment layout, its value
// e % 4: column g or g + 8, token 2t or 2t + 1).
func (mw *matmulWriter) skinnyFinish() {
	w, nb := mw.Writer, len(mw.mm.B)
	w.P("#pragma unroll")
	w.Block("for (unsigned kgen_v = 0; kgen_v < 8; ++kgen_v)", func() {
		for i := range nb {
			w.P(fmt.Sprintf("kgen_red[((kgen_warp * NB + %d) * 2 + kgen_v / 4) * 128 + kgen_lane * 4 + kgen_v %% 4] = kgen_acc[%d][kgen_v / 4][kgen_v %% 4];", i, i))
		}
	})
	w.P("__syncthreads();")
	w.Bare(func() {
		w.P("const unsigned kgen_e = ", mw.tid, ", kgen_h = kgen_e / 128, kgen_l = kgen_e / 4 % 32, kgen_v = kgen_e % 4;")
		w.P("const unsigned kgen_i = kgen_tok0 + 8 * kgen_h + 2 * (kgen_l % 4) + kgen_v % 2, kgen_j = kgen_col0 + kgen_l / 4 + 8 * (kgen_v / 2);")
		w.Block("if (kgen_e < 2 * 8 * COLS && kgen_i < args.m && kgen_j < args.n)", func() {
			for i := range nb {
				w.P(fmt.Sprintf("float kgen_sum%d = 0.0f;", i))
				w.P("#pragma unroll")
				w.Block("for (unsigned kgen_w = 0; kgen_w < WARPS; ++kgen_w)", func() {
					w.P(fmt.Sprintf("kgen_sum%d += kgen_red[((kgen_w * NB + %d) * 2 + kgen_h) * 128 + kgen_e %% 128];", i, i))
				})
			}
			mw.storeElement(func(i int) string { return fmt.Sprintf("kgen_sum%d", i) })
		})
	})
	w.P("__syncthreads(); // the next tokens' sums reuse kgen_red")
}
