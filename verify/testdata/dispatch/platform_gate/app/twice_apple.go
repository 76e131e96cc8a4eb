//go:build ios

package app

import (
	"example.com/fixture/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// Twice launches on Metal in iOS builds (a test host is never iOS).
func Twice(x, y *kgenrt.Tensor) error { return kernels.Twice.Run(kgenrt.Metal, x, y) }
