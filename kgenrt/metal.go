package kgenrt

import (
	"errors"
	"fmt"
	"sync"
)

// MetalPort returns the Metal port of kernel k: kgenrt's Metal launcher
// bound to k's embedded source. Generated packages call it only inside their
// port tables. Off darwin, or without cgo, its Ready reports why it cannot
// run and Select refuses it.
func MetalPort(k *Kernel) Port { return &metalPort{kernel: k} }

type metalPort struct{ kernel *Kernel }

func (p *metalPort) Backend() Backend { return Metal }

func (p *metalPort) Ready() error { return metalReady() }

// Run checks the call, then launches it on the default device's queue and
// waits; an empty call does nothing. A chain (Call.Next, a split kernel's
// phases) runs in order, each launch finished before the next starts.
func (p *metalPort) Run(c *Call) error {
	if err := p.checkChain(c); err != nil {
		return err
	}
	for ; c != nil; c = c.Next {
		if c.empty() {
			continue
		}
		if err := metalRun(c); err != nil {
			return err
		}
	}
	return nil
}

// checkChain checks every call of a chain before any launches.
func (p *metalPort) checkChain(c *Call) error {
	if c == nil {
		return c.check(p.kernel)
	}
	for n := c; n != nil; n = n.Next {
		if err := n.check(p.kernel); err != nil {
			return err
		}
		if err := refuseCUDA(n); err != nil {
			return err
		}
	}
	return nil
}

// refuseCUDA rejects CUDA (and ROCm) tensors on another backend's port: their bytes
// are not in host memory, so they can be neither bound nor staged.
func refuseCUDA(c *Call) error {
	i := 0
	for _, b := range c.Kernel.Bindings {
		if b.Role == Args {
			continue
		}
		if g := c.Tensors[i].gpu; g != nil {
			return c.Kernel.tensorErr(b, "is in "+g.drv.backend.title()+" device memory; this port reads host or Metal memory (copy it to a host tensor with kgenrt.Copy)")
		}
		i++
	}
	return nil
}

// Encode checks the call and adds it to cb (a chain, call after call: Metal
// runs a command buffer's dispatches in order). Every tensor must live in a
// Metal buffer (NewMetal): cb runs after Encode returns, so host memory
// cannot be staged.
func (p *metalPort) Encode(cb *CommandBuffer, c *Call) error {
	if err := p.checkChain(c); err != nil {
		return err
	}
	if cb == nil {
		return fmt.Errorf("kgenrt: kernel %s: Encode needs a command buffer (NewCommandBuffer)", p.kernel.Name)
	}
	for n := c; n != nil; n = n.Next {
		for i, t := range n.Tensors {
			if !t.OnDevice() {
				return n.Kernel.tensorErr(n.Kernel.Tensors()[i], "is in host memory; Encode needs tensors made by kgenrt.NewMetal (use Run to stage host tensors)")
			}
		}
	}
	for ; c != nil; c = c.Next {
		if c.empty() {
			continue
		}
		if err := metalEncode(cb, c); err != nil {
			return err
		}
	}
	return nil
}

// Enqueue refuses: streams are CUDA's. Metal launches go in a command
// buffer.
func (p *metalPort) Enqueue(CUDAStream, *Call) error {
	return fmt.Errorf("kgenrt: kernel %s: the Metal port takes no CUDA stream; use Run, or Encode into a command buffer", p.kernel.Name)
}

// stage says how one tensor of a call reaches the GPU in a synchronous Run.
type stage struct {
	Index    int // buffer index
	Tensor   *Tensor
	CopyIn   bool // host input: copy into a temporary buffer first
	CopyOut  bool // host output: copy back after the command buffer completes
	SameAs   int  // index into the stages of an earlier tensor with the same bytes (in place), or -1
	OnDevice bool // bound directly
}

// stages plans a synchronous Run: device tensors bind as they are; host
// tensors go through temporary shared buffers, one per distinct byte range,
// so an in-place y = x shares one buffer that is copied in and back out.
func stages(c *Call) []stage {
	bs := c.Kernel.Tensors()
	out := make([]stage, len(c.Tensors))
	for i, t := range c.Tensors {
		s := stage{Index: bs[i].Index, Tensor: t, SameAs: -1, OnDevice: t.OnDevice()}
		if !s.OnDevice {
			s.CopyIn = bs[i].Role == Input
			s.CopyOut = bs[i].Role == Output
			for j := 0; j < i; j++ {
				if !out[j].OnDevice && sameBytes(t, out[j].Tensor) {
					s.SameAs = j
					break
				}
			}
		}
		out[i] = s
	}
	return out
}

// checkDispatch refuses dispatches Metal would reject with an assertion
// instead of an error: oversize grids, threadgroups over the pipeline's
// limit.
func checkDispatch(c *Call, maxThreads int) error {
	tg := c.Threadgroup[0] * c.Threadgroup[1] * c.Threadgroup[2]
	if tg <= 0 || tg > maxThreads {
		return fmt.Errorf("kgenrt: kernel %s: threadgroup %v has %d threads; the %s pipeline allows %d", c.Kernel.Name, c.Threadgroup, tg, c.Variant.HostName, maxThreads)
	}
	for _, g := range c.Grid {
		if g < 0 || int64(g) > 1<<32-1 {
			return fmt.Errorf("kgenrt: kernel %s: grid %v does not fit 32-bit thread positions", c.Kernel.Name, c.Grid)
		}
	}
	return nil
}

// validated remembers Kernel.Validate's verdict per descriptor, so the key
// check costs one hash per kernel per process.
var validated sync.Map // *Kernel → error (nil stored as errOK)

var errOK = errors.New("ok")

func validate(k *Kernel) error {
	if v, ok := validated.Load(k); ok {
		if v == errOK {
			return nil
		}
		return v.(error)
	}
	err := k.Validate()
	store := err
	if store == nil {
		store = errOK
	}
	validated.Store(k, store)
	return err
}
