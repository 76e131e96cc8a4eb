//go:build darwin && cgo

package kgenrt

/*
#include <stdlib.h>
#include "metal_darwin.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// CommandBuffer is a Metal command buffer that launches can be encoded into
// and that the caller commits: for batching several launches into one
// submission.
type CommandBuffer struct {
	mu        sync.Mutex
	obj       unsafe.Pointer
	committed bool
	keep      []*Tensor // alive until Wait: their Go views must outlive the GPU work
}

// NewCommandBuffer returns a command buffer on the default device's queue.
// Without a Metal device, errors.Is(err, ErrNoPort) holds.
func NewCommandBuffer() (*CommandBuffer, error) {
	d, err := defaultMetal()
	if err != nil {
		return nil, noMetalError{err}
	}
	obj, err := result(C.kgen_mtl_command_buffer(d.queue))
	if err != nil {
		return nil, err
	}
	return wrapCommandBuffer(obj), nil
}

// CommandBufferFromMTL wraps the caller's own id<MTLCommandBuffer> (it is
// retained, not copied). It must come from a queue of the default device, and
// no other encoder may be open on it while kgen encodes.
func CommandBufferFromMTL(p unsafe.Pointer) (*CommandBuffer, error) {
	if p == nil {
		return nil, errors.New("kgenrt: CommandBufferFromMTL: nil command buffer")
	}
	if _, err := defaultMetal(); err != nil {
		return nil, err
	}
	C.kgen_mtl_retain(p)
	return wrapCommandBuffer(p), nil
}

func wrapCommandBuffer(obj unsafe.Pointer) *CommandBuffer {
	cb := &CommandBuffer{obj: obj}
	runtime.SetFinalizer(cb, func(cb *CommandBuffer) { C.kgen_mtl_release(cb.obj) })
	return cb
}

// Backend is Metal.
func (cb *CommandBuffer) Backend() Backend { return Metal }

// Commit submits everything encoded so far; encode nothing after it.
func (cb *CommandBuffer) Commit() error {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if cb.committed {
		return errors.New("kgenrt: command buffer committed twice")
	}
	cb.committed = true
	C.kgen_mtl_commit(cb.obj)
	return nil
}

// Wait blocks until the GPU has finished the committed work and returns
// Metal's error text if it failed.
func (cb *CommandBuffer) Wait() error {
	if msg := C.kgen_mtl_wait(cb.obj); msg != nil {
		return fmt.Errorf("kgenrt: Metal: %s", cstring(msg))
	}
	cb.mu.Lock()
	cb.keep = nil
	cb.mu.Unlock()
	return nil
}

func metalEncode(cb *CommandBuffer, c *Call) error {
	d, err := defaultMetal()
	if err != nil {
		return err
	}
	bufs := make([]unsafe.Pointer, len(c.Tensors))
	offs := make([]C.size_t, len(c.Tensors))
	for i, t := range c.Tensors {
		bufs[i], offs[i] = t.dev.obj, C.size_t(t.offset*t.dtype.Size()) // a view binds at its byte offset
	}
	if err := d.encode(cb, c, bufs, offs); err != nil {
		return err
	}
	cb.mu.Lock()
	cb.keep = append(cb.keep, c.Tensors...)
	cb.mu.Unlock()
	return nil
}

// metalRun stages host tensors in temporary shared buffers, encodes one
// command buffer, waits, and copies host outputs back.
func metalRun(c *Call) error {
	d, err := defaultMetal()
	if err != nil {
		return err
	}
	plan := stages(c)
	bufs := make([]unsafe.Pointer, len(plan))
	offs := make([]C.size_t, len(plan)) // a Metal view binds at its byte offset; a staged span at 0
	views := make([][]byte, len(plan))
	var temps []*deviceBuffer
	for i, s := range plan {
		switch {
		case s.OnDevice:
			bufs[i], offs[i] = s.Tensor.dev.obj, C.size_t(s.Tensor.offset*s.Tensor.dtype.Size())
		case s.SameAs >= 0:
			bufs[i], views[i] = bufs[s.SameAs], views[s.SameAs]
		default:
			var init []byte
			if s.CopyIn {
				init = s.Tensor.data
			}
			b, view, err := d.newBuffer(init, len(s.Tensor.data))
			if err != nil {
				return err
			}
			temps = append(temps, b)
			bufs[i], views[i] = b.obj, view
		}
	}
	cb, err := NewCommandBuffer()
	if err != nil {
		return err
	}
	if err := d.encode(cb, c, bufs, offs); err != nil {
		return err
	}
	if err := cb.Commit(); err != nil {
		return err
	}
	if err := cb.Wait(); err != nil {
		return err
	}
	for i, s := range plan {
		if s.CopyOut {
			s.Tensor.copyElems(s.Tensor.data, views[i]) // a strided view's gaps keep their bytes
		}
	}
	runtime.KeepAlive(temps)
	runtime.KeepAlive(c)
	return nil
}

// encode adds one dispatch of c to cb: its pipeline, bufs at the bindings'
// indices and offs (bytes: a view's offset into its buffer), the args struct
// at the args binding's index.
func (d *metalDevice) encode(cb *CommandBuffer, c *Call, bufs []unsafe.Pointer, offs []C.size_t) error {
	p, err := d.pipeline(c.Kernel, c.Variant)
	if err != nil {
		return err
	}
	if err := checkDispatch(c, p.maxThreads); err != nil {
		return err
	}
	indices := make([]C.uint, len(bufs))
	for i, b := range c.Kernel.Tensors() {
		indices[i] = C.uint(b.Index)
	}
	var grid, tg [3]C.uint
	for i := range grid {
		grid[i], tg[i] = C.uint(c.Grid[i]), C.uint(c.Threadgroup[i])
	}
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if cb.committed {
		return errors.New("kgenrt: encode after Commit")
	}
	msg := C.kgen_mtl_encode(cb.obj, p.obj, (*unsafe.Pointer)(unsafe.Pointer(&bufs[0])), &offs[0], &indices[0], C.int(len(bufs)),
		unsafe.Pointer(&c.Args[0]), C.size_t(len(c.Args)), C.uint(c.Kernel.ArgsBinding().Index), &grid[0], &tg[0])
	if msg != nil {
		return fmt.Errorf("kgenrt: kernel %s: %s", c.Kernel.Name, cstring(msg))
	}
	return nil
}
