// Package app keeps one legacy launcher, excused in kgen.yaml.
package app

import (
	"example.com/fixture/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// Legacy runs a prepared call on the Metal port directly.
func Legacy(call *kgenrt.Call) error {
	return kgenrt.MetalPort(kernels.Gelu.Describe()).Run(call)
}
