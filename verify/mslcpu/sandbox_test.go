package mslcpu

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// sandboxSource has a kernel that finishes (run first, so that the hang
// tests find the file's binary built and spend their short deadline
// running), two that never do, and a threadgroup overrun.
const sandboxSource = `#include <metal_stdlib>
using namespace metal;

kernel void fine(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[i] = i;
}

kernel void spin(device atomic_uint* flag [[buffer(0)]]) {
    while (atomic_load_explicit(flag, memory_order_relaxed) == 0) {
    }
}

kernel void stuck(device uint* out [[buffer(0)]], uint lid [[thread_position_in_threadgroup]]) {
    threadgroup uint flag[1];
    if (lid == 0) {
        flag[0] = 0;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lid == 0) {
        while (((volatile threadgroup uint*)flag)[0] == 0) {
        }
    } else {
        flag[0] = 1;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[lid] = 1;
}

kernel void overrun(device float* out [[buffer(0)]], uint lid [[thread_position_in_threadgroup]]) {
    threadgroup float tile[64];
    threadgroup float next[64];
    next[lid] = 1.0f;
    tile[lid + 4096] = 2.0f;
    out[lid] = tile[lid] + next[lid];
}
`

func sandboxLaunch(host string, buf int) Launch {
	return Launch{Source: []byte(sandboxSource), HostName: host, Buffers: [][]byte{make([]byte, buf)},
		Grid: [3]uint32{2, 1, 1}, Threadgroup: [3]uint32{2, 1, 1}}
}

// TestHangEndsAtDeadline: a kernel spinning on an atomic, and one whose
// lane waits for a lane that runs only after it (fibers switch at
// barriers), are killed when the context's deadline passes.
func TestHangEndsAtDeadline(t *testing.T) {
	needCompiler(t)
	if _, err := Run(testContext(t), sandboxLaunch("fine", 8)); err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"spin", "stuck"} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		start := time.Now()
		_, err := Run(ctx, sandboxLaunch(host, 8))
		cancel()
		var se *StoppedError
		if !errors.As(err, &se) || !errors.Is(err, context.DeadlineExceeded) || se.What != "running "+host {
			t.Errorf("%s: got %v, want a StoppedError for running %s, wrapping the deadline", host, err, host)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: stopped after %v; the deadline was 2s", host, d)
		}
	}
}

// TestThreadgroupOverrunCaught: a write 16 KiB past a threadgroup array
// hits its guard zone and is reported with the array's name, in plain
// builds and under ASan.
func TestThreadgroupOverrunCaught(t *testing.T) {
	needCompiler(t)
	for _, s := range []Sanitizer{NoSanitizer, AddressSanitizer} {
		if err := SanitizerAvailable(testContext(t), s); err != nil {
			t.Logf("%s: %v", s, err)
			continue
		}
		l := sandboxLaunch("overrun", 256)
		l.Sanitize = s
		_, err := Run(testContext(t), l)
		var re *RunError
		want := "past the end of threadgroup array tile (kernel.metal:30, 256 bytes), at byte 16384"
		if !errors.As(err, &re) || !strings.Contains(re.Message, want) {
			t.Errorf("%s: got %v, want a RunError with %q", s, err, want)
		}
	}
}

// TestThreadgroupMemoryLimit: one array over Metal's 32 KiB is a compile
// error at its line; arrays and [[threadgroup(i)]] bindings that are each
// under it but together over it fail when the kernel runs, listing them.
func TestThreadgroupMemoryLimit(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	huge := "#include <metal_stdlib>\nkernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_threadgroup]]) {\n" +
		"    threadgroup float big[1u << 30];\n    big[i] = 1.0f;\n    o[i] = big[i];\n}\n"
	_, err := Run(testContext(t), Launch{Source: []byte(huge), HostName: "k", Buffers: [][]byte{make([]byte, 4)},
		Grid: [3]uint32{1, 1, 1}, Threadgroup: [3]uint32{1, 1, 1}})
	var ce *CompileError
	if !errors.As(err, &ce) || !strings.Contains(ce.Diagnostics, "kernel.metal:3:") ||
		!strings.Contains(ce.Diagnostics, "threadgroup variable big is over Metal's 32 KiB") {
		t.Errorf("a 4 GiB threadgroup array: got %v, want a compile error at kernel.metal:3", err)
	}
	sum := "#include <metal_stdlib>\nkernel void k(device float* o [[buffer(0)]], threadgroup float* p [[threadgroup(0)]], uint i [[thread_position_in_threadgroup]]) {\n" +
		"    threadgroup float a[4096], b[2048];\n    a[i] = 1.0f;\n    b[i] = 2.0f;\n    p[i] = 3.0f;\n    o[i] = a[i] + b[i] + p[i];\n}\n"
	l := Launch{Source: []byte(sum), HostName: "k", Buffers: [][]byte{make([]byte, 4)},
		Grid: [3]uint32{1, 1, 1}, Threadgroup: [3]uint32{1, 1, 1}, ThreadgroupMemory: []uint32{8192}}
	if _, err := Run(testContext(t), l); err != nil {
		t.Errorf("32 KiB in all: %v", err)
	}
	l.ThreadgroupMemory[0] = 8208
	_, err = Run(testContext(t), l)
	want := "threadgroup memory: 32784 bytes in all, over Metal's 32768 per threadgroup: [[threadgroup(0)]] (8208 bytes), threadgroup array a (kernel.metal:3, 16384 bytes), threadgroup array b (kernel.metal:3, 8192 bytes)"
	var re *RunError
	if !errors.As(err, &re) || !strings.Contains(re.Message, want) {
		t.Errorf("32 KiB + 16 bytes: got %v, want %q", err, want)
	}
}

// TestPreprocessorBombStopped: a macro that doubles thirty times (2^31
// tokens) is stopped at MaxPreprocessedBytes, long before it would fill
// memory.
func TestPreprocessorBombStopped(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	var b strings.Builder
	b.WriteString("#include <metal_stdlib>\n#define A0 x x\n")
	for i := 1; i <= 30; i++ {
		b.WriteString(fmt.Sprintf("#define A%d A%d A%d\n", i, i-1, i-1))
	}
	b.WriteString("kernel void k(device float* o [[buffer(0)]]) { A30; }\n")
	start := time.Now()
	_, err := Run(testContext(t), Launch{Source: []byte(b.String()), HostName: "k", Buffers: [][]byte{make([]byte, 4)},
		Grid: [3]uint32{1, 1, 1}, Threadgroup: [3]uint32{1, 1, 1}})
	var le *LimitError
	if !errors.As(err, &le) || !strings.Contains(le.Message, "preprocessed source is over 32 MiB") {
		t.Errorf("got %v, want a LimitError for the preprocessed source", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("took %v", d)
	}
}

// TestChildLimits: a kernel that reaches for the host (C declarations are
// accepted outside --strict) sees no variable of ours but PATH, gets no
// 5 GiB allocation, and cannot flood our memory through stdout.
func TestChildLimits(t *testing.T) {
	needCompiler(t)
	t.Setenv("KGEN_TEST_SECRET", "hunter2")
	src := `#include <metal_stdlib>
extern "C" void* malloc(unsigned long);
extern "C" char* getenv(const char*);
extern "C" long write(int, const void*, unsigned long);
kernel void probe(device ulong* out [[buffer(0)]]) {
    out[0] = (ulong)malloc(5ul << 30);
    out[1] = getenv("KGEN_TEST_SECRET") != nullptr;
    out[2] = getenv("HOME") != nullptr;
    out[3] = getenv("PATH") != nullptr;
}
kernel void flood(device uchar* buf [[buffer(0)]]) {
    for (int i = 0; i < 1024; ++i) {
        write(1, buf, 1 << 16);
    }
}
`
	l := Launch{Source: []byte(src), HostName: "probe", Buffers: [][]byte{make([]byte, 32)},
		Grid: [3]uint32{1, 1, 1}, Threadgroup: [3]uint32{1, 1, 1}}
	got, err := Run(testContext(t), l)
	if err != nil {
		t.Fatal(err)
	}
	if v := bytesU64(got[0]); v[0] != 0 || v[1] != 0 || v[2] != 0 || v[3] != 1 {
		t.Errorf("malloc(5 GiB), $KGEN_TEST_SECRET, $HOME, $PATH = %v; want 0 (refused), 0, 0, 1", v)
	}
	l.HostName, l.Buffers = "flood", [][]byte{make([]byte, 1<<16)}
	_, err = Run(testContext(t), l)
	var le *LimitError
	if !errors.As(err, &le) || !strings.Contains(le.Message, "wrote more than its buffers") {
		t.Errorf("flood: got %v, want a LimitError", err)
	}
}

func bytesU64(b []byte) []uint64 {
	v := make([]uint64, len(b)/8)
	for i := range v {
		for k := 7; k >= 0; k-- {
			v[i] = v[i]<<8 | uint64(b[8*i+k])
		}
	}
	return v
}

// TestReadingStopsAtDeadline: the harness's own reading of a source (which
// a crafted source can make slow) ends with the context too.
func TestReadingStopsAtDeadline(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := within(ctx, "reading the source", func() (int, error) {
		time.Sleep(time.Minute)
		return 0, nil
	})
	var se *StoppedError
	if !errors.As(err, &se) || se.What != "reading the source" || !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want a StoppedError for reading the source", err)
	}
}
