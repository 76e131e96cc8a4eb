package kgenrt

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/kgen-dev/kgen/launch"
)

// A kernel with PortPhases (a rowwise kernel with column reductions) has
// no one-launch form, and one with PortSplit (a batched chain's flash
// decoding) takes its phases where the split field says: its CUDA and ROCm
// ports launch Phases in order
// inside the kernel's one call, on the call's stream, with the f32
// workspaces the phases bind beside the kernel's tensors allocated on
// that stream (the driver's allocAsync: cuMemAllocAsync, hipMallocAsync)
// and freed on it after the last launch (freeAsync): stream-ordered, so an
// Enqueue neither waits nor races another Enqueue of the same kernel.
// Every phase takes the kernel's args struct, its derived fields computed
// by the kernel's launch on the port's backend.

// launchPhases enqueues c as its phases (see PortPhases) with ptrs, the
// device pointers of c's tensors in binding order.
func (p *gpuPort) launchPhases(stream CUDAStream, c *Call, ptrs []DevicePtr) error {
	k := p.kernel
	g := p.geometry(-1)
	if g.err != nil {
		return g.err
	}
	var abuf [256]byte
	if len(c.Args) > len(abuf) {
		return fmt.Errorf("kgenrt: kernel %s: %d args bytes exceed the %s port's buffer", k.Name, len(c.Args), p.drv.backend.title())
	}
	args := abuf[:len(c.Args)]
	copy(args, c.Args)
	env, err := g.derive(c, args)
	if err != nil {
		return err
	}
	if s := k.PortSplit; s != nil && !k.PortPhases {
		if v, ok := env(s.Field); !ok || v <= s.Above { // the kernel's one launch suffices
			return p.launchOwn(stream, c, ptrs)
		}
	}
	// The workspaces: every phase binding the kernel does not have, f32,
	// laid out one after another at 256-byte boundaries in one allocation.
	var spaces []phaseSpace
	total := 0
	for _, ph := range k.Phases {
		for _, b := range ph.Bindings {
			if b.Role == Args || k.binding(b.Name) >= 0 || spaceOf(spaces, b.Name) >= 0 {
				continue
			}
			n := 4
			for _, d := range b.Shape {
				v, ok := env(d)
				if !ok {
					return fmt.Errorf("kgenrt: kernel %s: workspace %s: no size %s", k.Name, b.Name, d)
				}
				n *= v
			}
			spaces = append(spaces, phaseSpace{name: b.Name, offset: total})
			total += (n + 255) / 256 * 256
		}
	}
	var base DevicePtr
	if total > 0 {
		if base, err = p.drv.allocAsync(total, stream); err != nil {
			return err
		}
	}
	err = p.runPhases(stream, c, ptrs, args, env, spaces, base)
	if total > 0 {
		if ferr := p.drv.freeAsync(base, stream); err == nil {
			err = ferr
		}
	}
	return err
}

// phaseSpace is one workspace's place in the launch's allocation.
type phaseSpace struct {
	name   string
	offset int
}

func spaceOf(spaces []phaseSpace, name string) int {
	for i, s := range spaces {
		if s.name == name {
			return i
		}
	}
	return -1
}

// runPhases launches each phase with its pointers (the kernel's tensors by
// name, the workspaces at base) and the shared args; a phase whose grid is
// empty (no rows: the row passes) is skipped.
func (p *gpuPort) runPhases(stream CUDAStream, c *Call, ptrs []DevicePtr, args []byte, env launch.Env, spaces []phaseSpace, base DevicePtr) error {
	k := p.kernel
	var ibuf [16]int
	tensors := k.tensorIndex(ibuf[:0])
	for i, ph := range k.Phases {
		fn, err := p.code.phaseFunction(i, c.Variant)
		if err != nil {
			return err
		}
		l := &ph.Launch[p.drv.backend]
		var grid [3]int
		for a, e := range l.Grid {
			if grid[a], err = e.Eval(env); err != nil {
				return fmt.Errorf("kgenrt: kernel %s: phase %s: %w", k.Name, ph.Name, err)
			}
		}
		threads := l.Threadgroup[0]
		blocks := CeilDiv(grid[0], threads)
		if blocks == 0 {
			continue
		}
		if grid[1] != 1 || grid[2] < 1 || grid[2] > 65535 || blocks > 1<<31-1 {
			return fmt.Errorf("kgenrt: kernel %s: phase %s: %s grid %v is not blocks along x times a batch of at most 65535 along z", k.Name, ph.Name, p.drv.backend.title(), grid)
		}
		buf := getLaunchBuf()
		vals := buf.vals[:]
		n := 0
		for _, b := range ph.Bindings {
			if b.Role == Args {
				continue
			}
			if j := k.binding(b.Name); j >= 0 {
				for t, bi := range tensors {
					if bi == j {
						vals[n] = uintptr(ptrs[t])
					}
				}
			} else {
				vals[n] = uintptr(base) + uintptr(spaces[spaceOf(spaces, b.Name)].offset)
			}
			buf.params[n] = unsafe.Pointer(&vals[n])
			n++
		}
		dst := unsafe.Slice((*byte)(unsafe.Pointer(&vals[n])), len(args))
		copy(dst, args)
		buf.params[n] = unsafe.Pointer(&vals[n])
		buf.gridZ = uint32(grid[2]) // a batched chain's batch; 1 elsewhere
		err = p.drv.launch(fn, uint32(blocks), uint32(threads), stream, buf)
		launchBufs.Put(buf)
		if err != nil {
			return fmt.Errorf("kgenrt: kernel %s: %s: %w", k.Name, ph.Variants[0].HostName, err)
		}
	}
	return nil
}

// launchPhase enqueues a call of one phase by itself (c.Kernel one of
// Phases, c's tensors its bindings' with the workspaces the caller made):
// a raw launch of one entry point, as parity's GPU runner makes; its args
// must already hold the derived fields.
func (p *gpuPort) launchPhase(stream CUDAStream, c *Call, ptrs []DevicePtr) error {
	i := -1
	for j, ph := range p.kernel.Phases {
		if ph == c.Kernel {
			i = j
		}
	}
	if i < 0 {
		return fmt.Errorf("kgenrt: a call for another kernel reached the %s port of %s", p.drv.backend.title(), p.kernel.Name)
	}
	fn, err := p.code.phaseFunction(i, c.Variant)
	if err != nil {
		return err
	}
	g := newGeom(p.kernel.Phases[i], p.drv.backend) // p's, not c's: c's pointers must not reach the heap
	buf := getLaunchBuf()
	defer launchBufs.Put(buf)
	blocks, err := g.prepare(c, ptrs, buf)
	if err != nil || blocks == 0 {
		return err
	}
	if err := p.drv.launch(fn, blocks, g.threads, stream, buf); err != nil {
		return fmt.Errorf("kgenrt: kernel %s: %s: %w", p.kernel.Name, c.Variant.HostName, err)
	}
	return nil
}

// binding is the index of k's binding named name, or -1.
func (k *Kernel) binding(name string) int {
	for i, b := range k.Bindings {
		if b.Name == name {
			return i
		}
	}
	return -1
}

// derive writes the call's derived size fields into args (the rules of
// the kernel's launch on g's backend) and returns the sizes as a launch environment.
func (g *cudaGeom) derive(c *Call, args []byte) (launch.Env, error) {
	sizes := make([]int, len(g.fields))
	for i, f := range g.fields {
		sizes[i] = int(binary.LittleEndian.Uint32(args[f.offset:]))
	}
	elem := c.Variant.DType.Size() // a value: a closure over c would move the caller's call to the heap
	env := func(name string) (int, bool) {
		if name == launch.ElemBytes {
			return elem, true
		}
		if i := g.field(name); i >= 0 {
			return sizes[i], true
		}
		return 0, false
	}
	for j, d := range g.k.Launch[g.b].Derived {
		v, err := d.Rule.Eval(env)
		if err != nil {
			return nil, fmt.Errorf("kgenrt: kernel %s: launch: %s: %w", g.k.Name, d.Field, err)
		}
		sizes[g.derived[j]] = v
		binary.LittleEndian.PutUint32(args[g.fields[g.derived[j]].offset:], uint32(v))
	}
	return env, nil
}
