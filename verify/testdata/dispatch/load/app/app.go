// Package app does not compile: the rules cannot check it, and say so.
package app

import (
	"example.com/fixture/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// Gelu returns the wrong type.
func Gelu(b kgenrt.Backend, x, y *kgenrt.Tensor) int {
	return kernels.Gelu.Run(b, x, y)
}
