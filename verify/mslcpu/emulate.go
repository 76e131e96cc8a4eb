package mslcpu

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/kgen-dev/kgen/kgenrt"
)

// EmulateMetal installs the harness as kgenrt's Metal port on a machine
// without Metal (kgenrt.SetMetalEmulator): a generated launcher's Run on
// kgenrt.Metal then compiles the kernel's embedded source for the CPU and
// runs the launch it laid out (args struct, strides, grid) with opts'
// lane order, lane map and sanitizer. It returns the function that removes
// it. Tensors must be host tensors; each is bound from its first reachable
// element (kgenrt.Tensor.Bytes, Metal's binding offset), tensors over the
// very same bytes as one buffer (in place), and every output's bytes are
// copied back whole, so outputs must not share bytes with one another.
func EmulateMetal(ctx context.Context, opts Launch) (remove func()) {
	kgenrt.SetMetalEmulator(func(c *kgenrt.Call) error { return runCall(ctx, opts, c) })
	return func() { kgenrt.SetMetalEmulator(nil) }
}

// runCall runs one launch of a kgenrt call on the harness.
func runCall(ctx context.Context, opts Launch, c *kgenrt.Call) error {
	l := opts
	l.Source, l.HostName = []byte(c.Kernel.Source), c.Variant.HostName
	for a := range 3 {
		l.Grid[a], l.Threadgroup[a] = uint32(c.Grid[a]), uint32(c.Threadgroup[a])
	}
	l.Buffers = make([][]byte, len(c.Kernel.Bindings))
	l.Aliases = map[int]int{}
	outputs := map[int]*kgenrt.Tensor{}
	ti := 0
	for i, b := range c.Kernel.Bindings {
		if b.Role == kgenrt.Args {
			l.Buffers[i] = c.Args
			continue
		}
		t := c.Tensors[ti]
		ti++
		if t.Bytes() == nil && t.Len() > 0 {
			return fmt.Errorf("mslcpu: %s: tensor %s is not in host memory", c.Kernel.Name, b.Name)
		}
		l.Buffers[i] = t.Bytes()
		for j := range i {
			if sameBytes(l.Buffers[j], t.Bytes()) && c.Kernel.Bindings[j].Role != kgenrt.Args {
				l.Aliases[i] = j
				break
			}
		}
		if b.Role == kgenrt.Output {
			outputs[i] = t
		}
	}
	got, err := Run(ctx, l)
	if err != nil {
		return err
	}
	for i, t := range outputs {
		src := i
		if j, ok := l.Aliases[i]; ok {
			src = j
		}
		copy(t.Bytes(), got[src])
	}
	return nil
}

// sameBytes reports whether a and b are the same memory, start and length.
func sameBytes(a, b []byte) bool {
	return len(a) > 0 && len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}
