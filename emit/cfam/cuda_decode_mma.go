package cfam

// cudaDecodeMMA writes the flash-decoding part's tensor-core body (16-bit
// storage; ir.ChainCUDA.PartBM rows): a decode step has a few query rows,
// so the block owns one mma row tile of PBM = 16 rows, and its warps split
// each block of BN keys, warp w taking keys 16w … 16w + 15. Each warp
// streams its keys of the split with its own running max, sum and output
// (the chain kernel's online softmax on a quarter of the keys, a quarter of
// the math); at the end the warps' states meet in shared memory (the K and
// V tiles, reused as f32), rescaled to their common max as the combine
// does, and the block writes its split's partials.
func (mw *matmulWriter) cudaDecodeMMA() {
	w, mm := mw.Writer, mw.mm
	exp := mw.expSpelling()
	w.P("static_assert(BN == 16 * (kThreads / 32), \"each warp takes 16 keys of a block\");")
	w.P("alignas(128) __shared__ T kgen_qs[PBM * D]; // the block's rows × a chunk of D of k (swizzled: kgen_sw)")
	w.P("alignas(128) __shared__ T kgen_kv[2 * BN * D]; // ", mm.B[0].Name, "'s and ", mm.Chain.Then.Name, "'s blocks of keys; at the end the warps' outputs as f32")
	w.P("__shared__ float kgen_wm[kThreads / 32][PBM], kgen_wl[kThreads / 32][PBM]; // each warp's running max and sum per row")
	w.P("T* const kgen_ks = kgen_kv;")
	w.P("T* const kgen_vs = kgen_kv + BN * D;")
	w.P("static_assert(2 * BN * D * sizeof(T) >= (kThreads / 32) * PBM * D * sizeof(float), \"the warps' outputs fit the tiles\");")
	mw.mmaSwizzle("D")
	heads := ""
	if mw.packed() { // a packed row's head moves it by A's head stride
		heads = " && " + mw.packHeadStride() + " % 8 == 0"
	}
	w.P("const bool kgen_vec = ", mw.vecOK(mm.A, false, "args.k"), heads, " && ", mw.vecOK(mm.B[0], true, "args.k"), " && ", mw.vecOK(mm.Chain.Then, false, "args.p"), ";")
	mw.decodeStage()
	w.P("const unsigned kgen_g = kgen_lane / 4, kgen_t = kgen_lane % 4, kgen_wk = kgen_warp * 16;")
	w.P("const unsigned kgen_nkc = (args.k + D - 1) / D; // chunks of k per score block (1: Q staged once)")
	w.Block("for (unsigned kgen_p0 = 0; kgen_p0 < args.p; kgen_p0 += D)", func() {
		w.P("float kgen_o[D / 8][4]; // this warp's ", mm.Chain.Then.Acc, " of the pass's D columns: rows g and g + 8, columns 2t, 2t + 1 of each 8")
		w.P("float kgen_mx[2] = {kgen_ninf, kgen_ninf}, kgen_l[2] = {0.0f, 0.0f}; // rows g and g + 8 over this warp's keys")
		w.P("#pragma unroll")
		w.Block("for (unsigned kgen_d = 0; kgen_d < D / 8; ++kgen_d)", func() {
			w.P("kgen_o[kgen_d][0] = kgen_o[kgen_d][1] = kgen_o[kgen_d][2] = kgen_o[kgen_d][3] = 0.0f;")
		})
		w.Block("if (kgen_nkc == 1)", func() {
			w.Block("if (kgen_p0 == 0)", func() { w.P("kgen_stage(kgen_qs, PBM, ", mm.A.Name, ", kgen_q_at, kgen_row0, kgen_mend, 0, args.k);") })
			w.Block("if (kgen_key0 < kgen_nend)", func() { w.P("kgen_stage(kgen_ks, BN, ", mm.B[0].Name, ", kgen_k_at, kgen_key0, args.n, 0, args.k);") })
		})
		w.P("kgen_cp_commit();")
		w.Block("for (unsigned kgen_col0 = kgen_key0; kgen_col0 < kgen_nend; kgen_col0 += BN)", func() {
			w.P("kgen_cp_wait_all();")
			w.P("__syncthreads(); // Q and this block's keys are in; the last block's V is read")
			w.P("kgen_stage(kgen_vs, BN, ", mm.Chain.Then.Name, ", kgen_v_at, kgen_col0, args.n, kgen_p0, args.p);")
			w.P("kgen_cp_commit();")
			mw.decodeScores()
			mw.decodeSoftmax(exp)
			w.P("kgen_cp_wait_all();")
			w.P("__syncthreads(); // V is in; every warp is done with the keys")
			w.Block("if (kgen_nkc == 1 && kgen_col0 + BN < kgen_nend)", func() {
				w.P("kgen_stage(kgen_ks, BN, ", mm.B[0].Name, ", kgen_k_at, kgen_col0 + BN, args.n, 0, args.k);")
			})
			w.P("kgen_cp_commit();")
			mw.decodeAccumulate()
		})
		w.P("kgen_cp_wait_all();")
		w.P("__syncthreads(); // every warp is done with the tiles")
		mw.decodeMeet(exp)
		w.P("__syncthreads(); // the next pass restages the tiles")
	})
}

// decodeStage defines kgen_stage: rows × D columns of an operand from tile
// (r0, c0) into a swizzled tile, zeros outside rows × cols; cp.async where
// kgen_vec says the rows are contiguous and aligned.
func (mw *matmulWriter) decodeStage() {
	w := mw.Writer
	w.P("auto kgen_stage = [&](T* kgen_dst, unsigned kgen_nr, const T* kgen_src, auto kgen_at, unsigned kgen_r0, unsigned kgen_rows, unsigned kgen_c0, unsigned kgen_cols) {")
	w.Indent(func() {
		w.Block("if (kgen_vec)", func() {
			w.Block("for (unsigned kgen_e = kgen_tid; kgen_e < kgen_nr * (D / 8); kgen_e += kThreads)", func() {
				w.P("const unsigned kgen_r = kgen_e / (D / 8), kgen_ch = kgen_e % (D / 8);")
				w.P("const int kgen_left = (int)kgen_cols - (int)(kgen_c0 + kgen_ch * 8);")
				w.P("const int kgen_bytes = kgen_r0 + kgen_r < kgen_rows ? 2 * max(0, min(8, kgen_left)) : 0;")
				w.P("const T* kgen_p = kgen_bytes > 0 ? kgen_src + kgen_at(kgen_r0 + kgen_r, kgen_c0 + kgen_ch * 8) : kgen_src;")
				w.P("kgen_cp16(&kgen_dst[kgen_sw(kgen_r, kgen_ch * 8)], kgen_p, kgen_bytes);")
			})
		})
		w.Block("else", func() {
			w.Block("for (unsigned kgen_e = kgen_tid; kgen_e < kgen_nr * D; kgen_e += kThreads)", func() {
				w.P("const unsigned kgen_r = kgen_e / D, kgen_c = kgen_e % D;")
				w.P("const bool kgen_in = kgen_r0 + kgen_r < kgen_rows && kgen_c0 + kgen_c < kgen_cols;")
				w.P("kgen_dst[kgen_sw(kgen_r, kgen_c)] = kgen_in ? kgen_src[kgen_at(kgen_r0 + kgen_r, kgen_c0 + kgen_c)] : kgen_to<T>(0.0f);")
			})
		})
	})
	w.P("};")
}

// decodeScores writes kgen_s = Q·Kᵀ for the block's 16 rows × this warp's
// 16 keys.
func (mw *matmulWriter) decodeScores() {
	w, mm := mw.Writer, mw.mm
	w.P("float kgen_s[2][4] = {}; // scores: rows g, g + 8 × keys 2t, 2t + 1 of each of the warp's two 8s")
	w.Block("for (unsigned kgen_kc = 0; kgen_kc < kgen_nkc; ++kgen_kc)", func() {
		w.Block("if (kgen_nkc > 1)", func() {
			w.P("// k wider than D: this chunk of Q and of the keys, not overlapped.")
			w.P("__syncthreads();")
			w.P("kgen_stage(kgen_qs, PBM, ", mm.A.Name, ", kgen_q_at, kgen_row0, kgen_mend, kgen_kc * D, args.k);")
			w.P("kgen_stage(kgen_ks, BN, ", mm.B[0].Name, ", kgen_k_at, kgen_col0, args.n, kgen_kc * D, args.k);")
			w.P("kgen_cp_commit();")
			w.P("kgen_cp_wait_all();")
			w.P("__syncthreads();")
		})
		w.P("const unsigned kgen_steps = min(D, args.k - kgen_kc * D); // columns of k in this chunk")
		w.P("#pragma unroll")
		w.Block("for (unsigned kgen_ks0 = 0; kgen_ks0 < D / 16; ++kgen_ks0)", func() {
			w.Block("if (kgen_ks0 * 16 < kgen_steps)", func() {
				w.P("unsigned kgen_a[4], kgen_b[4]; // Q's fragment from shared memory each time: registers kept for more resident blocks")
				w.P(ldsmA("kgen_a", "kgen_qs", "0", "kgen_ks0 * 16"))
				w.P(ldsmB("kgen_b", "kgen_ks", "kgen_wk", "kgen_ks0 * 16"))
				mw.mmaPair("kgen_s[0]", "kgen_s[1]", "kgen_a", "kgen_b")
			})
		})
	})
}

// decodeSoftmax applies the score stage to the warp's scores, updates its
// running max and sum of rows g and g + 8 (a quad of lanes holds a row)
// and packs the weights as one mma A fragment, kgen_pf.
func (mw *matmulWriter) decodeSoftmax(exp string) {
	w := mw.Writer
	w.P("#pragma unroll")
	w.Block("for (unsigned kgen_n = 0; kgen_n < 2; ++kgen_n)", func() {
		w.P("#pragma unroll")
		w.Block("for (unsigned kgen_e = 0; kgen_e < 4; ++kgen_e)", func() {
			w.P("const unsigned kgen_pr = kgen_row0 + kgen_g + (kgen_e / 2) * 8, kgen_i = kgen_pr % args.m, kgen_j = kgen_col0 + kgen_wk + kgen_n * 8 + 2 * kgen_t + kgen_e % 2;")
			mw.scoreCall("kgen_s[kgen_n][kgen_e]", "kgen_s[kgen_n][kgen_e]")
		})
	})
	w.P("unsigned kgen_pf[4]; // the weights in T over the warp's 16 keys")
	w.P("#pragma unroll")
	w.Block("for (unsigned kgen_h = 0; kgen_h < 2; ++kgen_h)", func() {
		w.P("float kgen_mb = fmaxf(fmaxf(kgen_s[0][2 * kgen_h], kgen_s[0][2 * kgen_h + 1]), fmaxf(kgen_s[1][2 * kgen_h], kgen_s[1][2 * kgen_h + 1]));")
		w.P("kgen_mb = fmaxf(kgen_mb, __shfl_xor_sync(0xffffffffu, kgen_mb, 1));")
		w.P("kgen_mb = fmaxf(kgen_mb, __shfl_xor_sync(0xffffffffu, kgen_mb, 2));")
		w.P("const float kgen_mnew = fmaxf(kgen_mx[kgen_h], kgen_mb);")
		w.P("// While every score so far is kgen_ninf the weights are 0 and nothing rescales.")
		w.P("const bool kgen_none = kgen_mnew == kgen_ninf;")
		w.P("const float kgen_f = kgen_none ? 1.0f : ", exp, "(kgen_mx[kgen_h] - kgen_mnew);")
		w.P("kgen_mx[kgen_h] = kgen_mnew;")
		w.P("float kgen_bs = 0.0f; // this block's rounded weights of the row, this thread's part")
		w.P("#pragma unroll")
		w.Block("for (unsigned kgen_n = 0; kgen_n < 2; ++kgen_n)", func() {
			w.P("const float kgen_w0 = kgen_none ? 0.0f : ", exp, "(kgen_s[kgen_n][2 * kgen_h] - kgen_mnew);")
			w.P("const float kgen_w1 = kgen_none ? 0.0f : ", exp, "(kgen_s[kgen_n][2 * kgen_h + 1] - kgen_mnew);")
			w.P("float kgen_r0w, kgen_r1w;")
			w.P("kgen_pf[kgen_h + 2 * kgen_n] = kgen_pack<T>(kgen_w0, kgen_w1, kgen_r0w, kgen_r1w);")
			w.P("kgen_bs += kgen_r0w;")
			w.P("kgen_bs += kgen_r1w;")
		})
		w.P("kgen_l[kgen_h] = kgen_l[kgen_h] * kgen_f + kgen_bs;")
		w.P("#pragma unroll")
		w.Block("for (unsigned kgen_d = 0; kgen_d < D / 8; ++kgen_d)", func() {
			w.P("kgen_o[kgen_d][2 * kgen_h] *= kgen_f;")
			w.P("kgen_o[kgen_d][2 * kgen_h + 1] *= kgen_f;")
		})
	})
}

// decodeAccumulate adds the warp's weights·V (its 16 keys) into kgen_o.
func (mw *matmulWriter) decodeAccumulate() {
	w := mw.Writer
	w.P("const unsigned kgen_pcols = min(D, args.p - kgen_p0);")
	w.P("#pragma unroll")
	w.Block("for (unsigned kgen_d = 0; kgen_d < D / 16; ++kgen_d)", func() {
		w.Block("if (kgen_d * 16 < kgen_pcols)", func() {
			w.P("unsigned kgen_b[4];")
			w.P("kgen_ldsm4t(kgen_b, &kgen_vs[kgen_sw(kgen_wk + kgen_lane % 8 + (kgen_lane / 8) % 2 * 8, kgen_d * 16 + (kgen_lane / 16) * 8)]);")
			w.P("kgen_mma<T>(kgen_o[2 * kgen_d], kgen_pf, kgen_b[0], kgen_b[1]);")
			w.P("kgen_mma<T>(kgen_o[2 * kgen_d + 1], kgen_pf, kgen_b[2], kgen_b[3]);")
		})
	})
}

// decodeMeet sums each warp's row sums over their quads, puts every warp's
// state in shared memory and, per element of the block's rows × the
// pass's columns, rescales the warps to their common max (a warp that saw
// no visible key weighs 0) and writes the split's partials: the
// unnormalised output and, in the first pass, each row's max and sum.
func (mw *matmulWriter) decodeMeet(exp string) {
	w, ws := mw.Writer, mw.mm.Decode.Space
	w.P("float* const kgen_wo = reinterpret_cast<float*>(kgen_kv); // [warp][row][column of the pass]")
	w.P("#pragma unroll")
	w.Block("for (unsigned kgen_h = 0; kgen_h < 2; ++kgen_h)", func() {
		w.P("kgen_l[kgen_h] += __shfl_xor_sync(0xffffffffu, kgen_l[kgen_h], 1);")
		w.P("kgen_l[kgen_h] += __shfl_xor_sync(0xffffffffu, kgen_l[kgen_h], 2);")
		w.Block("if (kgen_t == 0)", func() {
			w.P("kgen_wm[kgen_warp][kgen_g + 8 * kgen_h] = kgen_mx[kgen_h];")
			w.P("kgen_wl[kgen_warp][kgen_g + 8 * kgen_h] = kgen_l[kgen_h];")
		})
	})
	w.P("#pragma unroll")
	w.Block("for (unsigned kgen_d = 0; kgen_d < D / 8; ++kgen_d)", func() {
		w.P("#pragma unroll")
		w.Block("for (unsigned kgen_e = 0; kgen_e < 4; ++kgen_e)", func() {
			w.P("kgen_wo[(kgen_warp * PBM + kgen_g + (kgen_e / 2) * 8) * D + kgen_d * 8 + 2 * kgen_t + kgen_e % 2] = kgen_o[kgen_d][kgen_e];")
		})
	})
	w.P("__syncthreads(); // every warp's state is in")
	w.Block("for (unsigned kgen_e = kgen_tid; kgen_e < PBM * D; kgen_e += kThreads)", func() {
		w.P("const unsigned kgen_r = kgen_e / D, kgen_c = kgen_e % D, kgen_pr = kgen_row0 + kgen_r;")
		w.Block("if (kgen_pr >= kgen_mend || kgen_p0 + kgen_c >= args.p)", func() { w.P("continue;") })
		w.P("float kgen_m = kgen_ninf;")
		w.P("#pragma unroll")
		w.Block("for (unsigned kgen_q = 0; kgen_q < kThreads / 32; ++kgen_q)", func() { w.P("kgen_m = fmaxf(kgen_m, kgen_wm[kgen_q][kgen_r]);") })
		w.P("float kgen_os = 0.0f, kgen_ls = 0.0f;")
		w.P("#pragma unroll")
		w.Block("for (unsigned kgen_q = 0; kgen_q < kThreads / 32; ++kgen_q)", func() {
			w.P("const float kgen_f = kgen_m == kgen_ninf ? 0.0f : ", exp, "(kgen_wm[kgen_q][kgen_r] - kgen_m);")
			w.P("kgen_os += kgen_wo[(kgen_q * PBM + kgen_r) * D + kgen_c] * kgen_f;")
			w.P("kgen_ls += kgen_wl[kgen_q][kgen_r] * kgen_f;")
		})
		w.P(ws[0].Name, "[(", mw.partRow(), ") * args.p + kgen_p0 + kgen_c] = kgen_os;")
		w.Block("if (kgen_p0 == 0 && kgen_c == 0)", func() {
			w.P(ws[1].Name, "[", mw.partRow(), "] = kgen_m;")
			w.P(ws[2].Name, "[", mw.partRow(), "] = kgen_ls;")
		})
	})
}
