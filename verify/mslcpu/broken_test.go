package mslcpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

// The kernels of testdata/handwritten.metal were written by hand, not by
// kgen. Each broken twin must be caught by the check named in its test; the
// correct kernels must pass every check, so that a catch is not noise.

func handwritten(t *testing.T) []byte {
	t.Helper()
	src, err := os.ReadFile("testdata/handwritten.metal")
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// scaleRun launches one scale kernel over n elements with grid threads.
func scaleRun(t *testing.T, host string, n, grid uint32, san Sanitizer) ([]float32, []float32, error) {
	t.Helper()
	x := make([]float32, n)
	want := make([]float32, n)
	for i := range x {
		x[i] = float32(i%97) - 40.5
		want[i] = 1.5 * x[i]
	}
	out, err := Run(testContext(t), Launch{
		Source: handwritten(t), HostName: host,
		Buffers:     [][]byte{f32Bytes(x), f32Bytes(make([]float32, n)), structBytes(n, 1.5)},
		Grid:        [3]uint32{grid, 1, 1},
		Threadgroup: [3]uint32{256, 1, 1},
		Sanitize:    san,
	})
	if err != nil {
		return nil, want, err
	}
	return bytesF32(out[1]), want, nil
}

func firstDiff(got, want []float32) string {
	for i := range want {
		if !sameFloat(got[i], want[i]) {
			return fmt.Sprintf("y[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	return ""
}

// roundUp is the grid of a launch that rounds up to whole threadgroups, as
// dispatchThreadgroups does: kernels must check bounds themselves.
func roundUp(n, tg uint32) uint32 { return (n + tg - 1) / tg * tg }

// TestHandwrittenCorrect: the correct kernels are right at sizes that are and
// are not multiples of the threadgroup, also under both sanitizers.
func TestHandwrittenCorrect(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	for _, san := range []Sanitizer{NoSanitizer, AddressSanitizer, ThreadSanitizer} {
		if err := SanitizerAvailable(testContext(t), san); err != nil {
			t.Logf("skipping the %s sanitizer: %v", san, err)
			continue
		}
		for _, n := range []uint32{1, 255, 1000, 1024} {
			if san == ThreadSanitizer && n > 255 {
				continue // one OS thread per lane: keep it small
			}
			got, want, err := scaleRun(t, "scale", n, roundUp(n, 256), san)
			if err != nil {
				t.Fatalf("scale n=%d sanitizer %s: %v", n, san, err)
			}
			if d := firstDiff(got, want); d != "" {
				t.Errorf("scale n=%d sanitizer %s: %s", n, san, d)
			}
		}
		for _, host := range []string{"row_sum", "row_max"} {
			for _, order := range []LaneOrder{Forward, Reverse, Shuffled} {
				if err := rowCheck(t, host, order, san); err != nil {
					t.Errorf("%s order %d sanitizer %s: %v", host, order, san, err)
				}
			}
		}
	}
}

const hwRows, hwCols = 3, 1000

// rowCheck runs a row reduction (tg 256) and compares it with float64.
func rowCheck(t *testing.T, host string, order LaneOrder, san Sanitizer) error {
	t.Helper()
	x := make([]float32, hwRows*hwCols)
	sum, mx := make([]float64, hwRows), make([]float64, hwRows)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*0.61)) * 4
		r := i / hwCols
		sum[r] += float64(x[i])
		if i%hwCols == 0 || float64(x[i]) > mx[r] {
			mx[r] = float64(x[i])
		}
	}
	colsBuf := binary.LittleEndian.AppendUint32(nil, hwCols)
	out, err := Run(testContext(t), Launch{
		Source: handwritten(t), HostName: host,
		Buffers:     [][]byte{f32Bytes(x), make([]byte, 4*hwRows), colsBuf},
		Grid:        [3]uint32{hwRows * 256, 1, 1},
		Threadgroup: [3]uint32{256, 1, 1},
		Order:       order,
		Sanitize:    san,
	})
	if err != nil {
		return err
	}
	want := sum
	if host == "row_max" {
		want = mx
	}
	for r, g := range bytesF32(out[1]) {
		if !(math.Abs(float64(g)-want[r]) <= 1e-4*math.Abs(want[r])+1e-4) {
			return fmt.Errorf("row %d: got %v, want %v", r, g, want[r])
		}
	}
	return nil
}

// TestBrokenMissingBarrier: without the first barrier, lanes read partial[]
// slots their owners have not written yet. Threadgroup memory is poisoned
// with NaN before each group, so forward and shuffled lane orders give NaN
// sums; reverse order happens to run every writer first and hides the bug
// (which is why the harness has lane orders); ThreadSanitizer reports the
// race whatever the order.
func TestBrokenMissingBarrier(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	for _, order := range []LaneOrder{Forward, Shuffled} {
		err := rowCheck(t, "row_sum_missing_barrier", order, NoSanitizer)
		if err == nil {
			t.Errorf("order %d: the missing barrier went unnoticed", order)
			continue
		}
		t.Logf("order %d catches it: %v", order, err)
	}
	if err := rowCheck(t, "row_sum_missing_barrier", Reverse, NoSanitizer); err == nil {
		t.Logf("reverse order hides the missing barrier, as expected")
	}
	if err := SanitizerAvailable(testContext(t), ThreadSanitizer); err != nil {
		t.Skipf("thread sanitizer: %v", err)
	}
	err := rowCheck(t, "row_sum_missing_barrier", Reverse, ThreadSanitizer)
	var re *RunError
	if !errors.As(err, &re) || !strings.Contains(re.Message, "data race") || !strings.Contains(re.Message, kernelFile+":") {
		t.Fatalf("ThreadSanitizer: got %v, want a data race report naming a %s line", err, kernelFile)
	}
	t.Logf("ThreadSanitizer catches it:\n%s", re.Message)
}

// TestBrokenOffByOneIndex: reading x[gid + 1] shifts every output. With
// n = 1001 the last lane's read stays inside the 16-byte alignment slack,
// so no fault hides the point: the value comparison alone catches it (with
// n = 1000 the guard page catches it first).
func TestBrokenOffByOneIndex(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	got, want, err := scaleRun(t, "scale_shifted", 1001, 1001, NoSanitizer)
	if err != nil {
		t.Fatal(err)
	}
	d := firstDiff(got, want)
	if d == "" {
		t.Fatal("the shifted index went unnoticed")
	}
	t.Logf("value comparison catches it: %s", d)
	_, _, err = scaleRun(t, "scale_shifted", 1000, 1000, NoSanitizer)
	var re *RunError
	if !errors.As(err, &re) || !strings.Contains(re.Message, "past the end of buffer(0)") {
		t.Errorf("n=1000: got %v, want the guard page to report buffer(0)", err)
	}
}

// TestBrokenBoundsCheck: a kernel without its bounds check (grid rounded up
// to whole threadgroups) runs past the end of its buffers. With the overrun
// beyond the 16-byte alignment slack the guard page catches it without any
// sanitizer; ASan catches every overrun, including the one-element write
// past the end of scale_tail_overrun, whose outputs are all right.
func TestBrokenBoundsCheck(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	_, _, err := scaleRun(t, "scale_unchecked", 1000, roundUp(1000, 256), NoSanitizer)
	var re *RunError
	if !errors.As(err, &re) || !strings.Contains(re.Message, "past the end of buffer(") {
		t.Errorf("guard page: got %v, want a RunError naming the buffer", err)
	} else {
		t.Logf("guard page catches the missing bounds check: %v", re.Message)
	}
	if got, want, err := scaleRun(t, "scale_tail_overrun", 1001, roundUp(1001, 256), NoSanitizer); err == nil && firstDiff(got, want) == "" {
		t.Logf("scale_tail_overrun: outputs right and within the alignment slack: only ASan can see it")
	}

	if err := SanitizerAvailable(testContext(t), AddressSanitizer); err != nil {
		t.Skipf("address sanitizer: %v", err)
	}
	for _, c := range []struct {
		host string
		n    uint32
	}{{"scale_unchecked", 1000}, {"scale_unchecked", 1022}, {"scale_tail_overrun", 1001}} {
		_, _, err := scaleRun(t, c.host, c.n, roundUp(c.n, 256), AddressSanitizer)
		if !errors.As(err, &re) || !strings.Contains(re.Message, "heap-buffer-overflow") ||
			!strings.Contains(re.Message, "outside buffer(") || !strings.Contains(re.Message, kernelFile+":") {
			t.Errorf("ASan %s n=%d: got %v, want a heap-buffer-overflow naming the buffer and a %s line", c.host, c.n, err, kernelFile)
			continue
		}
		t.Logf("ASan %s n=%d:\n%s", c.host, c.n, re.Message)
	}
}
