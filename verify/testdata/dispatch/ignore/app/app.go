// Package app excuses findings next to the code with //kgen:ignore.
package app

import (
	"example.com/fixture/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// Raw benchmarks the Metal port itself; excused on the line.
func Raw(call *kgenrt.Call) error {
	return kgenrt.MetalPort(kernels.Gelu.Describe()).Run(call) //kgen:ignore direct-port benchmarks the raw port
}

// Probe is excused by the comment line above the gate.
func Probe() bool {
	//kgen:ignore backend-gate reports which GPUs exist, launches nothing
	return kernels.Gelu.Available(kgenrt.Metal) || kernels.Gelu.Available(kgenrt.CUDA)
}

// Stale excuses nothing.
func Stale() bool {
	//kgen:ignore backend-gate there used to be a gate here
	return kernels.Gelu.Available(kgenrt.Metal)
}

// Vague and Typo are excused wrongly: no reason, an unknown rule.
func Vague() bool {
	return kernels.Twice.Available(kgenrt.Metal) || kernels.Twice.Available(kgenrt.CUDA) //kgen:ignore backend-gate
}

func Typo() bool {
	return kernels.Twice.Available(kgenrt.Metal) || kernels.Twice.Available(kgenrt.ROCm) //kgen:ignore backend-gates legacy probe
}
