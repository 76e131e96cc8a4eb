//go:build unix

package app

import (
	"example.com/fixture/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// Probe launches only in unix builds (linux and darwin alike).
func Probe(x, y *kgenrt.Tensor) error { return kernels.Twice.Run(kgenrt.CUDA, x, y) }
