//go:build !(linux && (amd64 || arm64))

package kgenrt

import (
	"fmt"
	"runtime"
)

// HIP's runtime is opened only on linux/amd64 and linux/arm64 (purego's
// cgo-free targets); elsewhere the ROCm port reports why it cannot run.

type rocmModuleHandle uintptr

type rocmFunction uintptr

func rocmReady() error {
	return fmt.Errorf("kgenrt's ROCm path runs on linux/amd64 and linux/arm64; this is %s/%s", runtime.GOOS, runtime.GOARCH)
}

func rocmLoadModule([]byte) (rocmModuleHandle, error)                { return 0, rocmReady() }
func rocmGetFunction(rocmModuleHandle, string) (rocmFunction, error) { return 0, rocmReady() }
func rocmRunHost(*cudaGeom, rocmFunction, *Call) error               { return rocmReady() }
