package mslcpu

import (
	"fmt"
	"math/big"
)

// Metal's launch limits (backend.Table's Metal entry; limits_test.go keeps
// them equal).
const (
	// MaxThreadsPerGroup is Metal's most threads per threadgroup.
	MaxThreadsPerGroup = 1024
	// MaxBindings is Metal's most buffers, and threadgroup memory
	// bindings, per kernel.
	MaxBindings = 31
)

// LaunchError is a launch that Metal or the harness refuses before
// compiling anything: Field names the Launch field at fault.
type LaunchError struct {
	Field   string // "Grid", "Threadgroup", "Buffers", "ThreadgroupMemory", "Aliases", "Source", …
	Message string
}

func (e *LaunchError) Error() string { return e.Message }

func launchErr(field, format string, args ...any) error {
	return &LaunchError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// Validate checks the launch against Metal's limits and the harness's own
// (MaxGridThreads, MaxBufferBytes, ThreadgroupMemoryLimit,
// MaxSourceBytes), without compiling: Run calls it first. Errors are
// *LaunchError.
func (l Launch) Validate() error {
	for _, check := range []func() error{l.checkGroup, l.checkGrid, l.checkBuffers, l.checkThreadgroupMemory, l.checkModes} {
		if err := check(); err != nil {
			return err
		}
	}
	if len(l.Source) > MaxSourceBytes {
		return launchErr("Source", "the source's %d bytes are over the harness's %s", len(l.Source), Bytes(MaxSourceBytes))
	}
	return nil
}

func (l Launch) checkGroup() error {
	lanes := uint64(1)
	for a, n := range l.Threadgroup {
		if n == 0 {
			return launchErr("Threadgroup", "Threadgroup[%d] is 0", a)
		}
		lanes *= uint64(n)
	}
	if lanes > MaxThreadsPerGroup {
		return launchErr("Threadgroup", "a threadgroup of %d threads (%d×%d×%d) exceeds Metal's %d",
			lanes, l.Threadgroup[0], l.Threadgroup[1], l.Threadgroup[2], MaxThreadsPerGroup)
	}
	return nil
}

func (l Launch) checkGrid() error {
	total := new(big.Int).SetUint64(uint64(l.Grid[0]))
	total.Mul(total, new(big.Int).SetUint64(uint64(l.Grid[1])))
	total.Mul(total, new(big.Int).SetUint64(uint64(l.Grid[2])))
	if total.Cmp(new(big.Int).SetUint64(MaxGridThreads)) > 0 {
		return launchErr("Grid", "a grid of %s threads (%d×%d×%d) exceeds the harness's %d (2^32) per launch",
			total, l.Grid[0], l.Grid[1], l.Grid[2], uint64(MaxGridThreads))
	}
	return nil
}

func (l Launch) checkBuffers() error {
	if len(l.Buffers) > MaxBindings {
		return launchErr("Buffers", "%d buffers exceed Metal's %d", len(l.Buffers), MaxBindings)
	}
	var total int64
	for i, b := range l.Buffers {
		if _, alias := l.Aliases[i]; !alias {
			total += int64(len(b))
		}
	}
	if total > MaxBufferBytes {
		return launchErr("Buffers", "the buffers' %d bytes are over the harness's %s", total, Bytes(MaxBufferBytes))
	}
	for i, j := range l.Aliases {
		if i < 0 || j < 0 || i >= len(l.Buffers) || j >= len(l.Buffers) || i == j {
			return launchErr("Aliases", "alias buffer(%d) = buffer(%d): both must be distinct buffers of the launch", i, j)
		}
		if _, chained := l.Aliases[j]; chained {
			return launchErr("Aliases", "alias buffer(%d) = buffer(%d): buffer(%d) is itself an alias", i, j, j)
		}
	}
	return nil
}

func (l Launch) checkThreadgroupMemory() error {
	if len(l.ThreadgroupMemory) > MaxBindings {
		return launchErr("ThreadgroupMemory", "%d threadgroup memory bindings exceed Metal's %d", len(l.ThreadgroupMemory), MaxBindings)
	}
	var total uint64
	for _, n := range l.ThreadgroupMemory {
		total += uint64(n)
	}
	if total > ThreadgroupMemoryLimit {
		return launchErr("ThreadgroupMemory", "%d bytes of threadgroup memory exceed Metal's %s per threadgroup", total, Bytes(ThreadgroupMemoryLimit))
	}
	return nil
}

func (l Launch) checkModes() error {
	switch {
	case l.Order > Shuffled:
		return launchErr("Order", "unknown lane order %d", l.Order)
	case l.MatrixLanes > ScrambledLanes:
		return launchErr("MatrixLanes", "unknown matrix lane map %d", l.MatrixLanes)
	case l.Sanitize > ThreadSanitizer:
		return launchErr("Sanitize", "unknown sanitizer %d", l.Sanitize)
	}
	return nil
}
