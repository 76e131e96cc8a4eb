package kgenrt

import (
	"encoding/binary"
	"fmt"
	"sync"
	"unsafe"

	"github.com/kgen-dev/kgen/launch"
)

// The CUDA port's launch preparation: what the descriptor says about a
// kernel's CUDA launch is read once per port (cudaGeom), and each launch
// fills a reused parameter buffer (launchBuf), so a launch allocates
// nothing on the Go side.

// cudaGeom is a kernel's CUDA launch, prepared from Kernel.Launch[CUDA]:
// the args struct's size fields with their offsets, the derived fields in
// rule order, and the threads per block. The rules are the IR's
// (ir.Schedule.Launch), evaluated here per call; kgenrt decides nothing
// about a kind's geometry itself.
type cudaGeom struct {
	k       *Kernel
	b       Backend // whose launch (CUDA, or ROCm, whose HIP kernels launch alike)
	err     error   // the launch is not one the CUDA port can make
	threads uint32
	fields  []geomField
	derived []int // index into fields of each of l.Derived
}

type geomField struct {
	name   string
	offset int
}

func newCUDAGeom(k *Kernel) *cudaGeom { return newGeom(k, CUDA) }

// newGeom prepares kernel k's launch on backend b, a CUDA-like launch:
// blocks of Threadgroup[0] threads along x, a batch along z.
func newGeom(k *Kernel, b Backend) *cudaGeom {
	g := &cudaGeom{k: k, b: b}
	l := &k.Launch[b]
	tg := l.Threadgroup[0]
	if l.Grid[0] == nil || tg <= 0 || tg > 1024 || l.Threadgroup[1] != 1 || l.Threadgroup[2] != 1 {
		g.err = fmt.Errorf("kgenrt: kernel %s: its %s launch (threadgroup %v) is not a 1-D launch of at most 1024 threads per block", k.Name, b, l.Threadgroup)
		return g
	}
	g.threads = uint32(tg)
	for _, f := range k.ArgsBinding().Fields {
		if f.Size {
			g.fields = append(g.fields, geomField{f.Name, f.Offset})
		}
	}
	for _, d := range l.Derived {
		i := g.field(d.Field)
		if i < 0 {
			g.err = fmt.Errorf("kgenrt: kernel %s: derived field %s is not a size field of its args struct", k.Name, d.Field)
			return g
		}
		g.derived = append(g.derived, i)
	}
	return g
}

func (g *cudaGeom) field(name string) int {
	for i := range g.fields {
		if g.fields[i].name == name {
			return i
		}
	}
	return -1
}

// maxLaunchWords bounds the parameter buffer: device pointers plus the args
// struct, in 8-byte words (kernels have a few tensors and fields; backend
// limits allow 31 buffers).
const maxLaunchWords = 64

// launchBuf is cuLaunchKernel's kernelParams and the values they point at:
// vals holds the device pointers, then the args struct's bytes; params[i]
// points at parameter i. Buffers come from launchBufs and are reused.
type launchBuf struct {
	vals   [maxLaunchWords]uintptr
	params [maxLaunchWords]unsafe.Pointer
	cur    uintptr     // the driver writes the current context here
	gridZ  uint32      // the grid's z (the batch), set by prepare
	call   driverFrame // the driver calls' frame (cuda_call_linux.go)
}

var launchBufs = sync.Pool{New: func() any { return new(launchBuf) }}

func getLaunchBuf() *launchBuf { return launchBufs.Get().(*launchBuf) }

// prepare fills buf with c's kernel parameters (ptrs in binding order, then
// the args struct with its derived fields computed by the CUDA launch's
// rules) and returns the number of blocks: the grid's first axis over the
// threads per block.
func (g *cudaGeom) prepare(c *Call, ptrs []DevicePtr, buf *launchBuf) (uint32, error) {
	if g.err != nil {
		return 0, g.err
	}
	buf.gridZ = 1
	words := len(ptrs) + (len(c.Args)+7)/8
	vals := buf.vals[:]
	if words > len(vals) || len(ptrs)+1 > len(buf.params) {
		return 0, fmt.Errorf("kgenrt: kernel %s: %d tensors and %d args bytes exceed the %s port's parameter buffer", g.k.Name, len(ptrs), len(c.Args), g.b.title())
	}
	for i, p := range ptrs {
		vals[i] = uintptr(p)
		buf.params[i] = unsafe.Pointer(&vals[i])
	}
	args := unsafe.Slice((*byte)(unsafe.Pointer(&vals[len(ptrs)])), len(c.Args))
	copy(args, c.Args)
	buf.params[len(ptrs)] = unsafe.Pointer(&vals[len(ptrs)])

	var sbuf [16]int
	sizes := sbuf[:0]
	for _, f := range g.fields {
		sizes = append(sizes, int(binary.LittleEndian.Uint32(c.Args[f.offset:])))
	}
	env := func(name string) (int, bool) {
		if name == launch.ElemBytes {
			return c.Variant.DType.Size(), true
		}
		if i := g.field(name); i >= 0 {
			return sizes[i], true
		}
		return 0, false
	}
	l := &g.k.Launch[g.b]
	for j, d := range l.Derived {
		v, err := d.Rule.Eval(env)
		if err != nil {
			return 0, fmt.Errorf("kgenrt: kernel %s: launch: %s: %w", g.k.Name, d.Field, err)
		}
		f := g.fields[g.derived[j]]
		sizes[g.derived[j]] = v
		binary.LittleEndian.PutUint32(args[f.offset:], uint32(v))
	}
	var grid [3]int
	for i, e := range l.Grid {
		v, err := e.Eval(env)
		if err != nil {
			return 0, fmt.Errorf("kgenrt: kernel %s: %w", g.k.Name, err)
		}
		grid[i] = v
	}
	// A batched kernel (a chain over [b, h]) takes its batch element from
	// the grid's z, as on Metal.
	if grid[1] != 1 || grid[2] < 1 || grid[2] > 65535 {
		return 0, fmt.Errorf("kgenrt: kernel %s: %s grid %v is not blocks along x times a batch of at most 65535 along z", g.k.Name, g.b.title(), grid)
	}
	buf.gridZ = uint32(grid[2])
	b := CeilDiv(grid[0], int(g.threads))
	if b > 1<<31-1 {
		return 0, fmt.Errorf("kgenrt: kernel %s: %d blocks exceed %s's grid limit", g.k.Name, b, g.b.title())
	}
	return uint32(b), nil
}
