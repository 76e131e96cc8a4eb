package kgenrt

import "sync/atomic"

// metalEmulator is the function SetMetalEmulator installed, or nil.
var metalEmulator atomic.Pointer[func(*Call) error]

// SetMetalEmulator makes the Metal port run each call through run where
// this build has no Metal (off darwin, or without cgo): Ready then
// succeeds and Run hands every launch of a call (each phase of a chain, in
// order) to run, which must leave the outputs in the call's tensors as the
// GPU would. verify/mslcpu.EmulateMetal installs the MSL-on-CPU harness,
// so tests on Linux drive a generated launcher (its checks, args struct,
// strides and grid) into the very kernel source a Mac would compile.
// Encode still needs a real device. nil removes the emulator; the real
// Metal path, where it exists, ignores it.
func SetMetalEmulator(run func(*Call) error) {
	if run == nil {
		metalEmulator.Store(nil)
		return
	}
	metalEmulator.Store(&run)
}

func emulatedMetal() func(*Call) error {
	if p := metalEmulator.Load(); p != nil {
		return *p
	}
	return nil
}
