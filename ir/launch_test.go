package ir_test

import (
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/launch"
)

// eval evaluates a kernel's launch on backend b over the given sizes: the
// derived size fields, then the grid.
func eval(t *testing.T, k *ir.Kernel, b ir.Backend, given map[string]int) (map[string]int, [3]int) {
	t.Helper()
	l := k.Launch(b)
	sizes, err := l.Sizes(given)
	if err != nil {
		t.Fatal(err)
	}
	grid, err := l.GridSize(sizes)
	if err != nil {
		t.Fatal(err)
	}
	return sizes, grid
}

// TestElementwiseLaunch: ceildiv(n, elements per thread) threads. Metal:
// 16 bytes of the narrowest tensor (4 f32 elements, 8 f16 ones) per thread.
// CUDA, when every tensor takes the variant's dtype: per storage dtype, one
// 16-byte vector (math: fast), or 4 / element bytes of them under precise
// (two at f16: 16 elements; one at f32: 4); a fixed-dtype tensor keeps the
// Metal count.
func TestElementwiseLaunch(t *testing.T) {
	f32 := mustBuild(t, `
kernel: ew32
dtypes: [f32]
inputs: [x]
outputs:
  - y: x * 2
`)
	f16 := mustBuild(t, elemSpec) // f32 and f16: the narrowest is 2 bytes
	fast := mustBuild(t, `
kernel: ewfast
dtypes: [f32, f16]
math: fast
inputs: [x]
outputs:
  - y: x * 2
`)
	fixed := mustBuild(t, `
kernel: ewfixed
dtypes: [f16]
inputs: [x, {name: s, dtype: f32}]
outputs:
  - y: x * s
`)
	cases := []struct {
		k         *ir.Kernel
		b         ir.Backend
		elemBytes int
		n         int
		want      int
	}{
		{f32, ir.Metal, 4, 0, 0}, {f32, ir.Metal, 4, 1, 1}, {f32, ir.Metal, 4, 4, 1}, {f32, ir.Metal, 4, 5, 2},
		{f32, ir.Metal, 4, 1000, 250}, {f32, ir.Metal, 4, 1001, 251}, {f32, ir.Metal, 4, 65539, 16385},
		{f16, ir.Metal, 2, 1, 1}, {f16, ir.Metal, 2, 8, 1}, {f16, ir.Metal, 2, 9, 2}, {f16, ir.Metal, 2, 1000, 125}, {f16, ir.Metal, 2, 1001, 126},
		{f16, ir.Metal, 4, 1000, 125}, // Metal's count ignores the variant
		{f32, ir.CUDA, 4, 0, 0}, {f32, ir.CUDA, 4, 5, 2}, {f32, ir.CUDA, 4, 65539, 16385},
		{f16, ir.CUDA, 2, 1, 1}, {f16, ir.CUDA, 2, 16, 1}, {f16, ir.CUDA, 2, 17, 2}, {f16, ir.CUDA, 2, 1000, 63},
		{f16, ir.CUDA, 4, 1000, 250}, {f16, ir.CUDA, 4, 1001, 251},
		{fast, ir.CUDA, 2, 1000, 125}, {fast, ir.CUDA, 2, 1001, 126}, {fast, ir.CUDA, 4, 1001, 251},
		{fixed, ir.CUDA, 2, 1000, 125}, {fixed, ir.CUDA, 4, 1000, 125}, {fixed, ir.Metal, 2, 1000, 125},
	}
	for _, c := range cases {
		_, grid := eval(t, c.k, c.b, map[string]int{"n": c.n, launch.ElemBytes: c.elemBytes})
		if grid != [3]int{c.want, 1, 1} {
			t.Errorf("%s on %s at n=%d (%d-byte elements): grid %v, want [%d 1 1]", c.k.Name, c.b, c.n, c.elemBytes, grid, c.want)
		}
		if tg := c.k.Launch(c.b).Threadgroup; tg != [3]int{256, 1, 1} {
			t.Errorf("%s on %s: threadgroup %v, want [256 1 1]", c.k.Name, c.b, tg)
		}
	}
	if got := f32.Launch(ir.Metal).GridStrings(); got != [3]string{"ceildiv(n, 4)", "1", "1"} {
		t.Errorf("grid strings %q", got)
	}
	if got := f16.Launch(ir.CUDA).GridStrings()[0]; got != "ceildiv(n, 16 / kgen_elem_bytes * (4 / kgen_elem_bytes))" {
		t.Errorf("CUDA grid string %q", got)
	}
}

// TestRowwiseLaunch pins rows_per_group and the grid of a two-segment
// rowwise kernel (a: 10 rows, b: 3 rows) on Metal (teams of up to 4 values
// per lane) and CUDA (one cached input: four 16-byte vectors per lane, 16
// f32 values, 32 f16 ones) at 256 and 1024 threads per group. The team width is the smallest
// power of two from 32 (Metal) or 1 (CUDA) to the group size holding the row; rows_per_group
// is the group size over it; the grid is a group's threads times the sum of
// ceildiv(rows, rows_per_group) over the segments. The expected numbers are
// worked out by hand.
func TestRowwiseLaunch(t *testing.T) {
	cases := []struct {
		tg        int
		b         ir.Backend
		elemBytes int
		cols      int
		rpg       int
		groups    int // ceildiv(10, rpg) + ceildiv(3, rpg)
	}{
		// Metal, 256 threads: 32 lanes up to 128 columns, 64 at 129, 256 from 1024.
		{256, ir.Metal, 4, 1, 8, 2 + 1},
		{256, ir.Metal, 4, 64, 8, 2 + 1},
		{256, ir.Metal, 4, 128, 8, 2 + 1},
		{256, ir.Metal, 4, 129, 4, 3 + 1},
		{256, ir.Metal, 4, 1024, 1, 10 + 3},
		{256, ir.Metal, 4, 4096, 1, 10 + 3},
		{256, ir.Metal, 2, 1024, 1, 10 + 3}, // Metal's rule ignores the element size
		// Metal, 1024 threads.
		{1024, ir.Metal, 4, 1, 32, 1 + 1},
		{1024, ir.Metal, 4, 128, 32, 1 + 1},
		{1024, ir.Metal, 4, 129, 16, 1 + 1},
		{1024, ir.Metal, 4, 1024, 4, 3 + 1},
		{1024, ir.Metal, 4, 4096, 1, 10 + 3},
		// CUDA f32 (one cached input: 4 vectors, 16 values per lane), 256
		// threads: teams from one lane, so narrow rows share a warp (64
		// columns: 4 lanes, 64 rows per block).
		{256, ir.CUDA, 4, 1, 256, 1 + 1},
		{256, ir.CUDA, 4, 16, 256, 1 + 1},
		{256, ir.CUDA, 4, 17, 128, 1 + 1},
		{256, ir.CUDA, 4, 64, 64, 1 + 1},
		{256, ir.CUDA, 4, 128, 32, 1 + 1},
		{256, ir.CUDA, 4, 129, 16, 1 + 1},
		{256, ir.CUDA, 4, 1024, 4, 3 + 1},
		{256, ir.CUDA, 4, 4096, 1, 10 + 3},
		// CUDA f16 (32 values per lane).
		{256, ir.CUDA, 2, 128, 64, 1 + 1},
		{256, ir.CUDA, 2, 1024, 8, 2 + 1},
		{256, ir.CUDA, 2, 4096, 2, 5 + 2},
		// CUDA, 1024 threads: the same vectors per lane.
		{1024, ir.CUDA, 4, 129, 64, 1 + 1},
		{1024, ir.CUDA, 4, 1024, 16, 1 + 1},
		{1024, ir.CUDA, 4, 4096, 4, 3 + 1},
		{1024, ir.CUDA, 2, 1024, 32, 1 + 1},
		{1024, ir.CUDA, 2, 4096, 8, 2 + 1},
	}
	kernels := map[int]*ir.Kernel{}
	for _, tg := range []int{256, 1024} {
		kernels[tg] = mustBuild(t, withThreadgroup(centerSpec, tg))
	}
	for _, c := range cases {
		k := kernels[c.tg]
		sizes, grid := eval(t, k, c.b, map[string]int{"a_rows": 10, "b_rows": 3, "cols": c.cols, launch.ElemBytes: c.elemBytes})
		if sizes["rows_per_group"] != c.rpg {
			t.Errorf("%s tg=%d cols=%d (%d-byte elements): rows_per_group %d, want %d", c.b, c.tg, c.cols, c.elemBytes, sizes["rows_per_group"], c.rpg)
		}
		if want := [3]int{c.groups * c.tg, 1, 1}; grid != want {
			t.Errorf("%s tg=%d cols=%d (%d-byte elements): grid %v, want %v", c.b, c.tg, c.cols, c.elemBytes, grid, want)
		}
	}
	k := kernels[256]
	want := "256 * (ceildiv(a_rows, rows_per_group) + ceildiv(b_rows, rows_per_group))"
	if got := k.Launch(ir.Metal).GridStrings()[0]; got != want {
		t.Errorf("grid %q, want %q", got, want)
	}
	if d := k.Launch(ir.Metal).Derived; len(d) != 1 || d[0].Field != "rows_per_group" {
		t.Errorf("derived fields %+v, want rows_per_group", d)
	}
	if _, err := k.Launch(ir.CUDA).Sizes(map[string]int{"a_rows": 1, "b_rows": 1, "cols": 7}); err == nil {
		t.Error("CUDA's rows_per_group evaluated without the element size")
	}
}
