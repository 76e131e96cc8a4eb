// Package app reaches ports without the generated port table, every way
// rule direct-port knows.
package app

import (
	"example.com/fixture/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// Selected takes the port Select chose and runs it itself.
func Selected(b kgenrt.Backend, call *kgenrt.Call) error {
	p, err := kernels.Gelu.Select(b)
	if err != nil {
		return err
	}
	return p.Run(call)
}

// Later hands out a port's Encode as a method value.
func Later(p kgenrt.Port) func(*kgenrt.CommandBuffer, *kgenrt.Call) error {
	return p.Encode
}

// table is a port table of the application's own.
var table = kgenrt.PortTable{
	Kernel: kernels.Twice.Describe(),
	Ports:  [kgenrt.NumBackends]kgenrt.Port{kgenrt.MetalPort(kernels.Twice.Describe())},
}

// Own asks the application's own table.
func Own(b kgenrt.Backend) bool { return table.Available(b) }

// Stream launches on a CUDA stream with the port itself.
func Stream(p kgenrt.Port, call *kgenrt.Call) error {
	return p.Enqueue(0, call)
}
