package mslcpu

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	src, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// lineOfText returns the 1-based line of the first occurrence of text.
func lineOfText(t *testing.T, src []byte, text string) int {
	t.Helper()
	i := bytes.Index(src, []byte(text))
	if i < 0 {
		t.Fatalf("%q not in the source", text)
	}
	return bytes.Count(src[:i], []byte("\n")) + 1
}

// mmInputs are A (m×k) and B (k×n) with small integers and quarters, so
// that every product and partial sum is exact in half and float alike:
// the kernel's results must equal the float64 reference exactly.
func mmInputs(m, n, k int) (a, b []float32, want []float64) {
	a, b = make([]float32, m*k), make([]float32, k*n)
	for i := range a {
		a[i] = float32((i*7)%9-4) / 4
	}
	for i := range b {
		b[i] = float32((i*5)%11 - 5)
	}
	want = make([]float64, m*n)
	for r := 0; r < m; r++ {
		for c := 0; c < n; c++ {
			s := 0.0
			if r%8 == c%8 { // each tile starts from the diagonal constructor
				s = 0.5
			}
			for j := 0; j < k; j++ {
				s += float64(a[r*k+j]) * float64(b[j*n+c])
			}
			want[r*n+c] = s
		}
	}
	return a, b, want
}

func runMM(t *testing.T, d dtype, lanes MatrixLaneMap, order LaneOrder) ([]float32, []float64) {
	t.Helper()
	const m, n, k = 16, 32, 24
	a, b, want := mmInputs(m, n, k)
	args := append(append(append(u32Bytes(m), u32Bytes(n)...), u32Bytes(k)...), f32Bytes([]float32{0.5})...)
	out, err := Run(testContext(t), Launch{
		Source:      readTestdata(t, "simdgroup_matrix.metal"),
		HostName:    "mm_" + d.suffix,
		Buffers:     [][]byte{d.encode(a), d.encode(b), make([]byte, 4*m*n), args},
		Grid:        [3]uint32{n / 16 * 64, m / 8, 1},
		Threadgroup: [3]uint32{64, 1, 1},
		Order:       order,
		MatrixLanes: lanes,
	})
	if err != nil {
		t.Fatalf("%s lanes %d order %d: %v", d.suffix, lanes, order, err)
	}
	return bytesF32(out[2]), want
}

func u32Bytes(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }

// TestSimdgroupMatrixMatmul: a tiled matmul (device and threadgroup loads,
// origins, strides, the diagonal constructor, multiply_accumulate, store)
// equals the float64 product exactly, in float and half, under Apple's
// fragment map and a scrambled one, lanes forward and shuffled.
func TestSimdgroupMatrixMatmul(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	for _, d := range dtypes[:2] {
		for _, lanes := range []MatrixLaneMap{AppleLanes, ScrambledLanes} {
			for _, order := range []LaneOrder{Forward, Shuffled} {
				got, want := runMM(t, d, lanes, order)
				for i := range want {
					if float64(got[i]) != want[i] {
						t.Fatalf("%s lanes %d order %d: C[%d,%d] = %v, want %v", d.suffix, lanes, order, i/32, i%32, got[i], want[i])
					}
				}
			}
		}
	}
}

func runMatrixKernel(t *testing.T, host string, lanes MatrixLaneMap, a []float32) ([]float32, error) {
	t.Helper()
	out, err := Run(testContext(t), Launch{
		Source:      readTestdata(t, "simdgroup_matrix.metal"),
		HostName:    host,
		Buffers:     [][]byte{f32Bytes(a), make([]byte, 4*64)},
		Grid:        [3]uint32{32, 1, 1},
		Threadgroup: [3]uint32{32, 1, 1},
		MatrixLanes: lanes,
	})
	if err != nil {
		return nil, err
	}
	return bytesF32(out[1]), nil
}

// TestSimdgroupMatrixTranspose: transposed load and store, simdgroup_multiply
// and make_filled_simdgroup_matrix, against a float64 evaluation.
func TestSimdgroupMatrixTranspose(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	a := make([]float32, 64)
	for i := range a {
		a[i] = float32(i%13) - 6
	}
	// R = A^T * ones: R[r][c] = sum_k A^T[r][k] = sum_k A[k][r]; stored
	// transposed, c[x*8 + y] = R[y][x], i.e. c[i] = colsum(A, i%8).
	for _, lanes := range []MatrixLaneMap{AppleLanes, ScrambledLanes} {
		got, err := runMatrixKernel(t, "mm_transpose", lanes, a)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			want := 0.0
			for k := 0; k < 8; k++ {
				want += float64(a[k*8+i%8])
			}
			if float64(got[i]) != want {
				t.Fatalf("lanes %d: c[%d] = %v, want %v", lanes, i, got[i], want)
			}
		}
	}
}

// TestSimdgroupMatrixLaneMapMatters: a kernel that assumes Apple's map
// through thread_elements() is right under AppleLanes and wrong under
// ScrambledLanes — the scrambled map is not vacuous.
func TestSimdgroupMatrixLaneMapMatters(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	a := make([]float32, 64)
	for i := range a {
		a[i] = float32(i)
	}
	apple, err := runMatrixKernel(t, "mm_lanemap", AppleLanes, a)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(apple) != fmt.Sprint(a) {
		t.Fatalf("Apple map: got %v, want %v", apple, a)
	}
	scrambled, err := runMatrixKernel(t, "mm_lanemap", ScrambledLanes, a)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(scrambled) == fmt.Sprint(a) {
		t.Fatal("the scrambled map gave Apple's layout")
	}
}

// TestSimdgroupMatrixDiagnostics: a lane missing from a matrix operation,
// non-uniform arguments and a partial simdgroup are errors naming the line.
func TestSimdgroupMatrixDiagnostics(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	src := readTestdata(t, "simdgroup_matrix.metal")
	mulLine := lineOfText(t, src, "simdgroup_multiply(m, m, m);")
	loadLine := lineOfText(t, src, "simdgroup_load(m, a + lane);")
	cases := []struct {
		host string
		tg   uint32
		want string
	}{
		{"mm_divergent", 32, fmt.Sprintf("simdgroup_multiply_accumulate on line %d: simdgroup 0: lane 16 (and 15 more) did not reach it", mulLine)},
		{"mm_nonuniform", 32, fmt.Sprintf("simdgroup_load on line %d: simdgroup 0: lanes 0 and 1 pass different arguments", loadLine)},
		{"mm_transpose", 24, "simdgroup 0 has only 24 lanes"},
	}
	for _, c := range cases {
		_, err := Run(testContext(t), Launch{
			Source:      src,
			HostName:    c.host,
			Buffers:     [][]byte{make([]byte, 4*128), make([]byte, 4*64)},
			Grid:        [3]uint32{c.tg, 1, 1},
			Threadgroup: [3]uint32{c.tg, 1, 1},
		})
		var re *RunError
		if !errors.As(err, &re) || !strings.Contains(re.Message, c.want) {
			t.Errorf("%s: got %v, want a *RunError mentioning %q", c.host, err, c.want)
		}
	}
}

// TestSimdCallOrdersOnlyItsSimdgroup: a simdgroup_matrix operation waits
// for the 32 lanes of its simdgroup, not for the threadgroup, so a read of
// another simdgroup's threadgroup-memory write needs a barrier. Without it
// the harness runs a simdgroup ahead and the read sees the unwritten value
// in every lane order; with it the result is exact.
func TestSimdCallOrdersOnlyItsSimdgroup(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	a := make([]float32, 64)
	for i := range a {
		a[i] = float32(i + 1)
	}
	want := make([]float32, 64)
	for i := range want {
		want[i] = a[63-i]
	}
	for _, order := range []LaneOrder{Forward, Reverse, Shuffled} {
		for _, barrier := range []uint32{0, 1} {
			out, err := Run(testContext(t), Launch{
				Source:      readTestdata(t, "simdgroup_matrix.metal"),
				HostName:    "mm_crosssimd",
				Buffers:     [][]byte{f32Bytes(a), make([]byte, 4*64), u32Bytes(barrier)},
				Grid:        [3]uint32{64, 1, 1},
				Threadgroup: [3]uint32{64, 1, 1},
				Order:       order,
			})
			if err != nil {
				t.Fatalf("order %d barrier %d: %v", order, barrier, err)
			}
			same := fmt.Sprint(bytesF32(out[1])) == fmt.Sprint(want)
			if barrier == 1 && !same {
				t.Errorf("order %d: with the barrier got %v, want %v", order, bytesF32(out[1]), want)
			}
			if barrier == 0 && same {
				t.Errorf("order %d: without the barrier the read still saw the other simdgroup's write", order)
			}
		}
	}
}
