package kgenrt

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/kgen-dev/kgen/launch"
)

// fakeGPU is a driver row over host memory, for proving the shared GPU
// port (gpu_port.go, gpu_phases.go) on both backends without a device:
// device allocations are byte slices at made-up addresses, every call is
// logged, and a launch runs the Go func the test gives for the entry
// point, on the device bytes its parameters point at.
type fakeGPU struct {
	b     Backend
	next  DevicePtr
	mem   map[DevicePtr][]byte // live allocations by base address
	log   []string
	names map[DevicePtr]string // an allocation's name in the log (a1, a2, …)
	fns   []fakeFn             // entry point i+1
	fail  string               // the call that fails (its log word), or ""
	drv   *gpuDriver           // the row, made once: device tensors and ports share it
}

// fakeFn is an entry point: its host name, how many device pointers it
// takes before the args struct, and what it does.
type fakeFn struct {
	name  string
	ptrs  int
	nargs int
	run   func(g *fakeGPU, blocks, threads, z uint32, ptrs []DevicePtr, args []byte)
}

func newFakeGPU(b Backend, fns ...fakeFn) *fakeGPU {
	g := &fakeGPU{b: b, next: 1 << 20, mem: map[DevicePtr][]byte{}, names: map[DevicePtr]string{}, fns: fns}
	g.drv = g.driver()
	return g
}

// err is the backend's own error for a failed call, as its row returns.
func (g *fakeGPU) err(call string) error {
	if g.b == ROCm {
		return &ROCmError{Call: call, Result: 2, Name: "hipErrorOutOfMemory", Text: "out of memory"}
	}
	return &CUDAError{Call: call, Result: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Text: "out of memory"}
}

func (g *fakeGPU) allocate(word string, n int) (DevicePtr, error) {
	if g.fail == word {
		return 0, g.err(word)
	}
	d := g.next
	g.next += DevicePtr((n + 255) / 256 * 256)
	g.mem[d] = make([]byte, n)
	g.names[d] = fmt.Sprintf("a%d", len(g.names)+1)
	g.log = append(g.log, fmt.Sprintf("%s %s %d", word, g.names[d], n))
	return d, nil
}

func (g *fakeGPU) release(word string, d DevicePtr) error {
	if _, ok := g.mem[d]; !ok {
		return fmt.Errorf("%s of %#x: not allocated", word, uintptr(d))
	}
	delete(g.mem, d)
	g.log = append(g.log, word+" "+g.names[d])
	return nil
}

// at is the device memory from address d to the end of its allocation.
func (g *fakeGPU) at(d DevicePtr) []byte {
	for base, b := range g.mem {
		if d >= base && d < base+DevicePtr(len(b)) {
			return b[d-base:]
		}
	}
	panic(fmt.Sprintf("fake GPU: %#x is not device memory", uintptr(d)))
}

func (g *fakeGPU) f32s(d DevicePtr, n int) []float32 {
	if n == 0 {
		return nil // an empty workspace is a null pointer
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&g.at(d)[0])), n)
}

// driver is the fake's row of the driver table.
func (g *fakeGPU) driver() *gpuDriver {
	return &gpuDriver{
		backend: g.b,
		ready:   func() error { return nil },
		session: func(f func() error) error { return f() },
		getFunction: func(_ gpuModule, name string) (gpuFunction, error) {
			for i, f := range g.fns {
				if f.name == name {
					return gpuFunction(i + 1), nil
				}
			}
			return 0, fmt.Errorf("no entry point %s", name)
		},
		alloc: func(n int) (DevicePtr, error) { return g.allocate("alloc", n) },
		free:  func(d DevicePtr) error { return g.release("free", d) },
		toDevice: func(d DevicePtr, data []byte) error {
			g.log = append(g.log, fmt.Sprintf("h2d %s %d", g.names[d], len(data)))
			copy(g.at(d), data)
			return nil
		},
		toHost: func(data []byte, d DevicePtr) error {
			g.log = append(g.log, fmt.Sprintf("d2h %s %d", g.names[d], len(data)))
			copy(data, g.at(d))
			return nil
		},
		allocAsync: func(n int, s CUDAStream) (DevicePtr, error) {
			return g.allocate(fmt.Sprintf("allocAsync@%d", s), n)
		},
		freeAsync: func(d DevicePtr, s CUDAStream) error { return g.release(fmt.Sprintf("freeAsync@%d", s), d) },
		launch: func(fn gpuFunction, blocks, threads uint32, s CUDAStream, buf *launchBuf) error {
			f := g.fns[fn-1]
			g.log = append(g.log, fmt.Sprintf("launch@%d %s %dx%dx%d", s, f.name, blocks, threads, buf.gridZ))
			if g.fail == "launch" {
				return g.err(map[Backend]string{CUDA: "cuLaunchKernel", ROCm: "hipModuleLaunchKernel"}[g.b])
			}
			ptrs := make([]DevicePtr, f.ptrs)
			for i := range ptrs {
				ptrs[i] = *(*DevicePtr)(buf.params[i])
			}
			args := unsafe.Slice((*byte)(buf.params[f.ptrs]), f.nargs)
			f.run(g, blocks, threads, buf.gridZ, ptrs, args)
			return nil
		},
		copyDtoD: func(dst, src DevicePtr, n int) error {
			g.log = append(g.log, fmt.Sprintf("d2d %s %s %d", g.names[dst], g.names[src], n))
			copy(g.at(dst)[:n], g.at(src))
			return nil
		},
		zero: func(d DevicePtr, n int) error {
			g.log = append(g.log, fmt.Sprintf("zero %s %d", g.names[d], n))
			clear(g.at(d)[:n])
			return nil
		},
		sync: func(after string) error { g.log = append(g.log, "sync "+after); return nil },
	}
}

// port makes k's port on the fake's backend, its entry points looked up
// through the fake (what Ready does on a device).
func (g *fakeGPU) port(k *Kernel) Port {
	d := g.drv
	get := func(name string) (gpuFunction, error) { return d.getFunction(0, name) }
	if g.b == ROCm {
		m := &ROCmModule{Kernel: k, Hash: "fake"}
		m.once.Do(func() { m.lookup(k, get, "", false) })
		p := ROCmPort(k, m).(*rocmPort)
		p.drv = d
		return p
	}
	m := &CUDAModule{Kernel: k, Hash: "fake"}
	m.once.Do(func() { m.lookup(k, get, " in fake.fatbin", true) })
	p := newCUDAPort(k, m)
	p.drv = d
	return p
}

func u32(args []byte, off int) int { return int(binary.LittleEndian.Uint32(args[off:])) }

// colsumKernel is a column reduction as kgen lays one out (PortPhases):
// y[j] = Σ_r x[r, j], in a first phase folding chunks of 4 rows into an f32
// workspace part [chunks, cols] and a second folding the chunks. Its args
// are {rows, cols, chunks}, chunks derived as ceildiv(rows, 4).
func colsumKernel() (*Kernel, []fakeFn) {
	args := Binding{Index: 9, Name: "args", Role: Args, Fields: []Field{
		{Name: "rows", Type: U32, Offset: 0, Size: true},
		{Name: "cols", Type: U32, Offset: 4, Size: true},
		{Name: "chunks", Type: U32, Offset: 8, Size: true}}}
	chunks := lin(launch.Times(launch.N(64), launch.V("chunks")), 64,
		launch.Derived{Field: "chunks", Rule: launch.Ceil(launch.V("rows"), launch.N(4))})
	k := &Kernel{Name: "colsum", Kind: "rowwise", Math: "precise", ElemsPerThread: 1, PortPhases: true,
		Variants: []Variant{{DType: F32, HostName: "colsum_part_f32"}},
		Bindings: []Binding{
			{Index: 0, Name: "x", Role: Input, DType: T, Shape: []string{"rows", "cols"}},
			{Index: 1, Name: "y", Role: Output, DType: T, Shape: []string{"cols"}},
			withIndex(args, 2)},
	}
	part := &Kernel{Name: "colsum", Variants: k.Variants, Bindings: []Binding{
		{Index: 0, Name: "x", Role: Input, DType: T, Shape: []string{"rows", "cols"}},
		{Index: 1, Name: "part", Role: Output, DType: F32, Shape: []string{"chunks", "cols"}},
		withIndex(args, 2)}}
	fold := &Kernel{Name: "colsum_fold", Variants: []Variant{{DType: F32, HostName: "colsum_fold_f32"}}, Bindings: []Binding{
		{Index: 0, Name: "part", Role: Input, DType: F32, Shape: []string{"chunks", "cols"}},
		{Index: 1, Name: "y", Role: Output, DType: T, Shape: []string{"cols"}},
		withIndex(args, 2)}}
	for _, b := range []Backend{CUDA, ROCm} {
		k.Launch[b] = chunks
		part.Launch[b] = lin(launch.Times(launch.N(64), launch.V("chunks")), 64)
		fold.Launch[b] = lin(launch.V("cols"), foldThreads[b]) // each port its own
	}
	k.Phases = []*Kernel{part, fold}
	fns := []fakeFn{
		{name: "colsum_part_f32", ptrs: 2, nargs: 12, run: func(g *fakeGPU, _, _, _ uint32, p []DevicePtr, a []byte) {
			rows, cols, nc := u32(a, 0), u32(a, 4), u32(a, 8)
			x, ws := g.f32s(p[0], rows*cols), g.f32s(p[1], nc*cols)
			clear(ws) // the workspace comes uninitialised
			for r := 0; r < rows; r++ {
				for j := 0; j < cols; j++ {
					ws[r/4*cols+j] += x[r*cols+j]
				}
			}
		}},
		{name: "colsum_fold_f32", ptrs: 2, nargs: 12, run: func(g *fakeGPU, _, _, _ uint32, p []DevicePtr, a []byte) {
			cols, nc := u32(a, 4), u32(a, 8)
			ws, y := g.f32s(p[0], nc*cols), g.f32s(p[1], cols)
			for j := 0; j < cols; j++ {
				y[j] = 0
				for c := 0; c < nc; c++ {
					y[j] += ws[c*cols+j]
				}
			}
		}},
	}
	return k, fns
}

// lin is a 1-D launch: grid threads along x in blocks of threads.
func lin(grid *launch.Expr, threads int, derived ...launch.Derived) launch.Launch {
	return launch.Launch{Grid: [3]*launch.Expr{grid, launch.N(1), launch.N(1)}, Threadgroup: [3]int{threads, 1, 1}, Derived: derived}
}

// foldThreads are colsum's fold launch per backend: they differ, so a
// port launching with another backend's launch shows in the log.
var foldThreads = [NumBackends]int{CUDA: 32, ROCm: 64}

// foldLaunch is the log line of colsum's fold on b's stream s.
func foldLaunch(b Backend, s int) string {
	return fmt.Sprintf("launch@%d colsum_fold_f32 1x%dx1", s, foldThreads[b])
}

func withIndex(b Binding, i int) Binding { b.Index = i; return b }

// call checks tensors against k and lays out the call as a generated
// launcher does (sizes, then strides), with grid the given one.
func fakeCall(t *testing.T, k *Kernel, grid [3]int, tensors ...*Tensor) *Call {
	t.Helper()
	v, sizes, err := k.Check(tensors...)
	if err != nil {
		t.Fatal(err)
	}
	args := make([]byte, k.ArgsSize())
	for _, f := range k.ArgsBinding().Fields {
		if f.Size {
			binary.LittleEndian.PutUint32(args[f.Offset:], uint32(sizes[f.Name]))
		}
	}
	if err := k.PutStrides(args, tensors); err != nil {
		t.Fatal(err)
	}
	return &Call{Kernel: k, Variant: v, Tensors: tensors, Args: args, Grid: grid, Threadgroup: [3]int{64, 1, 1}}
}

func f32Tensor(t *testing.T, vals []float32, shape ...int) *Tensor {
	t.Helper()
	x := mk(t, F32, shape...)
	copy(unsafe.Slice((*float32)(unsafe.Pointer(&x.data[0])), len(vals)), vals)
	return x
}

func hostF32(x *Tensor) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(&x.data[0])), len(x.data)/4)
}

// leaks lists the fake's allocations still live.
func (g *fakeGPU) leaks() []string {
	var out []string
	for d := range g.mem {
		out = append(out, g.names[d])
	}
	sort.Strings(out)
	return out
}

func near(a, b float32) bool { return math.Abs(float64(a-b)) <= 1e-6*math.Max(1, math.Abs(float64(b))) }

func logText(log []string) string { return "\n\t" + strings.Join(log, "\n\t") }
