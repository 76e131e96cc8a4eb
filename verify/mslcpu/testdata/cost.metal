// Kernels whose costs are known by hand: cost_test.go checks every count.
#include <metal_stdlib>
using namespace metal;

struct cost_args {
    uint n;
    float s;
};

// One float4 load and one float4 store per thread, n read from constant.
kernel void copy4(device const float4* x [[buffer(0)]], device float4* y [[buffer(1)]],
                  constant cost_args& a [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (i >= a.n) return;
    y[i] = x[i] * a.s;
}

// One half load and one half store per thread.
kernel void copy_half(device const half* x [[buffer(0)]], device half* y [[buffer(1)]],
                      constant cost_args& a [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (i >= a.n) return;
    y[i] = x[i];
}

// A tree sum of 64 floats per group through threadgroup memory: one store,
// then 6 halvings (each: a barrier, the active lanes read two and write one),
// then lane 0 writes the group's sum.
kernel void tree_sum(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                     uint i [[thread_position_in_grid]], uint t [[thread_position_in_threadgroup]],
                     uint g [[threadgroup_position_in_grid]]) {
    threadgroup float buf[64];
    buf[t] = x[i];
    for (uint s = 32; s > 0; s /= 2) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (t < s) buf[t] = buf[t] + buf[t + s];
    }
    if (t == 0) y[g] = buf[0];
}

// simd_sum over a partial group: lanes past n return first and sit it out.
kernel void partial_sum(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                        constant cost_args& a [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float v = i < a.n ? x[i] : 0.0f;
    float s = simd_sum(v);
    float m = simd_shuffle_down(s, 1);
    if (i == 0) y[0] = s + m;
}

// One 8x8 tile: two simdgroup loads from device memory, one multiply, one store.
kernel void tile_mm(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                    device float* c [[buffer(2)]]) {
    simdgroup_float8x8 ma, mb, mc;
    simdgroup_load(ma, a, 8);
    simdgroup_load(mb, b, 8);
    simdgroup_multiply(mc, ma, mb);
    simdgroup_store(mc, c, 8);
}

// Eight floats per thread through a thread array, as MLX's norms read rows:
// the copy loop is a memcpy idiom that the cost build must not turn into
// an uncounted library call (-fno-builtin).
kernel void copy8_loop(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    float v[8];
    for (int j = 0; j < 8; j++) v[j] = x[8 * i + j];
    for (int j = 0; j < 8; j++) y[8 * i + j] = v[j];
}

// Arithmetic by type: a half multiply, a conversion, exp (a special
// function, called inside the shim's metal::exp) and a float add.
kernel void arith_mix(device const half* x [[buffer(0)]], device float* y [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    half h = x[i] * x[i];
    float f = float(h);
    y[i] = exp(f) + 1.0f;
}
