// shim_mma.h: the tensor-core helpers of kgen's generated mma.sync kernels
// (templates/cuda/mma.tmpl: cp.async, ldmatrix, mma.sync m16n8k16) and the
// device intrinsics their quantized readers use (templates/cuda/quant.tmpl),
// for the CPU (e2e/cudacpu). Included after shim.h and before a .cu built
// with -DKGEN_HOST_MMA, which leaves out the PTX versions. The warp-wide
// operations publish each lane's registers, meet at the warp's gate, and
// compute every lane's result from the PTX ISA's fragment layouts
// (mma.sync m16n8k16 .row.col; ldmatrix .m8n8.x4, .trans), so a kernel that
// misreads a layout fails here as on the GPU. cp.async copies at once.
#pragma once
#include <cstdint>

namespace kgen_cpu {

// exchange publishes n words of this lane, waits for the warp, runs read
// over every lane's words, and waits again so no lane overwrites its slot
// before all have read.
template <typename F>
inline void exchange(const unsigned* mine, int n, F read) {
    const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    warp& w = run->warps[t / 32];
    const unsigned lane = t % 32;
    for (int i = 0; i < n; ++i) w.wide[lane][i] = mine[i];
    wait(w.g);
    for (unsigned l = 0; l < 32; ++l)
        if (w.gone[l]) die("a warp-wide matrix operation with a lane that has returned");
    read(w.wide, lane);
    wait(w.g);
}

template <typename T> inline float half_at(unsigned word, int h) {
    const unsigned short bits = (unsigned short)(word >> (16 * h));
    T v;
    std::memcpy(&v, &bits, 2);
    return float(v);
}

} // namespace kgen_cpu

inline unsigned kgen_smem(const void* p) { return (unsigned)(uintptr_t)p; }
inline void kgen_cp16(void* dst, const void* src, int src_bytes) {
    if (src_bytes < 0 || src_bytes > 16) kgen_cpu::die("cp.async with a source size outside 0..16");
    std::memcpy(dst, src, size_t(src_bytes));
    std::memset(static_cast<char*>(dst) + src_bytes, 0, size_t(16 - src_bytes));
}
inline void kgen_cp_commit() {}
inline void kgen_cp_wait_all() {}

// ldmatrix .x4: lanes 8i … 8i + 7 give the rows of matrix i (16 bytes
// each); lane l receives, of each matrix i, row l / 4's elements 2(l % 4)
// and 2(l % 4) + 1 (.trans: row 2(l % 4) and 2(l % 4) + 1's element l / 4).
inline void kgen_ldsm_emu(unsigned (&r)[4], const void* p, bool trans) {
    unsigned a[2];
    const uintptr_t addr = uintptr_t(p);
    if (addr % 16 != 0) kgen_cpu::die("ldmatrix row address not 16-byte aligned");
    std::memcpy(a, &addr, sizeof addr);
    kgen_cpu::exchange(a, 2, [&](unsigned (&all)[32][8], unsigned l) {
        auto row = [&](unsigned lane) {
            uintptr_t q;
            std::memcpy(&q, all[lane], sizeof q);
            return reinterpret_cast<const unsigned short*>(q);
        };
        for (unsigned i = 0; i < 4; ++i) {
            unsigned short lo, hi;
            if (!trans) {
                lo = row(8 * i + l / 4)[2 * (l % 4)], hi = row(8 * i + l / 4)[2 * (l % 4) + 1];
            } else {
                lo = row(8 * i + 2 * (l % 4))[l / 4], hi = row(8 * i + 2 * (l % 4) + 1)[l / 4];
            }
            r[i] = unsigned(lo) | unsigned(hi) << 16;
        }
    });
}
inline void kgen_ldsm4(unsigned (&r)[4], const void* p) { kgen_ldsm_emu(r, p, false); }
inline void kgen_ldsm4t(unsigned (&r)[4], const void* p) { kgen_ldsm_emu(r, p, true); }

// mma.sync m16n8k16 .row.col, f32 accumulate: lane 4g + t holds A's rows
// g, g + 8 at columns 2t, 2t + 1 (regs 0, 1) and 2t + 8, 2t + 9 (regs 2,
// 3); B's column g at rows 2t, 2t + 1 (reg 0) and 2t + 8, 2t + 9 (reg 1);
// C's rows g, g + 8 at columns 2t, 2t + 1. Products and their sum in
// double, added to C once: at least as accurate as the tensor cores.
template <typename T>
inline void kgen_mma(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    const unsigned mine[6] = {a[0], a[1], a[2], a[3], b0, b1};
    float out[4];
    kgen_cpu::exchange(mine, 6, [&](unsigned (&all)[32][8], unsigned l) {
        auto A = [&](unsigned r, unsigned k) {
            const unsigned reg = (r >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0);
            return kgen_cpu::half_at<T>(all[4 * (r % 8) + (k % 8) / 2][reg], k % 2);
        };
        auto B = [&](unsigned k, unsigned n) { return kgen_cpu::half_at<T>(all[4 * n + (k % 8) / 2][4 + (k >= 8 ? 1 : 0)], k % 2); };
        const unsigned g = l / 4, t = l % 4;
        for (unsigned e = 0; e < 4; ++e) {
            const unsigned row = g + 8 * (e / 2), col = 2 * t + e % 2;
            double s = 0;
            for (unsigned k = 0; k < 16; ++k) s += double(A(row, k)) * double(B(k, col));
            out[e] = float(double(c[e]) + s);
        }
    });
    for (int e = 0; e < 4; ++e) c[e] = out[e];
}

template <typename T> inline unsigned kgen_pack(float lo, float hi, float& rlo, float& rhi);
template <> inline unsigned kgen_pack<__nv_bfloat16>(float lo, float hi, float& rlo, float& rhi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    rlo = __low2float(v), rhi = __high2float(v);
    unsigned u;
    std::memcpy(&u, &v, 4);
    return u;
}
template <> inline unsigned kgen_pack<__half>(float lo, float hi, float& rlo, float& rhi) {
    __half2 v = __floats2half2_rn(lo, hi);
    rlo = __low2float(v), rhi = __high2float(v);
    unsigned u;
    std::memcpy(&u, &v, 4);
    return u;
}
template <> inline void kgen_mma<float>(float (&)[4], const unsigned (&)[4], unsigned, unsigned) {}
template <> inline unsigned kgen_pack<float>(float, float, float&, float&) { return 0; }

// The device intrinsics of the readers.
template <typename T> inline T __ldg(const T* p) { return *p; }
template <typename T> inline T __ldcs(const T* p) { return *p; }
// __uint_as_float: shim.h's, which every harness build includes first.
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    const unsigned long long v = (unsigned long long)y << 32 | x;
    unsigned r = 0;
    for (int i = 0; i < 4; ++i) r |= unsigned((v >> (8 * ((s >> (4 * i)) & 7))) & 0xFF) << (8 * i);
    return r;
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
    return unsigned(((unsigned long long)hi << 32 | lo) >> (shift & 31));
}
// CUDA's min and max overloads the kernels call.
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
// fma of pairs, each half rounded once, as the tensor cores' HFMA2 does:
// a·b is exact in double (16-bit operands), a·b + c is the double sum s
// plus its rounding error e (TwoSum), and kgen_fma_odd rounds s + e to
// float with round-to-odd (truncate, then set the last bit if anything
// was cut off), which makes the final rounding to the 16-bit type
// correct: float's 24 bits are at least two more than bf16's 8 and
// f16's 11.
inline float kgen_fma_odd(float a, float b, float c) {
    const double p = double(a) * b, s = p + c;
    if (!std::isfinite(s)) return float(s);
    const double bb = s - p, e = (p - (s - bb)) + (c - bb);
    float f = float(s);
    if (!std::isfinite(f)) return f;
    const double rest = (s - double(f)) + e; // exact value − f
    if (rest == 0) return f;
    if (f == 0.0f) f = std::copysign(0.0f, float(rest));
    else if ((rest > 0) != (f > 0)) f = std::nextafter(f, 0.0f); // toward zero: the truncation
    unsigned u;
    std::memcpy(&u, &f, 4);
    u |= 1u; // sticky: not exact
    std::memcpy(&f, &u, 4);
    return f;
}
inline __nv_bfloat162 __hfma2(__nv_bfloat162 a, __nv_bfloat162 b, __nv_bfloat162 c) {
    return __floats2bfloat162_rn(kgen_fma_odd(__low2float(a), __low2float(b), __low2float(c)),
                                 kgen_fma_odd(__high2float(a), __high2float(b), __high2float(c)));
}
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
    return __floats2half2_rn(kgen_fma_odd(__low2float(a), __low2float(b), __low2float(c)),
                             kgen_fma_odd(__high2float(a), __high2float(b), __high2float(c)));
}
