package cfam

// cudaChainMMA writes the tensor-core body (16-bit storage).
func (mw *matmulWriter) cudaChainMMA() {
	w, mm := mw.Writer, mw.mm
	exp := mw.expSpelling()
	w.P("alignas(128) __shared__ T kgen_qs[BM * D]; // Q's rows × a chunk of D of k (swizzled: kgen_sw)")
	w.P("alignas(128) __shared__ T kgen_ks[BN * D]; // ", mm.B[0].Name, "'s block of keys × a chunk of k")
	w.P("alignas(128) __shared__ T kgen_vs[BN * D]; // ", mm.Chain.Then.Name, "'s block of keys × a pass of p")
	mw.mmaSwizzle("D")
	w.P("const bool kgen_vec = ", mw.vecOK(mm.A, false, "args.k"), " && ", mw.vecOK(mm.B[0], true, "args.k"), " && ", mw.vecOK(mm.Chain.Then, false, "args.p"), ";")
	w.P("// Stage BM (or BN) rows × D columns of an operand from tile (r0, c0), zeros outside rows × cols.")
	w.P("auto kgen_stage = [&](T* kgen_dst, const T* kgen_src, auto kgen_at, unsigned kgen_r0, unsigned kgen_rows, unsigned kgen_c0, unsigned kgen_cols) {")
	w.Indent(func() {
		w.Block("if (kgen_vec)", func() {
			w.Block("for (unsigned kgen_e = kgen_tid; kgen_e < BM * (D / 8); kgen_e += kThreads)", func() {
				w.P("const unsigned kgen_r = kgen_e / (D / 8), kgen_ch = kgen_e % (D / 8);")
				w.P("const int kgen_left = (int)kgen_cols - (int)(kgen_c0 + kgen_ch * 8);")
				w.P("const int kgen_bytes = kgen_r0 + kgen_r < kgen_rows ? 2 * max(0, min(8, kgen_left)) : 0;")
				w.P("const T* kgen_p = kgen_bytes > 0 ? kgen_src + kgen_at(kgen_r0 + kgen_r, kgen_c0 + kgen_ch * 8) : kgen_src;")
				w.P("kgen_cp16(&kgen_dst[kgen_sw(kgen_r, kgen_ch * 8)], kgen_p, kgen_bytes);")
			})
		})
		w.Block("else", func() {
			w.Block("for (unsigned kgen_e = kgen_tid; kgen_e < BM * D; kgen_e += kThreads)", func() {
				w.P("const unsigned kgen_r = kgen_e / D, kgen_c = kgen_e % D;")
				w.P("const bool kgen_in = kgen_r0 + kgen_r < kgen_rows && kgen_c0 + kgen_c < kgen_cols;")
				w.P("kgen_dst[kgen_sw(kgen_r, kgen_c)] = kgen_in ? kgen_src[kgen_at(kgen_r0 + kgen_r, kgen_c0 + kgen_c)] : kgen_to<T>(0.0f);")
			})
		})
	})
	w.P("};")
	w.P("const unsigned kgen_g = kgen_lane / 4, kgen_t = kgen_lane % 4, kgen_wr = kgen_warp * 16;")
	w.P("const unsigned kgen_nkc = (args.k + D - 1) / D; // chunks of k per score block (1: Q staged once)")
	w.P("unsigned kgen_qf[D / 16][4]; // this warp's 16 rows of Q as mma A fragments")
	w.Block("for (unsigned kgen_p0 = 0; kgen_p0 < args.p; kgen_p0 += D)", func() {
		w.P("float kgen_o[D / 8][4]; // ", mm.Chain.Then.Acc, " of this pass's D columns: rows g and g + 8, columns 2t, 2t + 1 of each 8")
		w.P("float kgen_mx[2] = {kgen_ninf, kgen_ninf}, kgen_l[2] = {0.0f, 0.0f}; // rows g and g + 8: running max, this thread's part of the sum")
		w.P("#pragma unroll")
		w.Block("for (unsigned kgen_d = 0; kgen_d < D / 8; ++kgen_d)", func() {
			w.P("kgen_o[kgen_d][0] = kgen_o[kgen_d][1] = kgen_o[kgen_d][2] = kgen_o[kgen_d][3] = 0.0f;")
		})
		w.Block("if (kgen_nkc == 1)", func() {
			w.Block("if (kgen_p0 == 0)", func() { w.P("kgen_stage(kgen_qs, ", mm.A.Name, ", kgen_q_at, kgen_row0, args.m, 0, args.k);") })
			w.Block("if (kgen_nend > 0)", func() { w.P("kgen_stage(kgen_ks, ", mm.B[0].Name, ", kgen_k_at, 0, args.n, 0, args.k);") })
		})
		w.P("kgen_cp_commit();")
		w.Block("for (unsigned kgen_col0 = 0; kgen_col0 < kgen_nend; kgen_col0 += BN)", func() {
			w.P("kgen_cp_wait_all();")
			w.P("__syncthreads(); // Q and this block's keys are in; the last block's V is read")
			w.P("kgen_stage(kgen_vs, ", mm.Chain.Then.Name, ", kgen_v_at, kgen_col0, args.n, kgen_p0, args.p);")
			w.P("kgen_cp_commit();")
			w.Block("if (kgen_nkc == 1 && kgen_p0 == 0 && kgen_col0 == 0)", func() { mw.loadQ() })
			mw.mmaScores()
			mw.mmaSoftmax(exp)
			w.P("kgen_cp_wait_all();")
			w.P("__syncthreads(); // V is in; every warp is done with the keys")
			w.Block("if (kgen_nkc == 1 && kgen_col0 + BN < kgen_nend)", func() {
				w.P("kgen_stage(kgen_ks, ", mm.B[0].Name, ", kgen_k_at, kgen_col0 + BN, args.n, 0, args.k);")
			})
			w.P("kgen_cp_commit();")
			mw.mmaAccumulate()
		})
		mw.mmaWrite()
		w.P("kgen_cp_wait_all();")
		w.P("__syncthreads(); // the next pass restages the tiles")
	})
}

// loadQ loads this warp's Q fragments from kgen_qs.
func (mw *matmulWriter) loadQ() {
	mw.P("#pragma unroll")
	mw.Block("for (unsigned kgen_ks0 = 0; kgen_ks0 < D / 16; ++kgen_ks0)", func() {
		mw.P(ldsmA("kgen_qf[kgen_ks0]", "kgen_qs", "kgen_wr", "kgen_ks0 * 16"))
	})
}

// mmaScores writes kgen_s = Q·Kᵀ for this warp's 16 rows × BN keys.
func (mw *matmulWriter) mmaScores() {
	w, mm := mw.Writer, mw.mm
	w.P("float kgen_s[BN / 8][4]; // scores: rows g, g + 8 × keys 2t, 2t + 1 of each 8")
	w.P("#pragma unroll")
	w.Block("for (unsigned kgen_n = 0; kgen_n < BN / 8; ++kgen_n)", func() {
		w.P("kgen_s[kgen_n][0] = kgen_s[kgen_n][1] = kgen_s[kgen_n][2] = kgen_s[kgen_n][3] = 0.0f;")
	})
	w.Block("for (unsigned kgen_kc = 0; kgen_kc < kgen_nkc; ++kgen_kc)", func() {
		w.Block("if (kgen_nkc > 1)", func() {
			w.P("// k wider than D: this chunk of Q and of the keys, not overlapped.")
			w.P("__syncthreads();")
			w.P("kgen_stage(kgen_qs, ", mm.A.Name, ", kgen_q_at, kgen_row0, args.m, kgen_kc * D, args.k);")
			w.P("kgen_stage(kgen_ks, ", mm.B[0].Name, ", kgen_k_at, kgen_col0, args.n, kgen_kc * D, args.k);")
			w.P("kgen_cp_commit();")
			w.P("kgen_cp_wait_all();")
			w.P("__syncthreads();")
			mw.loadQ()
		})
		w.P("const unsigned kgen_steps = min(D, args.k - kgen_kc * D); // columns of k in this chunk")
		w.P("#pragma unroll")
		w.Block("for (unsigned kgen_ks0 = 0; kgen_ks0 < D / 16; ++kgen_ks0)", func() {
			w.Block("if (kgen_ks0 * 16 < kgen_steps)", func() {
				w.P("#pragma unroll")
				w.Block("for (unsigned kgen_n = 0; kgen_n < BN / 16; ++kgen_n)", func() {
					w.P("unsigned kgen_b[4];")
					w.P(ldsmB("kgen_b", "kgen_ks", "kgen_n * 16", "kgen_ks0 * 16"))
					mw.mmaPair("kgen_s[2 * kgen_n]", "kgen_s[2 * kgen_n + 1]", "kgen_qf[kgen_ks0]", "kgen_b")
				})
			})
		})
	})
}

// mmaSoftmax applies the score stage, updates the running max and sum of
// rows g and g + 8 (a quad of lanes holds a row) and packs the weights as
// mma A fragments kgen_pf.
func (mw *matmulWriter) mmaSoftmax(exp string) {
	w := mw.Writer
	w.P("#pragma unroll")
	w.Block("for (unsigned kgen_n = 0; kgen_n < BN / 8; ++kgen_n)", func() {
		w.P("#pragma unroll")
		w.Block("for (unsigned kgen_e = 0; kgen_e < 4; ++kgen_e)", func() {
			w.P("const unsigned kgen_i = kgen_row0 + kgen_wr + kgen_g + (kgen_e / 2) * 8, kgen_j = kgen_col0 + kgen_n * 8 + 2 * kgen_t + kgen_e % 2;")
			mw.scoreCall("kgen_s[kgen_n][kgen_e]", "kgen_s[kgen_n][kgen_e]")
		})
	})
	w.P("unsigned kgen_pf[BN / 16][4]; // the weights in T: mma A fragments over the block's keys")
	w.P("#pragma unroll")
	w.Block("for (unsigned kgen_h = 0; kgen_h < 2; ++kgen_h)", func() {
		w.P("float kgen_mb = kgen_ninf;")
		w.P("#pragma unroll")
		w.Block("for (unsigned kgen_n = 0; kgen_n < BN / 8; ++kgen_n)", func() {
			w.P("kgen_mb = fmaxf(kgen_mb, fmaxf(kgen_s[kgen_n][2 * kgen_h], kgen_s[kgen_n][2 * kgen_h + 1]));")
		})
		w.P("kgen_mb = fmaxf(kgen_mb, __shfl_xor_sync(0xffffffffu, kgen_mb, 1));")
		w.P("kgen_mb = fmaxf(kgen_mb, __shfl_xor_sync(0xffffffffu, kgen_mb, 2));")
		w.P("const float kgen_mnew = fmaxf(kgen_mx[kgen_h], kgen_mb);")
		w.P("// While every score so far is kgen_ninf the weights are 0 and nothing rescales.")
		w.P("const bool kgen_none = kgen_mnew == kgen_ninf;")
		w.P("const float kgen_f = kgen_none ? 1.0f : ", exp, "(kgen_mx[kgen_h] - kgen_mnew);")
		w.P("kgen_mx[kgen_h] = kgen_mnew;")
		w.P("float kgen_bs = 0.0f; // this block's rounded weights of the row, this thread's part")
		w.P("#pragma unroll")
		w.Block("for (unsigned kgen_n = 0; kgen_n < BN / 8; ++kgen_n)", func() {
			w.P("const float kgen_w0 = kgen_none ? 0.0f : ", exp, "(kgen_s[kgen_n][2 * kgen_h] - kgen_mnew);")
			w.P("const float kgen_w1 = kgen_none ? 0.0f : ", exp, "(kgen_s[kgen_n][2 * kgen_h + 1] - kgen_mnew);")
			w.P("float kgen_r0w, kgen_r1w;")
			w.P("kgen_pf[kgen_n / 2][kgen_h + 2 * (kgen_n % 2)] = kgen_pack<T>(kgen_w0, kgen_w1, kgen_r0w, kgen_r1w);")
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

// mmaAccumulate adds weights·V for the block into kgen_o.
func (mw *matmulWriter) mmaAccumulate() {
	w := mw.Writer
	w.P("const unsigned kgen_pcols = min(D, args.p - kgen_p0);")
	w.P("#pragma unroll")
	w.Block("for (unsigned kgen_d = 0; kgen_d < D / 16; ++kgen_d)", func() {
		w.Block("if (kgen_d * 16 < kgen_pcols)", func() {
			w.P("#pragma unroll")
			w.Block("for (unsigned kgen_j = 0; kgen_j < BN / 16; ++kgen_j)", func() {
				w.P("unsigned kgen_b[4];")
				w.P("kgen_ldsm4t(kgen_b, &kgen_vs[kgen_sw(kgen_j * 16 + kgen_lane % 8 + (kgen_lane / 8) % 2 * 8, kgen_d * 16 + (kgen_lane / 16) * 8)]);")
				w.P("kgen_mma<T>(kgen_o[2 * kgen_d], kgen_pf[kgen_j], kgen_b[0], kgen_b[1]);")
				w.P("kgen_mma<T>(kgen_o[2 * kgen_d + 1], kgen_pf[kgen_j], kgen_b[2], kgen_b[3]);")
			})
		})
	})
}

// mmaWrite sums each row's parts over its quad and writes the pass's
// outputs.
func (mw *matmulWriter) mmaWrite() {
	w := mw.Writer
	w.P("#pragma unroll")
	w.Block("for (unsigned kgen_h = 0; kgen_h < 2; ++kgen_h)", func() {
		w.P("kgen_l[kgen_h] += __shfl_xor_sync(0xffffffffu, kgen_l[kgen_h], 1);")
		w.P("kgen_l[kgen_h] += __shfl_xor_sync(0xffffffffu, kgen_l[kgen_h], 2);")
	})
	w.P("#pragma unroll")
	w.Block("for (unsigned kgen_d = 0; kgen_d < D / 8; ++kgen_d)", func() {
		w.P("#pragma unroll")
		w.Block("for (unsigned kgen_e = 0; kgen_e < 4; ++kgen_e)", func() {
			w.P("const unsigned kgen_i = kgen_row0 + kgen_wr + kgen_g + (kgen_e / 2) * 8, kgen_c = kgen_p0 + kgen_d * 8 + 2 * kgen_t + kgen_e % 2;")
			w.P("const C kgen_r0 = kgen_l[kgen_e / 2];")
			mw.writeOut("kgen_o[kgen_d][kgen_e]")
		})
	})
}

// cudaChainSIMT writes the f32 body: f32 FMA throughout. Warp w owns rows
// 16w..16w+15 of the block; lane j scores key col0 + j of each block of
// BNS and owns output columns j, j + 32, … of each pass of D.
func (mw *matmulWriter) cudaChainSIMT(part bool) {
	w, mm := mw.Writer, mw.mm
	exp := mw.expSpelling()
	w.P("constexpr unsigned SK = 32; // columns of k per staging step")
	w.P("__shared__ float kgen_qs[BM * SK];")
	w.P("__shared__ float kgen_ks[BNS * (SK + 1)];")
	w.P("__shared__ float kgen_ps[BM * BNS]; // the block's weights")
	w.P("__shared__ float kgen_vs[BNS * D];")
	w.P("const unsigned kgen_wr = kgen_warp * 16;")
	w.Block("for (unsigned kgen_p0 = 0; kgen_p0 < args.p; kgen_p0 += D)", func() {
		w.P("float kgen_o[16][D / 32], kgen_mx[16], kgen_l[16];")
		w.P("#pragma unroll")
		w.Block("for (unsigned kgen_r = 0; kgen_r < 16; ++kgen_r)", func() {
			w.P("kgen_mx[kgen_r] = kgen_ninf;")
			w.P("kgen_l[kgen_r] = 0.0f;")
			w.P("#pragma unroll")
			w.Block("for (unsigned kgen_c = 0; kgen_c < D / 32; ++kgen_c)", func() { w.P("kgen_o[kgen_r][kgen_c] = 0.0f;") })
		})
		w.Block("for (unsigned kgen_col0 = "+mw.key0+"; kgen_col0 < kgen_nend; kgen_col0 += BNS)", func() {
			w.P("float kgen_s[16];")
			w.P("#pragma unroll")
			w.Block("for (unsigned kgen_r = 0; kgen_r < 16; ++kgen_r)", func() { w.P("kgen_s[kgen_r] = 0.0f;") })
			w.Block("for (unsigned kgen_k0 = 0; kgen_k0 < args.k; kgen_k0 += SK)", func() {
				w.P("__syncthreads();")
				w.Block("for (unsigned kgen_e = kgen_tid; kgen_e < BM * SK; kgen_e += kThreads)", func() {
					w.P("const unsigned kgen_r = kgen_e / SK, kgen_c = kgen_e % SK;")
					w.P("kgen_qs[kgen_e] = kgen_row0 + kgen_r < ", mw.rowEnd, " && kgen_k0 + kgen_c < args.k ? kgen_f(", mm.A.Name, "[kgen_q_at(kgen_row0 + kgen_r, kgen_k0 + kgen_c)]) : 0.0f;")
				})
				w.Block("for (unsigned kgen_e = kgen_tid; kgen_e < BNS * SK; kgen_e += kThreads)", func() {
					w.P("const unsigned kgen_r = kgen_e / SK, kgen_c = kgen_e % SK;")
					w.P("kgen_ks[kgen_r * (SK + 1) + kgen_c] = kgen_col0 + kgen_r < args.n && kgen_k0 + kgen_c < args.k ? kgen_f(", mm.B[0].Name, "[kgen_k_at(kgen_col0 + kgen_r, kgen_k0 + kgen_c)]) : 0.0f;")
				})
				w.P("__syncthreads();")
				w.Block("for (unsigned kgen_kk = 0; kgen_kk < SK; ++kgen_kk)", func() {
					w.P("const float kgen_kv = kgen_ks[kgen_lane * (SK + 1) + kgen_kk];")
					w.P("#pragma unroll")
					w.Block("for (unsigned kgen_r = 0; kgen_r < 16; ++kgen_r)", func() {
						w.P("kgen_s[kgen_r] = fmaf(kgen_qs[(kgen_wr + kgen_r) * SK + kgen_kk], kgen_kv, kgen_s[kgen_r]);")
					})
				})
			})
			w.P("__syncthreads(); // the last block's V and weights are read")
			w.Block("for (unsigned kgen_e = kgen_tid; kgen_e < BNS * D; kgen_e += kThreads)", func() {
				w.P("const unsigned kgen_r = kgen_e / D, kgen_c = kgen_e % D;")
				w.P("kgen_vs[kgen_e] = kgen_col0 + kgen_r < args.n && kgen_p0 + kgen_c < args.p ? kgen_f(", mm.Chain.Then.Name, "[kgen_v_at(kgen_col0 + kgen_r, kgen_p0 + kgen_c)]) : 0.0f;")
			})
			w.P("#pragma unroll")
			w.Block("for (unsigned kgen_r = 0; kgen_r < 16; ++kgen_r)", func() {
				if part { // packed rows (cuda_decode.go)
					w.P("const unsigned kgen_pr = kgen_row0 + kgen_wr + kgen_r, kgen_i = kgen_pr % args.m, kgen_j = kgen_col0 + kgen_lane;")
				} else {
					w.P("const unsigned kgen_i = kgen_row0 + kgen_wr + kgen_r, kgen_j = kgen_col0 + kgen_lane;")
				}
				mw.scoreCall("kgen_s[kgen_r]", "const float kgen_sv")
				w.P("float kgen_mb = kgen_sv;")
				w.Block("for (int kgen_x = 16; kgen_x > 0; kgen_x /= 2)", func() {
					w.P("kgen_mb = fmaxf(kgen_mb, __shfl_xor_sync(0xffffffffu, kgen_mb, kgen_x));")
				})
				w.P("const float kgen_mnew = fmaxf(kgen_mx[kgen_r], kgen_mb);")
				w.P("const bool kgen_none = kgen_mnew == kgen_ninf;")
				w.P("const float kgen_f = kgen_none ? 1.0f : ", exp, "(kgen_mx[kgen_r] - kgen_mnew);")
				w.P("const float kgen_w = kgen_none ? 0.0f : ", exp, "(kgen_sv - kgen_mnew);")
				w.P("float kgen_sum = kgen_w;")
				w.Block("for (int kgen_x = 16; kgen_x > 0; kgen_x /= 2)", func() {
					w.P("kgen_sum += __shfl_xor_sync(0xffffffffu, kgen_sum, kgen_x);")
				})
				w.P("kgen_l[kgen_r] = kgen_l[kgen_r] * kgen_f + kgen_sum;")
				w.P("kgen_mx[kgen_r] = kgen_mnew;")
				w.P("kgen_ps[(kgen_wr + kgen_r) * BNS + kgen_lane] = kgen_w;")
				w.P("#pragma unroll")
				w.Block("for (unsigned kgen_c = 0; kgen_c < D / 32; ++kgen_c)", func() { w.P("kgen_o[kgen_r][kgen_c] *= kgen_f;") })
			})
			w.P("__syncthreads(); // V is in")
			w.Block("for (unsigned kgen_j = 0; kgen_j < BNS; ++kgen_j)", func() {
				w.P("float kgen_vv[D / 32];")
				w.P("#pragma unroll")
				w.Block("for (unsigned kgen_c = 0; kgen_c < D / 32; ++kgen_c)", func() { w.P("kgen_vv[kgen_c] = kgen_vs[kgen_j * D + kgen_lane + 32 * kgen_c];") })
				w.P("#pragma unroll")
				w.Block("for (unsigned kgen_r = 0; kgen_r < 16; ++kgen_r)", func() {
					w.P("const float kgen_pw = kgen_ps[(kgen_wr + kgen_r) * BNS + kgen_j];")
					w.P("#pragma unroll")
					w.Block("for (unsigned kgen_c = 0; kgen_c < D / 32; ++kgen_c)", func() {
						w.P("kgen_o[kgen_r][kgen_c] = fmaf(kgen_pw, kgen_vv[kgen_c], kgen_o[kgen_r][kgen_c]);")
					})
				})
			})
		})
		if part {
			mw.simtPartials()
			w.P("__syncthreads(); // the next pass restages the tiles")
			return
		}
		w.P("#pragma unroll")
		w.Block("for (unsigned kgen_r = 0; kgen_r < 16; ++kgen_r)", func() {
			w.P("#pragma unroll")
			w.Block("for (unsigned kgen_cc = 0; kgen_cc < D / 32; ++kgen_cc)", func() {
				w.P("const unsigned kgen_i = kgen_row0 + kgen_wr + kgen_r, kgen_c = kgen_p0 + kgen_lane + 32 * kgen_cc;")
				w.P("const C kgen_r0 = kgen_l[kgen_r];")
				mw.writeOut("kgen_o[kgen_r][kgen_cc]")
			})
		})
		w.P("__syncthreads(); // the next pass restages the tiles")
	})
}
