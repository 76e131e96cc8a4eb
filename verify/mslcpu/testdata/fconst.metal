// Function constants in the forms MSL allows (spec 5.8.1), and the other
// constructs llama.cpp's ggml-metal.metal needs (docs/fidelity.md).
#include <metal_stdlib>
using namespace metal;

#define FC_BASE 1300

constant short op_kind [[function_constant(FC_BASE + 1)]];      // a computed index
constant int n_items [[function_constant(7)]];                   // used as an array size
constant int width [[function_constant(2 * 5)]] = 3;             // an initializer: the default
constant bool has_bias [[function_constant((FC_BASE + 2))]];     // read only when asked for
constant bool use_bias = is_function_constant_defined(has_bias) && has_bias;

template <typename T4>
T4 widen4(half4 h) {
  return T4(h);  // a functional cast through a template parameter converts
}

kernel void fconst(device float* out [[buffer(0)]],
                   device const packed_char4* pc [[buffer(1)]],
                   uint tid [[thread_position_in_grid]]) {
  if (tid != 0) return;
  float tmp[n_items];
  size_t n = sizeof(tmp) / sizeof(tmp[0]);
  ptrdiff_t d = &tmp[n - 1] - &tmp[0];
  out[0] = float(op_kind);
  out[1] = float(n);
  out[2] = float(d);
  out[3] = float(width);
  out[4] = is_function_constant_defined(op_kind) ? 1.0f : 0.0f;
  out[5] = is_function_constant_defined(width) ? 1.0f : 0.0f;
  if (op_kind == 2) {
    out[6] = 1.0f;
  } else {
    out[6] = -1.0f;
  }
  out[7] = use_bias ? (has_bias ? 2.0f : 1.0f) : 0.0f;
  half4 h = half4(1.5h, -2.0h, 0.25h, 3.0h);
  float4 f = (float4) h;                       // converts (clang would reinterpret)
  int4 i = (int4) float4(1.75f, -2.5f, 3.0f, 0.0f);
  float4 w = widen4<float4>(h);
  float4 m = fmax(0, f);                       // scalar-vector mixes
  float4 s = step(0.0f, f);
  float4 c = clamp(f, 0.0f, 2.0f);
  int4 ci = clamp(i, 0, 2);
  float4 p = float4(pc[0]);                    // a packed vector converts
  out[8] = f.x + f.y + f.z + f.w;              // 2.75
  out[9] = float(i.x + i.y + i.z + i.w);       // 1 - 2 + 3 + 0 = 2
  out[10] = w.x + w.w;                         // 4.5
  out[11] = m.x + m.y + m.z + m.w;             // 4.75
  out[12] = s.x + s.y + s.z + s.w;             // 3
  out[13] = c.x + c.y + c.z + c.w;             // 1.5 + 0 + 0.25 + 2 = 3.75
  out[14] = float(ci.x + ci.y + ci.z + ci.w);  // 1 + 0 + 2 + 0 = 3
  out[15] = p.x + p.y + p.z + p.w;
  out[16] = float(MAXHALF);
  out[17] = float(popcount(uchar(0xF0)) + clz(ushort(1)) + absdiff(int(-3), int(4)) + addsat(uchar(200), uchar(100)));
}

kernel void reads_bias(device float* out [[buffer(0)]], uint tid [[thread_position_in_grid]]) {
  out[tid] = has_bias ? 1.0f : 0.0f;
}
