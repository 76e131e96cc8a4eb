package kgenrt

// Backend is a GPU backend a kernel may have a port for.
type Backend int

// The backends, in port-table order. NumBackends sizes every generated port
// table ([NumBackends]Port, written as a [...] literal with one entry per
// backend), so adding a backend here breaks the build of every generated
// package until kgen regenerates it: no table can silently miss a slot.
const (
	Metal Backend = iota
	CUDA
	ROCm
	NumBackends
)

var backendNames = [NumBackends]string{"metal", "cuda", "rocm"}

// String is the spelling of specs and the inventory ("metal").
func (b Backend) String() string {
	if b < 0 || b >= NumBackends {
		return "backend(?)"
	}
	return backendNames[b]
}

// Port runs one kernel on one backend. Generated packages put ports only in
// their port tables; callers reach them only through PortTable.Select.
type Port interface {
	// Backend is the backend the port runs on.
	Backend() Backend
	// Ready returns nil when the port can run in this process, else why not
	// (not darwin, built without cgo, no device).
	Ready() error
	// Run launches the call on the backend's default queue and waits.
	Run(c *Call) error
	// Encode adds the call to cb without committing it (Metal).
	Encode(cb *CommandBuffer, c *Call) error
	// Enqueue launches the call on stream without copies or waiting; every
	// tensor must be a device tensor of the port's backend (CUDA: stream is
	// a CUstream; ROCm: a hipStream_t).
	Enqueue(stream CUDAStream, c *Call) error
}

// PortTable is one kernel's ports, one slot per backend; nil = no port.
type PortTable struct {
	Kernel *Kernel
	Ports  [NumBackends]Port
}

// Select is the one place that chooses a port. It returns the kernel's port
// for b, or a *PortError (errors.Is ErrNoPort) naming the kernel and the
// backend when the slot is nil or the port cannot run here: the caller's cue
// to take its fallback path.
func (t *PortTable) Select(b Backend) (Port, error) {
	if b < 0 || b >= NumBackends {
		return nil, &PortError{Kernel: t.Kernel.Name, Backend: b, Fallback: t.Kernel.Fallback}
	}
	p := t.Ports[b]
	if p == nil {
		return nil, &PortError{Kernel: t.Kernel.Name, Backend: b, Fallback: t.Kernel.Fallback}
	}
	if err := p.Ready(); err != nil {
		return nil, &PortError{Kernel: t.Kernel.Name, Backend: b, Fallback: t.Kernel.Fallback, Unavailable: err}
	}
	return p, nil
}

// Enqueue is Select(stream.Backend()) and the port's Enqueue, for the
// generated launchers' Enqueue; a call whose tensors are ROCm tensors goes
// to the ROCm port instead, stream then being a hipStream_t (the one
// handle type serves both). The CUDA port is called directly, not through
// the Port interface, so c (which the launcher builds on its stack, with
// its tensors and args) does not escape and a launch allocates nothing.
// Any other port gets a copy of c on the heap.
func (t *PortTable) Enqueue(stream CUDAStream, c *Call) error {
	b := stream.Backend()
	if c.onROCm() {
		b = ROCm
	}
	p, err := t.Select(b)
	if err != nil {
		return err
	}
	if cp, ok := p.(*cudaPort); ok {
		return cp.Enqueue(stream, c)
	}
	return p.Enqueue(stream, c.heapCopy(t.Kernel))
}

// Available reports whether Select would return a port for b. It reads the
// same table through Select, so the two can never disagree.
func (t *PortTable) Available(b Backend) bool {
	_, err := t.Select(b)
	return err == nil
}

// onROCm reports whether one of c's tensors is a ROCm tensor.
func (c *Call) onROCm() bool {
	for _, t := range c.Tensors {
		if t != nil && t.onGPU(ROCm) {
			return true
		}
	}
	return false
}
