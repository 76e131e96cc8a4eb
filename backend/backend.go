// Package backend names the GPU backends a kernel may have a port for and
// their limits. It is a leaf package so that the spec (which parses the
// port table), the IR (which enforces the limits) and the emitters share one
// enum.
package backend

// Backend is a GPU backend, in the order of the port table.
type Backend int

// The backends.
const (
	Metal Backend = iota
	CUDA
	ROCm
	NumBackends
)

var names = [NumBackends]string{"metal", "cuda", "rocm"}

func (b Backend) String() string {
	if b < 0 || b >= NumBackends {
		return "backend(?)"
	}
	return names[b]
}

// Names lists the backends' spec spellings in port-table order.
func Names() []string { return names[:] }

// Limits are what one kernel may use on a backend; the IR rejects a spec
// that exceeds them, at the spec, before any compiler runs.
type Limits struct {
	// Buffers is the most buffer bindings (tensors plus the args struct).
	Buffers int
	// ThreadgroupBytes is the most threadgroup (shared) memory per group.
	ThreadgroupBytes int
	// Threads is the most threads per threadgroup (block).
	Threads int
}

// Table holds each backend's limits.
//
// Metal: 31 entries in a kernel's buffer argument table, 32 KiB of
// threadgroup memory and 1024 threads per threadgroup on every Apple GPU
// (Metal feature set tables). CUDA: 48 KiB of static shared memory and 1024
// threads per block; kernel parameters are 4 KiB, 8 bytes per pointer, so
// the buffer count is never the binding limit before Metal's. ROCm (no
// generated port yet): HIP's 64 KiB LDS and 1024 threads.
var Table = [NumBackends]Limits{
	Metal: {Buffers: 31, ThreadgroupBytes: 32 * 1024, Threads: 1024},
	CUDA:  {Buffers: 4096 / 8, ThreadgroupBytes: 48 * 1024, Threads: 1024},
	ROCm:  {Buffers: 4096 / 8, ThreadgroupBytes: 64 * 1024, Threads: 1024},
}

// MaxThreads is the most threads per group every backend allows: the
// bound on a spec's threadgroup.
func MaxThreads() int {
	most := Table[0].Threads
	for _, l := range Table[1:] {
		most = min(most, l.Threads)
	}
	return most
}

// Source is where a backend's generated kernel sources go: one file per
// kernel, <Out>/<kernel><Ext>. It is the one place config (the out: key and
// its default), generate (the paths) and verify read these facts from.
type Source struct {
	// OutKey is the field under kgen.yaml's out: that names the folder.
	OutKey string
	// Dir is the folder kgen init writes and a config without OutKey gets.
	Dir string
	// Ext is the source file's extension.
	Ext string
	// Lang names the source language in generated comments.
	Lang string
}

// Sources holds each backend's source-file facts.
var Sources = [NumBackends]Source{
	Metal: {OutKey: "msl", Dir: "gen/msl", Ext: ".metal", Lang: "Metal"},
	CUDA:  {OutKey: "cuda", Dir: "gen/cuda", Ext: ".cu", Lang: "CUDA"},
	ROCm:  {OutKey: "hip", Dir: "gen/hip", Ext: ".hip", Lang: "HIP"},
}
