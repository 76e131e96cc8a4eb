// Package app chooses ports by comparing the backend (mlxcel's first rule:
// `use_cuda ? cuda_port : metal_port` ran the Metal arm on ROCm).
package app

import (
	"example.com/fixture/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// Gelu reads "not CUDA" as "Metal".
func Gelu(b kgenrt.Backend, x, y *kgenrt.Tensor) error {
	if b == kgenrt.CUDA {
		return cudaGelu(x, y)
	}
	return kernels.Gelu.Run(kgenrt.Metal, x, y)
}

func cudaGelu(x, y *kgenrt.Tensor) error { return kernels.Gelu.Reference(x, y) }

// Twice switches on the backend.
func Twice(b kgenrt.Backend, x, y *kgenrt.Tensor) error {
	switch b {
	case kgenrt.Metal:
		return kernels.Twice.Run(b, x, y)
	default:
		return kernels.Twice.Reference(x, y)
	}
}

// Named compares the backend's name.
func Named(b kgenrt.Backend, x, y *kgenrt.Tensor) error {
	if b.String() != "metal" {
		return kernels.Gelu.Reference(x, y)
	}
	return kernels.Gelu.Run(b, x, y)
}
