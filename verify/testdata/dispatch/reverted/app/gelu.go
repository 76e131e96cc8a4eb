// Package app is a downstream launcher reverted by hand: it used to be
//
//	return kernels.Gelu.Run(kgenrt.Metal, x, y)
//
// and now builds the launch and calls Metal itself, as it did before kgen.
// mlxcel's port-dispatch check passed code like this; verify must not.
package app

import (
	"encoding/binary"

	"example.com/fixture/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// Gelu runs GELU on Metal.
func Gelu(x, y *kgenrt.Tensor) error {
	k := kernels.Gelu.Describe()
	v, sizes, err := k.Check(x, y)
	if err != nil {
		return err
	}
	call := &kgenrt.Call{Kernel: k, Variant: v, Tensors: []*kgenrt.Tensor{x, y},
		Args: binary.LittleEndian.AppendUint32(nil, uint32(sizes["n"])),
		Grid: [3]int{kgenrt.CeilDiv(sizes["n"], k.ElemsPerThread), 1, 1}, Threadgroup: [3]int{256, 1, 1}}
	return kgenrt.MetalPort(k).Run(call)
}
