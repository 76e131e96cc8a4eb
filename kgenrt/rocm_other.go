//go:build !(linux && (amd64 || arm64))

package kgenrt

import (
	"fmt"
	"runtime"
)

// HIP's runtime is opened only on linux/amd64 and linux/arm64 (purego's
// cgo-free targets); elsewhere the ROCm port reports why it cannot run.

func rocmReady() error {
	return fmt.Errorf("kgenrt's ROCm path runs on linux/amd64 and linux/arm64; this is %s/%s", runtime.GOOS, runtime.GOARCH)
}

// rocmDriver is the ROCm row of the driver table: every call refuses.
var rocmDriver = &gpuDriver{
	backend:     ROCm,
	ready:       rocmReady,
	session:     func(func() error) error { return rocmReady() },
	loadModule:  func([]byte) (gpuModule, error) { return 0, rocmReady() },
	getFunction: func(gpuModule, string) (gpuFunction, error) { return 0, rocmReady() },
	alloc:       func(int) (DevicePtr, error) { return 0, rocmReady() },
	free:        func(DevicePtr) error { return rocmReady() },
	toDevice:    func(DevicePtr, []byte) error { return rocmReady() },
	toHost:      func([]byte, DevicePtr) error { return rocmReady() },
	copyDtoD:    func(DevicePtr, DevicePtr, int) error { return rocmReady() },
	zero:        func(DevicePtr, int) error { return rocmReady() },
	allocAsync:  func(int, CUDAStream) (DevicePtr, error) { return 0, rocmReady() },
	freeAsync:   func(DevicePtr, CUDAStream) error { return rocmReady() },
	launch:      func(gpuFunction, uint32, uint32, CUDAStream, *launchBuf) error { return rocmReady() },
	sync:        func(string) error { return rocmReady() },
}
