package mslcpu

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func runCost(t *testing.T, l Launch) *Cost {
	t.Helper()
	_, c, err := RunCost(testContext(t), l)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCostCounts checks every count of kernels whose costs are known by
// hand (testdata/cost.metal), in every lane order: the counts must not
// depend on it.
func TestCostCounts(t *testing.T) {
	needCompiler(t)
	src := readTestdata(t, "cost.metal")
	const n = 100
	zeros := func(k int) []byte { return make([]byte, k) }
	cases := []struct {
		host string
		l    Launch
		want func(c *Cost) []uint64
		vals []uint64
	}{
		{"copy4", Launch{Buffers: [][]byte{zeros(16 * n), zeros(16 * n), structBytes(n, 2)}, Grid: [3]uint32{n + 28, 1, 1}, Threadgroup: [3]uint32{32, 1, 1}},
			// 16-byte loads and stores per live thread; n read by all 128 threads, s by the live ones
			func(c *Cost) []uint64 {
				return []uint64{c.Device.Loads[4], c.Device.Stores[4], c.Device.ReadBytes(), c.Constant.Loads[2], c.Groups, c.Threads, c.Barriers, c.Arith.F32}
			},
			// a float4 multiply per live thread: 4 f32 lanes
			[]uint64{n, n, 16 * n, 128 + n, 4, 128, 0, 4 * n}},
		{"copy_half", Launch{Buffers: [][]byte{zeros(2 * n), zeros(2 * n), structBytes(n, 2)}, Grid: [3]uint32{n, 1, 1}, Threadgroup: [3]uint32{64, 1, 1}},
			func(c *Cost) []uint64 {
				return []uint64{c.Device.Loads[1], c.Device.Stores[1], c.Device.WriteBytes(), c.Buffers[1].WriteBytes(), c.Buffers[0].ReadBytes()}
			},
			[]uint64{n, n, 2 * n, 2 * n, 2 * n}},
		{"tree_sum", Launch{Buffers: [][]byte{zeros(4 * 128), zeros(4 * 2)}, Grid: [3]uint32{128, 1, 1}, Threadgroup: [3]uint32{64, 1, 1}},
			// per group: 64 stores, then 32+16+...+1 = 63 lanes read two and write one, then one read
			func(c *Cost) []uint64 {
				return []uint64{c.Barriers, c.Threadgroup.Stores[2], c.Threadgroup.Loads[2], c.Device.Loads[2], c.Device.Stores[2], c.Arith.F32}
			},
			[]uint64{2 * 6, 2 * (64 + 63), 2 * (2*63 + 1), 128, 2, 2 * 63}},
		{"partial_sum", Launch{Buffers: [][]byte{zeros(4 * 40), zeros(4), structBytes(40, 1)}, Grid: [3]uint32{40, 1, 1}, Threadgroup: [3]uint32{64, 1, 1}},
			// a group of 40 lanes: two simdgroups (32 and 8 lanes), so 24 idle lanes per call
			func(c *Cost) []uint64 {
				r, s := c.Simd[SimdReduce], c.Simd[SimdShuffle]
				return []uint64{r.Ops, r.IdleLanes, s.Ops, s.IdleLanes, c.Simd[MatrixMMA].Ops, c.Arith.F32}
			},
			// one add by lane 0: the shim's emulation of simd_sum adds nothing
			[]uint64{2, 24, 2, 24, 0, 1}},
		{"tile_mm", Launch{Buffers: [][]byte{zeros(256), zeros(256), zeros(256)}, Grid: [3]uint32{32, 1, 1}, Threadgroup: [3]uint32{32, 1, 1}},
			func(c *Cost) []uint64 {
				return []uint64{c.Simd[MatrixLoad].Ops, c.Simd[MatrixMMA].Ops, c.Simd[MatrixStore].Ops, c.Device.ReadBytes(), c.Device.WriteBytes(), c.Simd[MatrixLoad].IdleLanes, c.Arith.F32}
			},
			[]uint64{2, 1, 1, 512, 256, 0, 0}},
		{"arith_mix", Launch{Buffers: [][]byte{zeros(2 * 64), zeros(4 * 64)}, Grid: [3]uint32{64, 1, 1}, Threadgroup: [3]uint32{64, 1, 1}},
			func(c *Cost) []uint64 {
				a := c.Arith
				return []uint64{a.F16, a.Convert, a.Special, a.F32, a.BF16}
			},
			[]uint64{64, 64, 64, 64, 0}},
		{"copy8_loop", Launch{Buffers: [][]byte{zeros(32 * 64), zeros(32 * 64)}, Grid: [3]uint32{64, 1, 1}, Threadgroup: [3]uint32{64, 1, 1}},
			func(c *Cost) []uint64 { return []uint64{c.Device.Loads[2], c.Device.Stores[2], c.Device.ReadBytes()} },
			[]uint64{8 * 64, 8 * 64, 32 * 64}},
	}
	for _, tc := range cases {
		t.Run(tc.host, func(t *testing.T) {
			var first *Cost
			for _, order := range []LaneOrder{Forward, Reverse, Shuffled} {
				l := tc.l
				l.Source, l.HostName, l.Order = src, tc.host, order
				c := runCost(t, l)
				if got := tc.want(c); !reflect.DeepEqual(got, tc.vals) {
					t.Errorf("order %d: counts %v, want %v\n%+v", order, got, tc.vals, c)
				}
				if first == nil {
					first = c
				} else if !reflect.DeepEqual(first, c) {
					t.Errorf("order %d: counts differ from the forward run:\n%+v\n%+v", order, c, first)
				}
			}
		})
	}
}

// TestCostOffCostsNothing checks that counting lives only in the cost
// build: the plain binary Run uses has no coverage callbacks, no block
// counter and no cost record, and the two builds are cached apart.
func TestCostOffCostsNothing(t *testing.T) {
	needCompiler(t)
	ctx := testContext(t)
	tc, err := newToolchain()
	if err != nil {
		t.Fatal(err)
	}
	p, err := tc.load(ctx, readTestdata(t, "cost.metal"), SourceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := tc.binary(ctx, p, NoSanitizer, nil)
	if err != nil {
		t.Fatal(err)
	}
	counted, _, err := tc.costBinary(ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain == counted {
		t.Fatalf("the plain and the cost build share %s", plain)
	}
	for _, c := range []struct {
		path string
		want bool
	}{{plain, false}, {counted, true}} {
		bin, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, sym := range []string{"__sanitizer_cov_load4", "kgen_cost_block", "KGENCST1"} {
			if got := bytes.Contains(bin, []byte(sym)); got != c.want {
				t.Errorf("%s: contains %s = %v, want %v", filepath.Base(c.path), sym, got, c.want)
			}
		}
	}
}
