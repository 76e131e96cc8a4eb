//go:build !(darwin && cgo)

package kgenrt

import (
	"fmt"
	"runtime"
	"unsafe"
)

// errNoMetal is why the Metal port cannot run in this build.
var errNoMetal = func() error {
	if runtime.GOOS == "darwin" {
		return fmt.Errorf("kgenrt was built without cgo (CGO_ENABLED=0), and its Metal path needs cgo")
	}
	return fmt.Errorf("Metal needs darwin; this is %s/%s", runtime.GOOS, runtime.GOARCH)
}()

// deviceBuffer is never made in this build.
type deviceBuffer struct{}

// CommandBuffer is a Metal command buffer; this build cannot make one.
type CommandBuffer struct{}

// NewCommandBuffer fails in this build (Metal needs darwin and cgo) with an
// error that errors.Is(err, ErrNoPort) recognises.
func NewCommandBuffer() (*CommandBuffer, error) { return nil, noMetalError{errNoMetal} }

// CommandBufferFromMTL fails in this build, as NewCommandBuffer does.
func CommandBufferFromMTL(unsafe.Pointer) (*CommandBuffer, error) {
	return nil, noMetalError{errNoMetal}
}

// Backend is Metal.
func (cb *CommandBuffer) Backend() Backend { return Metal }

// Commit fails in this build.
func (cb *CommandBuffer) Commit() error { return errNoMetal }

// Wait fails in this build.
func (cb *CommandBuffer) Wait() error { return errNoMetal }

// NewMetal fails in this build, as NewCommandBuffer does.
func NewMetal(dt DType, shape ...int) (*Tensor, error) { return nil, noMetalError{errNoMetal} }

// MTLBuffer is nil in this build.
func (t *Tensor) MTLBuffer() unsafe.Pointer { return nil }

func metalReady() error {
	if emulatedMetal() != nil {
		return nil
	}
	return errNoMetal
}

func metalRun(c *Call) error {
	if run := emulatedMetal(); run != nil {
		return run(c)
	}
	return errNoMetal
}

func metalEncode(*CommandBuffer, *Call) error { return errNoMetal }
