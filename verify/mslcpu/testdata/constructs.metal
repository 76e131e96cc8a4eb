// Constructs from other projects' kernels (issue 17): half and bfloat
// literals, simd_shuffle_and_fill_up/down, Apple's __metal_* builtins,
// address-space-qualified member functions and overloads.
#include <metal_stdlib>
using namespace metal;

// A template, as in MLX's complex_t: in a non-template class the collapsed
// variants cannot be disabled and clang reports them at their line.
template <class T> struct acc {
  T v;
  acc() thread : v(1.0h) {}
  acc() threadgroup : v(2.0h) {}
  T get() const thread { return v; }
  T get() const device { return v + 100.0f; }
};

kernel void constructs(device float* out [[buffer(0)]], uint l [[thread_index_in_simdgroup]]) {
  float d = float(l), f = 100.0f + float(l);
  out[l] = simd_shuffle_and_fill_up(d, f, ushort(1), ushort(4));
  out[32 + l] = simd_shuffle_and_fill_down(d, f, ushort(1), ushort(4));
  out[64 + l] = __metal_exp(float(l) * 0.125f, __METAL_PRECISE_MATH__) - exp(float(l) * 0.125f);
  acc<float> a;
  out[96 + l] = a.get() + float(0.1h) + float(0.5bf);
}
