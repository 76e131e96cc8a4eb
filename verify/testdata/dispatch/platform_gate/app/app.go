// Package app decides by the operating system whether to launch a kernel:
// rule platform-gate. Metal can be missing on darwin (no cgo, no device),
// and only Select knows.
package app

import (
	"runtime"

	"example.com/fixture/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// Gelu launches on Metal when the OS is darwin, else runs the reference.
func Gelu(x, y *kgenrt.Tensor) error {
	if runtime.GOOS == "darwin" { // RunArgs launches as Run does
		return kernels.Gelu.RunArgs(kgenrt.Metal, kernels.GeluArgs{X: x, Y: y})
	}
	return kernels.Gelu.Reference(x, y)
}

// OS is fine: it launches nothing.
func OS() string { return runtime.GOOS }
