// Atomics, packed vectors and matrix types in kgen-written kernels.
#include <metal_stdlib>
#include <metal_atomic>
using namespace metal;

// Every lane of every group adds to device counters (int, uint, float) and
// to a threadgroup counter; lane 0 of each group stores the group's total.
kernel void atomics(device atomic_int* isum [[buffer(0)]], device atomic_uint* umax [[buffer(1)]],
                    device atomic_float* fsum [[buffer(2)]], device uint* group_total [[buffer(3)]],
                    device int* old_values [[buffer(4)]],
                    uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_threadgroup]],
                    uint group [[threadgroup_position_in_grid]]) {
  threadgroup atomic_uint count;
  if (lane == 0) atomic_store_explicit(&count, 0u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  atomic_fetch_add_explicit(&count, lane + 1, memory_order_relaxed);
  old_values[gid] = atomic_fetch_add_explicit(isum, int(gid), memory_order_relaxed);
  atomic_fetch_max_explicit(umax, gid * 7 % 100, memory_order_relaxed);
  atomic_fetch_add_explicit(fsum, 0.5f, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (lane == 0) group_total[group] = atomic_load_explicit(&count, memory_order_relaxed);
  if (gid == 0) {
    int expected = -1;  // fails: isum is not -1, expected becomes its value
    bool ok = atomic_compare_exchange_weak_explicit(isum, &expected, 5, memory_order_relaxed, memory_order_relaxed);
    old_values[gid] = ok ? -2 : (expected == atomic_load_explicit(isum, memory_order_relaxed) ? -3 : -4);
  }
}

struct Vertex {
  packed_float3 position;  // 12 bytes: the struct is 16 with the uint
  uint id;
};

// Packed vectors in a buffer of structs, and matrix arithmetic: each lane
// reads a vertex, applies m (column-major) and writes m·p, p·m and
// transpose(m)·p as packed_float3, plus (m*m)[1][2].
kernel void packed_matrix(device const Vertex* in [[buffer(0)]], device packed_float3* out [[buffer(1)]],
                          constant float4x4& m [[buffer(2)]], device float* mm [[buffer(3)]],
                          uint i [[thread_position_in_grid]]) {
  float3 p = in[i].position;
  float4 h = m * float4(p, 1.0f);
  float4 g = float4(p, 1.0f) * m;
  float3x3 r = float3x3(m[0].xyz, m[1].xyz, m[2].xyz);
  out[3 * i] = h.xyz;
  out[3 * i + 1] = g.xyz;
  out[3 * i + 2] = transpose(r) * p + float(in[i].id);
  float2x2 two = float2x2(1.0f, 2.0f, 3.0f, 4.0f) * float2x2(2.0f);
  mm[i] = (m * m)[1][2] + two[1][0] + out[3 * i].x * 0.0f;
}
