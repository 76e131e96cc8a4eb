package mslcpu

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// rowsumSource is a row reduction in the shape kgen's reductions will take:
// one threadgroup per row, simd_sum within simdgroups, a kernel-scope
// threadgroup array and a barrier between the two stages.
const rowsumSource = `#include <metal_stdlib>
using namespace metal;
struct rowsum_args {
    uint cols;
    float scale;
};
template <typename T>
kernel void rowsum(
    device const T* x [[buffer(0)]],
    device float* y [[buffer(1)]],
    constant rowsum_args& args [[buffer(2)]],
    uint3 tg [[threadgroup_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint3 tpg [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]])
{
    threadgroup float partial[32];
    const uint row = tg.x;
    float acc = 0.0f;
    for (uint c = lid; c < args.cols; c += tpg.x) {
        acc += float(x[row * args.cols + c]);
    }
    acc = simd_sum(acc);
    if (lane == 0) {
        partial[sg] = acc;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0) {
        const uint nsg = (tpg.x + 31u) / 32u;
        float v = lane < nsg ? partial[lane] : 0.0f;
        v = simd_sum(v);
        if (lane == 0) {
            y[row] = v * args.scale;
        }
    }
}
template [[host_name("rowsum_f32")]] [[kernel]] decltype(rowsum<float>) rowsum<float>;
template [[host_name("rowsum_f16")]] [[kernel]] decltype(rowsum<half>) rowsum<half>;
`

const rowsumRows, rowsumCols = 6, 1000

// runRowsum returns the row sums of a fixed input computed by the kernel.
func runRowsum(t *testing.T, src string, tg uint32, order LaneOrder) ([]float32, []float64, error) {
	t.Helper()
	x := make([]float32, rowsumRows*rowsumCols)
	want := make([]float64, rowsumRows)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*0.37) * 3)
		want[i/rowsumCols] += float64(x[i]) * 0.5
	}
	out, err := Run(testContext(t), Launch{
		Source:      []byte(src),
		HostName:    "rowsum_f32",
		Buffers:     [][]byte{f32Bytes(x), make([]byte, 4*rowsumRows), structBytes(rowsumCols, 0.5)},
		Grid:        [3]uint32{rowsumRows * tg, 1, 1},
		Threadgroup: [3]uint32{tg, 1, 1},
		Order:       order,
	})
	if err != nil {
		return nil, nil, err
	}
	return bytesF32(out[1]), want, nil
}

func rowsumWrong(got []float32, want []float64) string {
	for i := range want {
		if g := float64(got[i]); !(math.Abs(g-want[i]) <= 1e-5*math.Abs(want[i])+1e-5) {
			return fmt.Sprintf("row %d: got %v, want %v", i, got[i], want[i])
		}
	}
	return ""
}

// TestRunFibers runs the reduction under fiber scheduling with full and
// partial simdgroups (tg 80 = two full simdgroups and one of 16 lanes) in
// every lane order.
func TestRunFibers(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	for _, tg := range []uint32{256, 80, 32, 1} {
		for _, order := range []LaneOrder{Forward, Reverse, Shuffled} {
			got, want, err := runRowsum(t, rowsumSource, tg, order)
			if err != nil {
				t.Fatalf("tg %d order %d: %v", tg, order, err)
			}
			if msg := rowsumWrong(got, want); msg != "" {
				t.Errorf("tg %d order %d: %s", tg, order, msg)
			}
		}
	}
}

// TestRunFindsMissingBarrier: without the barrier, the second stage reads
// partial[] before other simdgroups wrote it. Threadgroup memory starts as
// NaN, so forward order exposes the race (reverse order happens to hide it,
// which is why Launch.Order exists).
func TestRunFindsMissingBarrier(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	src := strings.Replace(rowsumSource, "threadgroup_barrier(mem_flags::mem_threadgroup);", "", 1)
	detected := 0
	for _, order := range []LaneOrder{Forward, Reverse, Shuffled} {
		got, want, err := runRowsum(t, src, 256, order)
		if err != nil {
			t.Fatalf("order %d: %v", order, err)
		}
		if msg := rowsumWrong(got, want); msg != "" {
			t.Logf("order %d detects the race: %s", order, msg)
			detected++
		}
	}
	if detected == 0 {
		t.Fatal("no lane order exposed the missing barrier")
	}
}

// TestRunDiagnostics: kernels that are wrong in ways values cannot show
// must fail with a message that says what went wrong.
func TestRunDiagnostics(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	cases := []struct {
		name, from, to, want string
	}{
		{"early return before barrier", "float acc = 0.0f;", "if (lid >= 100u) { return; }\n    float acc = 0.0f;",
			"returned while others wait at the threadgroup_barrier"},
		{"divergent barriers", "threadgroup_barrier(mem_flags::mem_threadgroup);",
			"if (lid < 64u) {\n        threadgroup_barrier(mem_flags::mem_threadgroup);\n    } else {\n        threadgroup_barrier(mem_flags::mem_threadgroup);\n    }",
			"different threadgroup_barrier calls"},
		{"read past the end", "acc += float(x[row * args.cols + c]);", "acc += float(x[row * args.cols + c + 4096u]);",
			"past the end of buffer(0)"},
	}
	for _, c := range cases {
		src := strings.Replace(rowsumSource, c.from, c.to, 1)
		if src == rowsumSource {
			t.Fatalf("%s: edit did not apply", c.name)
		}
		_, _, err := runRowsum(t, src, 256, Forward)
		var re *RunError
		if !errors.As(err, &re) || !strings.Contains(re.Message, c.want) {
			t.Errorf("%s: got %v, want a *RunError mentioning %q", c.name, err, c.want)
			continue
		}
		t.Logf("%s: %v", c.name, err)
	}
}

// TestRunRejectsBadLaunch: launch mistakes are reported before or instead
// of running.
func TestRunRejectsBadLaunch(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	ok := Launch{
		Source:      []byte(clampmulSource),
		HostName:    "clampmul_f32",
		Buffers:     [][]byte{make([]byte, 16), make([]byte, 16), make([]byte, 16), structBytes(4, 1)},
		Grid:        [3]uint32{1, 1, 1},
		Threadgroup: [3]uint32{32, 1, 1},
	}
	cases := []struct {
		name string
		edit func(*Launch)
		want string
	}{
		{"unknown host name", func(l *Launch) { l.HostName = "clampmul_f64" }, "clampmul_f32, clampmul_f16, clampmul_bf16"},
		{"missing buffer", func(l *Launch) { l.Buffers = l.Buffers[:3] }, "binds buffer(3)"},
		{"short struct", func(l *Launch) { l.Buffers[3] = make([]byte, 4) }, "holds 4 bytes"},
		{"threadgroup too large", func(l *Launch) { l.Threadgroup = [3]uint32{64, 32, 1} }, "exceeds"},
		{"zero threadgroup", func(l *Launch) { l.Threadgroup = [3]uint32{0, 1, 1} }, "is 0"},
	}
	for _, c := range cases {
		l := ok
		l.Buffers = append([][]byte{}, ok.Buffers...)
		c.edit(&l)
		_, err := Run(testContext(t), l)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error mentioning %q", c.name, err, c.want)
		}
	}
	if _, err := Run(testContext(t), ok); err != nil {
		t.Errorf("the unedited launch failed: %v", err)
	}
}
