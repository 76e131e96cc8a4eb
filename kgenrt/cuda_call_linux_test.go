//go:build linux && (amd64 || arm64)

package kgenrt

import (
	"os"
	"testing"

	"github.com/ebitengine/purego"
)

// TestDriverCallFrame calls through driverCall a C-callable function of 11
// integer arguments (cuLaunchKernel's count: 6 in registers, 5 on the
// stack on amd64) and checks each argument arrives in its place and the
// result comes back: driverFrame must match purego's frame.
func TestDriverCallFrame(t *testing.T) {
	var got [11]uintptr
	cb := purego.NewCallback(func(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11 uintptr) uintptr {
		got = [11]uintptr{a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11}
		return 0xC0DE
	})
	f := &driverFrame{fn: cb, a1: 1, a2: 2, a3: 3, a4: 4, a5: 5, a6: 6, a7: 7, a8: 8, a9: 9, a10: 10, a11: 11}
	if r := driverCall(f); r != 0xC0DE {
		t.Fatalf("driverCall returned %#x, want 0xc0de", r)
	}
	for i, v := range got {
		if v != uintptr(i+1) {
			t.Fatalf("argument %d arrived as %d: %v", i+1, v, got)
		}
	}
}

// TestDriverCallAllocatesNothing calls libc's getpid through driverCall:
// the pid comes back, and the call allocates nothing (purego.SyscallN
// allocates twice).
func TestDriverCallAllocatesNothing(t *testing.T) {
	lib, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW)
	if err != nil {
		t.Skip(err)
	}
	sym, err := purego.Dlsym(lib, "getpid")
	if err != nil {
		t.Skip(err)
	}
	f := &driverFrame{fn: sym}
	if pid := driverCall(f); int(pid) != os.Getpid() {
		t.Fatalf("getpid through driverCall: %d, want %d", pid, os.Getpid())
	}
	if n := testing.AllocsPerRun(100, func() { *f = driverFrame{fn: sym}; driverCall(f) }); n != 0 {
		t.Errorf("driverCall allocates %v times per call, want 0", n)
	}
}
