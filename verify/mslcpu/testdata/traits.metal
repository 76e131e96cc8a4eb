// Constructs candle's reduce.metal needs, in a kgen-written kernel:
// Metal's vec_elements trait (0 for scalars), Apple's _numeric_limits_impl
// specialised for a user type, a class whose only constructors are
// defaulted (one threadgroup-qualified) still an aggregate as in C++14,
// a `threadgroup T x[N]` function parameter, fast::min and
// __is_valid_simdgroup_type.
#include <metal_stdlib>
using namespace metal;

template <typename T> struct pair_t {
  constexpr pair_t<T>() = default;
  constexpr pair_t<T>() threadgroup = default;
  uint i;
  T val;
};
template <typename T> struct metal::_numeric_limits_impl<pair_t<T>> {
  static constexpr pair_t<T> lowest() { return pair_t<T>{7, numeric_limits<T>::lowest()}; }
};

template <ushort N> float tg_sum(threadgroup float shared[N], uint lane) {
  shared[lane] = float(lane);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float s = 0;
  for (ushort k = 0; k < N; ++k) s += shared[k];
  return s;
}

// MLX's unary.metal: a braced list passed to a vector parameter,
// static_cast from half to bfloat and between vector types (a conversion,
// not C++'s bit reinterpretation), math on an unsuffixed literal's double.
template <typename I = int> I first_two(uint3 e, int k) { return I(e.x + e.y) * k; }
template <typename I = int> I first_two(I e, int k) { return e * k; }

kernel void traits(device float* out [[buffer(0)]], uint lane [[thread_index_in_threadgroup]]) {
  threadgroup float shared[32];
  float s = tg_sum<32>(shared, lane);
  if (lane != 0) return;
  out[0] = float(vec_elements<float4>::value);
  out[1] = float(vec_elements<float>::value);
  out[2] = float(numeric_limits<pair_t<half>>::lowest().i);
  out[3] = float(numeric_limits<pair_t<half>>::lowest().val);
  out[4] = s;
  out[5] = fast::min(2.0f, -3.0f);
  out[6] = float(__is_valid_simdgroup_type<half4>::value) + 2 * float(__is_valid_simdgroup_type<long>::value);
  out[7] = float(is_vector_v<int2>);
  out[8] = float(first_two<int>({lane + 3, 4u, 5u}, 2));
  out[9] = float(static_cast<bfloat>(half(1.00390625f)));
  out[10] = static_cast<float4>(int4(1, -2, 3, 4)).y;
  out[11] = sqrt((s + 4.0f) / 2.0);
  metal::array<float, 2> two = {1.5f, 2.5f};
  out[12] = two[1] + float(two.size());
}
