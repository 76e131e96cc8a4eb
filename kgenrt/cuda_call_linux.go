//go:build linux && (amd64 || arm64)

package kgenrt

import (
	"unsafe"

	_ "github.com/ebitengine/purego" // the trampoline below is purego's
)

// driverCall is the launch path's way into the CUDA driver: the same
// trampoline and runtime entry that purego.SyscallN uses (purego's
// syscall15X through runtime.cgocall), but on a caller-owned frame, where
// SyscallN heap-allocates its frame and its variadic arguments on every
// call (2 allocations, 304 B). The launch keeps its frame in the pooled
// launchBuf, so a launch allocates nothing and pays one cgocall per driver
// call. TestDriverCallFrame calls libc through it, so a purego upgrade that
// changed the frame or the trampoline's name fails there (or at link).

// driverFrame mirrors purego's syscall15Args (v0.10, syscall.go): the C
// function, up to 15 integer arguments (a1..a15; a1..a3 hold r1, r2 and
// errno afterwards), the float registers, arm64's r8. The trampoline reads
// integer and float registers from it; driver calls take no floats, and
// purego copies a1..a8 into f1..f8 the same way.
type driverFrame struct {
	fn, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15 uintptr
	f1, f2, f3, f4, f5, f6, f7, f8                                       uintptr
	arm64R8                                                              uintptr
}

//go:linkname runtimeCgocall runtime.cgocall
func runtimeCgocall(fn uintptr, arg unsafe.Pointer) int32

//go:linkname puregoSyscall15X github.com/ebitengine/purego.syscall15XABI0
var puregoSyscall15X uintptr

// driverCall calls f.fn with f's integer arguments and returns its result.
// f must be heap memory that stays reachable for the call (launchBuf's),
// as must everything its arguments point at.
func driverCall(f *driverFrame) uintptr {
	f.f1, f.f2, f.f3, f.f4, f.f5, f.f6, f.f7, f.f8 = f.a1, f.a2, f.a3, f.a4, f.a5, f.a6, f.a7, f.a8
	runtimeCgocall(puregoSyscall15X, unsafe.Pointer(f))
	return f.a1
}
