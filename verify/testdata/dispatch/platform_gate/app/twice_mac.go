//go:build darwin

package app

import (
	"example.com/fixture/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// Twice launches on Metal in darwin builds.
func Twice(x, y *kgenrt.Tensor) error { return kernels.Twice.Run(kgenrt.Metal, x, y) }
