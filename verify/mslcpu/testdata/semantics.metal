// Where the harness's C++ may differ from Apple's compiler (docs/fidelity.md,
// "Choices"): each kernel shows the harness's documented behaviour.
#include <metal_stdlib>
using namespace metal;

// An unsuffixed literal is a double here: x * 1.1 is computed in double and
// rounded once to float. Apple's compiler makes 1.1 a float (Metal has no
// double), rounding the literal and then the product.
kernel void literal_double(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
  y[i] = x[i] * 1.1;
}

// half and bfloat round after every operation: (1 + 2048) - 2048 in half is
// 0 (2049 rounds to 2048), (1 + 256) - 256 in bfloat is 0; with float
// intermediates both would be 1.
kernel void narrow_rounding(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {
  half a = half(in[0]), b = half(in[1]);
  bfloat c = bfloat(in[0]), d = bfloat(in[2]);
  out[0] = float((a + b) - b);
  out[1] = float((c + d) - d);
  out[2] = float((float(a) + float(b)) - float(b));
  half e = half(in[3]);
  out[3] = float(e * e * e);  // each product rounded to half
}

// fast::, precise:: and unqualified functions are the same precise
// functions, and isnan sees a NaN (Apple's fast math may fold it to false).
kernel void fast_precise(device const float* x [[buffer(0)]], device uint* out [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) {
  float v = x[i];
  uint same = as_type<uint>(fast::tanh(v)) == as_type<uint>(precise::tanh(v)) ? 1u : 0u;
  same += as_type<uint>(tanh(v)) == as_type<uint>(precise::tanh(v)) ? 2u : 0u;
  same += as_type<uint>(fast::exp(v)) == as_type<uint>(precise::exp(v)) ? 4u : 0u;
  same += isnan(v) ? 8u : 0u;
  out[i] = same;
}

// Integer promotion and conversions follow C++ (Metal's rules are C++'s).
kernel void promotion(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  uchar a = uchar(200 + i), b = 100;  // i is 0: keeps the values out of constant folding's way
  short s = short(-1 - int(i));
  uint u = 1 + i;
  out[0] = int(a + b);                  // 300: uchar + uchar is int
  out[1] = int(uchar(a + b));           // 44: narrowed back
  out[2] = s < u ? 1 : 0;               // 0: short -> int -> uint, -1 becomes 0xffffffff
  out[3] = int(char(a));                // -56: char is signed
  out[4] = int(sizeof(a + b));          // 4
  out[5] = int(sizeof(half(1) + 1));    // 2: half + int is half
  out[6] = (-7 - int(i)) / 2;           // -3: division truncates
  out[7] = (-7 - int(i)) % 2;           // -1
  out[8] = int(uint(7 + i) / uint(-2)); // 0: int -2 converted to uint
  out[9] = int(uint(0xffffffffu + i) + 1u); // 0: unsigned arithmetic wraps
}
