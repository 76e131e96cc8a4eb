package mslcpu

import (
	"encoding/binary"
	"math"
	"math/rand"
	"testing"
)

// positionsSource records every position attribute of every thread of a 2D
// grid with partial groups on both axes.
const positionsSource = `#include <metal_stdlib>
using namespace metal;
kernel void positions(
    device uint4* out [[buffer(0)]],
    uint2 gid [[thread_position_in_grid]],
    uint3 tg [[threadgroup_position_in_grid]],
    ushort2 lid [[thread_position_in_threadgroup]],
    uint3 tpg [[threads_per_threadgroup]],
    uint3 grid [[threads_per_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]],
    uint3 ngroups [[threadgroups_per_grid]],
    uint3 dtg [[dispatch_threads_per_threadgroup]])
{
    const uint slot = (gid.y * grid.x + gid.x) * 4u;
    out[slot + 0] = uint4(gid.x, gid.y, tg.x, tg.y);
    out[slot + 1] = uint4(lid.x, lid.y, tpg.x, tpg.y);
    out[slot + 2] = uint4(index, lane, sg, ngroups.x * 1000u + ngroups.y);
    out[slot + 3] = uint4(dtg.x, dtg.y, grid.x, grid.y);
}
`

// TestRunPositions checks dispatchThreads semantics: each thread of the grid
// runs exactly once, edge groups are smaller (threads_per_threadgroup is
// their real size, dispatch_threads_per_threadgroup the requested one).
func TestRunPositions(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	const gx, gy, tx, ty = 37, 11, 8, 4
	out, err := Run(testContext(t), Launch{
		Source:      []byte(positionsSource),
		HostName:    "positions",
		Buffers:     [][]byte{fill(gx*gy*16*4, 0xff)},
		Grid:        [3]uint32{gx, gy, 1},
		Threadgroup: [3]uint32{tx, ty, 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := out[0]
	for y := uint32(0); y < gy; y++ {
		for x := uint32(0); x < gx; x++ {
			w, h := min(tx, gx-x/tx*tx), min(ty, gy-y/ty*ty)
			index := x%tx + y%ty*w
			want := [16]uint32{x, y, x / tx, y / ty, x % tx, y % ty, w, h,
				index, index % 32, index / 32, 5*1000 + 3, tx, ty, gx, gy}
			for k, v := range want {
				off := ((y*gx+x)*16 + uint32(k)) * 4
				if g := binary.LittleEndian.Uint32(got[off:]); g != v {
					t.Fatalf("thread (%d,%d) field %d = %d, want %d", x, y, k, g, v)
				}
			}
		}
	}
}

// featuresSource exercises the shim: constructors from vectors and
// swizzles, vector select/compare, clamp with scalar bounds, rounding
// functions, half/bfloat conversions, int conversion, dot and as_type.
const featuresSource = `#include <metal_stdlib>
using namespace metal;
kernel void features(
    device const float4* a [[buffer(0)]],
    device const float4* b [[buffer(1)]],
    device float4* out [[buffer(2)]],
    device uint4* bits [[buffer(3)]],
    uint i [[thread_position_in_grid]])
{
    const float4 x = a[i];
    const float4 y = b[i];
    out[8 * i + 0] = float4(x.xy, y.zw);
    out[8 * i + 1] = select(x, y, x < y);
    out[8 * i + 2] = clamp(x, -1.0f, 1.0f);
    out[8 * i + 3] = float4(floor(x.x), ceil(x.y), round(x.z), rint(x.w));
    out[8 * i + 4] = float4(half4(x));
    out[8 * i + 5] = float4(float(bfloat(x.x)), float(bfloat(x.y)), float(bfloat(x.z)), float(bfloat(x.w)));
    out[8 * i + 6] = float4(dot(x, y), min(x.z, y.z), max(x.w, y.w), abs(x.w));
    out[8 * i + 7] = float4(int4(x));
    bits[i] = as_type<uint4>(x.wzyx);
}
`

func TestRunShimFeatures(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	rng := rand.New(rand.NewSource(7))
	a := []float32{0.5, 1.5, 2.5, -2.5, 65520, -65504, 1e-8, -0.0, 3.0000002, 1.00390625, 1.01171875, -7.75}
	for len(a) < 4*512 {
		a = append(a, float32(rng.NormFloat64()*40))
	}
	b := make([]float32, len(a))
	for i := range b {
		b[i] = float32(rng.NormFloat64() * 40)
	}
	n := uint32(len(a) / 4)
	out, err := Run(testContext(t), Launch{
		Source:      []byte(featuresSource),
		HostName:    "features",
		Buffers:     [][]byte{f32Bytes(a), f32Bytes(b), make([]byte, 8*16*n), make([]byte, 16*n)},
		Grid:        [3]uint32{n, 1, 1},
		Threadgroup: [3]uint32{64, 1, 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, bits := bytesF32(out[2]), out[3]
	for i := 0; i < int(n); i++ {
		want := featuresModel(a[4*i:4*i+4], b[4*i:4*i+4])
		for k, w := range want {
			if g := got[32*i+k]; !sameFloat(g, w) && !(g == 0 && w == 0) {
				t.Fatalf("thread %d output %d.%d = %v, want %v (x=%v y=%v)", i, k/4, k%4, g, w, a[4*i:4*i+4], b[4*i:4*i+4])
			}
		}
		for k := 0; k < 4; k++ {
			if g, w := binary.LittleEndian.Uint32(bits[16*i+4*k:]), math.Float32bits(a[4*i+3-k]); g != w {
				t.Fatalf("thread %d as_type word %d = %#x, want %#x", i, k, g, w)
			}
		}
	}
}

// featuresModel is the Go reading of featuresSource for one thread.
func featuresModel(x, y []float32) [32]float32 {
	var o [32]float32
	copy(o[0:], []float32{x[0], x[1], y[2], y[3]})
	for k := 0; k < 4; k++ {
		o[4+k] = x[k]
		if x[k] < y[k] {
			o[4+k] = y[k]
		}
		o[8+k] = float32(math.Min(math.Max(float64(x[k]), -1), 1))
		o[16+k] = F16ToF32(F32ToF16(x[k]))
		o[20+k] = BF16ToF32(F32ToBF16(x[k]))
		o[28+k] = float32(int32(x[k]))
	}
	o[12] = float32(math.Floor(float64(x[0])))
	o[13] = float32(math.Ceil(float64(x[1])))
	o[14] = float32(math.Round(float64(x[2])))
	o[15] = float32(math.RoundToEven(float64(x[3])))
	d := x[0] * y[0]
	d = d + x[1]*y[1]
	d = d + x[2]*y[2]
	d = d + x[3]*y[3]
	o[24], o[25] = d, float32(math.Min(float64(x[2]), float64(y[2])))
	o[26], o[27] = float32(math.Max(float64(x[3]), float64(y[3]))), float32(math.Abs(float64(x[3])))
	return o
}

func fill(n int, b byte) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}
