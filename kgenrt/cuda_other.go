//go:build !(linux && (amd64 || arm64))

package kgenrt

import (
	"fmt"
	"runtime"
)

// The CUDA driver is opened only on linux/amd64 and linux/arm64 (purego's
// cgo-free targets); elsewhere the CUDA port reports why it cannot run.

type cudaModuleHandle uintptr

type cudaFunction uintptr

func cudaReady() error {
	return fmt.Errorf("kgenrt's CUDA path runs on linux/amd64 and linux/arm64; this is %s/%s", runtime.GOOS, runtime.GOARCH)
}

func cudaLoadModule([]byte) (cudaModuleHandle, error)                { return 0, cudaReady() }
func cudaGetFunction(cudaModuleHandle, string) (cudaFunction, error) { return 0, cudaReady() }
func cudaRunHost(*cudaPort, *Call) error                             { return cudaReady() }
func cudaLaunchKernel(cudaFunction, uint32, uint32, CUDAStream, *launchBuf) error {
	return cudaReady()
}
func cudaAlloc(int) (DevicePtr, error)                                   { return 0, cudaReady() }
func cudaFree(DevicePtr) error                                           { return cudaReady() }
func cudaAllocAsync(int, CUDAStream) (DevicePtr, error)                  { return 0, cudaReady() }
func cudaFreeAsync(DevicePtr, CUDAStream) error                          { return cudaReady() }
func cudaCopy(dst, src *Tensor) error                                    { return noCUDAError{cudaReady()} }
func cudaOpenLibrary(string) (cudaModuleHandle, error)                   { return 0, cudaReady() }
func cudaLibraryFunction(cudaModuleHandle, string) (cudaFunction, error) { return 0, cudaReady() }
func cudaCallLibrary(cudaFunction, CUDAStream, *Call, []DevicePtr) error { return cudaReady() }

// driverFrame is the launch buffer's driver call frame (cuda_call_linux.go); no
// driver is called here.
type driverFrame struct{}
