// Package app gates on lists of backends (mlxcel's fourth rule:
// `metal_available() || cuda_available()`).
package app

import (
	"example.com/fixture/app/cuda"
	"example.com/fixture/app/metal"
	"example.com/fixture/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// UseGPU enumerates device probes.
func UseGPU() bool {
	return metal.Available() || cuda.Available()
}

// AnyPort enumerates the kernel's ports.
func AnyPort() bool {
	return kernels.Gelu.Available(kgenrt.Metal) || kernels.Gelu.Available(kgenrt.CUDA)
}

func hasMetal() bool { return metal.Available() }

func isCUDAReady() bool { return cuda.Available() }

// CPUOnly negates a conjunction of name-spelled probes.
func CPUOnly() bool {
	return !(hasMetal() && (isCUDAReady()))
}

// Devices lists the probes without gating on them.
func Devices() []bool { return []bool{metal.Available(), cuda.Available()} }
