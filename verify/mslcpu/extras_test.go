package mslcpu

import (
	"encoding/binary"
	"math"
	"os"
	"testing"
)

func runExtras(t *testing.T, host string, bufs [][]byte, grid, tg uint32, order LaneOrder) [][]byte {
	t.Helper()
	needCompiler(t)
	src, err := os.ReadFile("testdata/extras.metal")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(testContext(t), Launch{Source: src, HostName: host, Buffers: bufs,
		Grid: [3]uint32{grid, 1, 1}, Threadgroup: [3]uint32{tg, 1, 1}, Order: order})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAtomics: 3 groups of 32 lanes (the last partial, 10 lanes) add to
// device atomic_int/uint/float and a threadgroup atomic_uint: the sums are
// exact in any lane order, the old values fetch_add returned chain from 0
// to the total, and a failed compare-exchange loads the current value.
func TestAtomics(t *testing.T) {
	const n = 74
	for _, order := range []LaneOrder{Forward, Shuffled} {
		out := runExtras(t, "atomics", [][]byte{make([]byte, 4), make([]byte, 4), make([]byte, 4), make([]byte, 12), make([]byte, 4*n)}, n, 32, order)
		sum, max := int32(0), uint32(0)
		for g := uint32(0); g < n; g++ {
			sum += int32(g)
			if g*7%100 > max {
				max = g * 7 % 100
			}
		}
		if got := int32(binary.LittleEndian.Uint32(out[0])); got != sum {
			t.Errorf("order %d: atomic_int sum %d, want %d", order, got, sum)
		}
		if got := binary.LittleEndian.Uint32(out[1]); got != max {
			t.Errorf("order %d: atomic_uint max %d, want %d", order, got, max)
		}
		if got := math.Float32frombits(binary.LittleEndian.Uint32(out[2])); got != 0.5*n {
			t.Errorf("order %d: atomic_float sum %v, want %v", order, got, 0.5*n)
		}
		for g, lanes := range []uint32{32, 32, 10} {
			if got, want := binary.LittleEndian.Uint32(out[3][4*g:]), lanes*(lanes+1)/2; got != want {
				t.Errorf("order %d: group %d threadgroup total %d, want %d", order, g, got, want)
			}
		}
		// The old values fetch_add returned chain: sorted, each is the
		// previous plus the previous lane's addend, from 0 up to the sum.
		byOld := map[int32]int32{}
		for i := 1; i < n; i++ {
			byOld[int32(binary.LittleEndian.Uint32(out[4][4*i:]))] = int32(i)
		}
		for at, steps := int32(0), 0; at != sum; steps++ {
			i, ok := byOld[at]
			if !ok || steps > n {
				t.Errorf("order %d: no lane's fetch_add returned %d: the old values do not chain from 0 to %d", order, at, sum)
				break
			}
			at += i
		}
		if got := int32(binary.LittleEndian.Uint32(out[4])); got != -3 {
			t.Errorf("order %d: compare_exchange: code %d, want -3 (failed, expected updated)", order, got)
		}
	}
}

// TestPackedAndMatrix: packed_float3 is 12 bytes inside a 16-byte struct;
// float4x4 is column-major (m·v sums columns, v·m dots them), float3x3 from
// columns, transpose, matrix products, float2x2 from elements in column
// order. The values are small integers, so every result is exact.
func TestPackedAndMatrix(t *testing.T) {
	const n = 5
	in := make([]byte, 16*n)
	var p [n][3]float32
	for i := 0; i < n; i++ {
		for k := 0; k < 3; k++ {
			p[i][k] = float32(i + k - 2)
			binary.LittleEndian.PutUint32(in[16*i+4*k:], math.Float32bits(p[i][k]))
		}
		binary.LittleEndian.PutUint32(in[16*i+12:], uint32(10*i))
	}
	var m [4][4]float32 // m[c][r]
	mb := make([]byte, 64)
	for c := 0; c < 4; c++ {
		for r := 0; r < 4; r++ {
			m[c][r] = float32(c*4 + r - 5)
			binary.LittleEndian.PutUint32(mb[4*(4*c+r):], math.Float32bits(m[c][r]))
		}
	}
	out := runExtras(t, "packed_matrix", [][]byte{in, make([]byte, 36*n), mb, make([]byte, 4*n)}, n, 32, Forward)
	got := bytesF32(out[1])
	mm12 := float32(0)
	for k := 0; k < 4; k++ {
		mm12 += m[k][2] * m[1][k] // (m*m)[col 1][row 2]
	}
	for i := 0; i < n; i++ {
		v := [4]float32{p[i][0], p[i][1], p[i][2], 1}
		for r := 0; r < 3; r++ {
			var mv, vm, tr float32
			for k := 0; k < 4; k++ {
				mv += m[k][r] * v[k]
				vm += v[k] * m[r][k]
			}
			for k := 0; k < 3; k++ {
				tr += m[r][k] * p[i][k]
			}
			tr += float32(10 * i)
			if got[9*i+r] != mv || got[9*i+3+r] != vm || got[9*i+6+r] != tr {
				t.Errorf("vertex %d row %d: m·v %v (want %v), v·m %v (want %v), transpose %v (want %v)",
					i, r, got[9*i+r], mv, got[9*i+3+r], vm, got[9*i+6+r], tr)
			}
		}
		// float2x2(1,2,3,4)*float2x2(2): column 1 is (3,4)*2, row 0 is 6.
		if g := bytesF32(out[3])[i]; g != mm12+6 {
			t.Errorf("lane %d: (m*m)[1][2] + two[1][0] = %v, want %v", i, g, mm12+6)
		}
	}
}
