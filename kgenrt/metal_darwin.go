//go:build darwin && cgo

package kgenrt

/*
#cgo CFLAGS: -fobjc-arc
#cgo LDFLAGS: -framework Metal -framework Foundation -framework CoreFoundation
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

// metalDevice is the process's default Metal device and command queue, with
// the compile caches: one library per kernel descriptor and one pipeline per
// variant key, each built once even under concurrent first use.
type metalDevice struct {
	device, queue unsafe.Pointer
	mu            sync.Mutex
	libraries     map[*Kernel]*compiled
	pipelines     map[string]*compiled
}

// compiled is a cache entry; once guards the build, whose error is kept:
// Metal compile errors are deterministic, so a failed source is not retried.
type compiled struct {
	once       sync.Once
	obj        unsafe.Pointer
	maxThreads int
	err        error
}

var (
	metalOnce sync.Once
	metalDev  *metalDevice
	metalErr  error
)

// defaultMetal opens the default device and its queue once per process.
func defaultMetal() (*metalDevice, error) {
	metalOnce.Do(func() {
		dev, err := result(C.kgen_mtl_device())
		if err != nil {
			metalErr = err
			return
		}
		queue, err := result(C.kgen_mtl_queue(dev))
		if err != nil {
			C.kgen_mtl_release(dev)
			metalErr = err
			return
		}
		metalDev = &metalDevice{device: dev, queue: queue,
			libraries: map[*Kernel]*compiled{}, pipelines: map[string]*compiled{}}
	})
	return metalDev, metalErr
}

// result turns a kgen_result into a handle or a Go error with Metal's text.
func result(r C.kgen_result) (unsafe.Pointer, error) {
	if r.err != nil {
		return nil, errors.New(cstring(r.err))
	}
	return r.obj, nil
}

// cstring copies and frees error text from the Objective-C side.
func cstring(s *C.char) string {
	defer C.free(unsafe.Pointer(s))
	return C.GoString(s)
}

func metalReady() error {
	_, err := defaultMetal()
	return err
}

// entry returns the cache entry of key in m, creating it.
func (d *metalDevice) entry(m map[string]*compiled, key string) *compiled {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := m[key]
	if e == nil {
		e = &compiled{}
		m[key] = e
	}
	return e
}

// library compiles k's whole source once: MSL 3.1, fast math only for
// `math: fast`. The descriptor is validated first, so the source compiled is
// the one its keys were computed from.
func (d *metalDevice) library(k *Kernel) (*compiled, error) {
	d.mu.Lock()
	e := d.libraries[k]
	if e == nil {
		e = &compiled{}
		d.libraries[k] = e
	}
	d.mu.Unlock()
	e.once.Do(func() {
		if e.err = validate(k); e.err != nil {
			return
		}
		src := unsafe.StringData(k.Source)
		fast := C.int(0)
		if k.Math == "fast" {
			fast = 1
		}
		e.obj, e.err = result(C.kgen_mtl_library(d.device, (*C.char)(unsafe.Pointer(src)), C.size_t(len(k.Source)), fast))
		if e.err != nil {
			e.err = fmt.Errorf("kgenrt: kernel %s (%s) did not compile: %w", k.Name, k.Spec, e.err)
		}
	})
	return e, e.err
}

// pipeline returns the compute pipeline of variant v, built once per key.
func (d *metalDevice) pipeline(k *Kernel, v *Variant) (*compiled, error) {
	e := d.entry(d.pipelines, v.Key)
	e.once.Do(func() {
		lib, err := d.library(k)
		if err != nil {
			e.err = err
			return
		}
		name := C.CString(v.HostName)
		defer C.free(unsafe.Pointer(name))
		var maxThreads C.uint
		e.obj, e.err = result(C.kgen_mtl_pipeline(d.device, lib.obj, name, &maxThreads))
		if e.err != nil {
			e.err = fmt.Errorf("kgenrt: kernel %s: pipeline %s: %w", k.Name, v.HostName, e.err)
		}
		e.maxThreads = int(maxThreads)
	})
	return e, e.err
}

// deviceBuffer owns one retained MTLBuffer; the finalizer releases it.
type deviceBuffer struct{ obj unsafe.Pointer }

// newBuffer allocates a shared buffer of n bytes, copying from init when it
// is not nil, and returns it with a Go view of its contents.
func (d *metalDevice) newBuffer(init []byte, n int) (*deviceBuffer, []byte, error) {
	var contents unsafe.Pointer
	var src unsafe.Pointer
	if len(init) > 0 {
		src = unsafe.Pointer(unsafe.SliceData(init))
	}
	obj, err := result(C.kgen_mtl_buffer(d.device, src, C.size_t(n), &contents))
	if err != nil {
		return nil, nil, fmt.Errorf("kgenrt: %d-byte buffer: %w", n, err)
	}
	b := &deviceBuffer{obj: obj}
	runtime.SetFinalizer(b, func(b *deviceBuffer) { C.kgen_mtl_release(b.obj) })
	return b, unsafe.Slice((*byte)(contents), n), nil
}

// NewMetal returns a zeroed tensor in a shared Metal buffer on the default
// device: bound without copies by Run, and required by Encode.
func NewMetal(dt DType, shape ...int) (*Tensor, error) {
	n, err := count(dt, shape)
	if err != nil {
		return nil, err
	}
	d, err := defaultMetal()
	if err != nil {
		return nil, noMetalError{err}
	}
	buf, data, err := d.newBuffer(nil, n*dt.Size())
	if err != nil {
		return nil, err
	}
	return &Tensor{dtype: dt, shape: cloneShape(shape, n), data: data, dev: buf}, nil
}

// MTLBuffer returns the tensor's id<MTLBuffer> (not retained for you), or
// nil for a host tensor, for binding it in your own Metal code.
func (t *Tensor) MTLBuffer() unsafe.Pointer {
	if t.dev == nil {
		return nil
	}
	return t.dev.obj
}
