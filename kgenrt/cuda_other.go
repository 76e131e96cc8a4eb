//go:build !(linux && (amd64 || arm64))

package kgenrt

import (
	"fmt"
	"runtime"
)

// The CUDA driver is opened only on linux/amd64 and linux/arm64 (purego's
// cgo-free targets); elsewhere the CUDA port reports why it cannot run.

// cudaDriver is the CUDA row of the driver table: every call refuses.
var cudaDriver = &gpuDriver{
	backend:     CUDA,
	ready:       cudaReady,
	session:     func(func() error) error { return cudaReady() },
	loadModule:  func([]byte) (gpuModule, error) { return 0, cudaReady() },
	getFunction: func(gpuModule, string) (gpuFunction, error) { return 0, cudaReady() },
	alloc:       func(int) (DevicePtr, error) { return 0, cudaReady() },
	free:        func(DevicePtr) error { return cudaReady() },
	toDevice:    func(DevicePtr, []byte) error { return cudaReady() },
	toHost:      func([]byte, DevicePtr) error { return cudaReady() },
	copyDtoD:    func(DevicePtr, DevicePtr, int) error { return cudaReady() },
	zero:        func(DevicePtr, int) error { return cudaReady() },
	allocAsync:  cudaAllocAsync,
	freeAsync:   cudaFreeAsync,
	launch:      func(gpuFunction, uint32, uint32, CUDAStream, *launchBuf) error { return cudaReady() },
	sync:        func(string) error { return cudaReady() },
}

func cudaReady() error {
	return fmt.Errorf("kgenrt's CUDA path runs on linux/amd64 and linux/arm64; this is %s/%s", runtime.GOOS, runtime.GOARCH)
}

func cudaAllocAsync(int, CUDAStream) (DevicePtr, error)                 { return 0, cudaReady() }
func cudaFreeAsync(DevicePtr, CUDAStream) error                         { return cudaReady() }
func cudaOpenLibrary(string) (gpuModule, error)                         { return 0, cudaReady() }
func cudaLibraryFunction(gpuModule, string) (gpuFunction, error)        { return 0, cudaReady() }
func cudaCallLibrary(gpuFunction, CUDAStream, *Call, []DevicePtr) error { return cudaReady() }

// driverFrame is the launch buffer's driver call frame (cuda_call_linux.go); no
// driver is called here.
type driverFrame struct{}
