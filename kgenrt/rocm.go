package kgenrt

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
)

// The ROCm path. A kernel whose spec says `rocm: generated` has a .hip file
// (written by `kgen gen`) and a ROCmModule in its generated package; `kgen
// rocm` compiles the .hip with clang into one AMDGPU code object per target,
// <kernel>-<hash>.<arch>.co inside the package's hipbin/ folder, which the
// package embeds. At run time the port opens HIP's runtime (libamdhip64.so,
// with purego: no cgo, no ROCm headers), loads the first of the kernel's
// code objects that device 0 accepts (hipModuleLoadData), and launches the
// variant's extern "C" entry point with hipModuleLaunchKernel: the
// tensors' device pointers in binding order and the args struct by value,
// on the grid of the descriptor's ROCm launch, exactly as the CUDA port
// does.
//
// The launch path is CUDA's, over the driver table's ROCm row (gpu.go,
// gpu_port.go): Run (host tensors staged through device memory, ROCm
// tensors bound in place, a wait) and Enqueue on a caller's HIP stream
// with ROCm tensors (NewROCm, WrapROCm), kernels with PortPhases (column
// reductions: phases with stream-ordered workspaces) included. What is
// ROCm's own here is how the code is found: one code object per target,
// the first the device accepts. This port has not run on AMD hardware:
// the kernels are proven by compiling them for gfx942 and gfx1100 and
// running their HIP source on the CPU with 64- and 32-lane wavefronts
// (e2e/hipcpu), the shared launch path by the fake driver row
// (gpu_fake_test.go); the runtime calls follow HIP's documented module API.

// ROCmCodeObjectDirEnv names a folder searched for the code objects before
// the embedded ones (objects built after the program).
const ROCmCodeObjectDirEnv = "KGEN_ROCM_CODE_OBJECT_DIR"

// ROCmModule is one kernel's compiled ROCm code, as the generated package
// describes it. Generated packages declare one per ROCm port.
type ROCmModule struct {
	Kernel   *Kernel
	Source   string   // the .hip file, relative to the kgen.yaml folder
	Hash     string   // the first 16 hex digits of the sha256 of the .hip file
	Archs    []string // the targets `kgen rocm` builds, in the order tried
	Binaries fs.FS    // the package's embedded code objects
	Dir      string   // their folder inside Binaries

	once sync.Once
	err  error
	mod  gpuModule
	// the entry points, looked up at load: per entry of Kernel.Variants,
	// and each of a PortPhases kernel's phases' (gpu.go)
	gpuEntries
}

// CodeObjects lists the module's code object file names, one per target.
func (m *ROCmModule) CodeObjects() []string {
	var out []string
	for _, a := range m.Archs {
		out = append(out, m.Kernel.Name+"-"+m.Hash+"."+a+".co")
	}
	return out
}

// images returns the module's code objects that exist, in Archs order:
// from $KGEN_ROCM_CODE_OBJECT_DIR, then embedded.
func (m *ROCmModule) images() ([][]byte, error) {
	var out [][]byte
	for _, name := range m.CodeObjects() {
		if dir := os.Getenv(ROCmCodeObjectDirEnv); dir != "" {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
				out = append(out, b)
				continue
			}
		}
		if m.Binaries != nil {
			if b, err := fs.ReadFile(m.Binaries, path.Join(m.Dir, name)); err == nil {
				out = append(out, b)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no ROCm code object (%s) for %s in the package's %s/ folder: build them with `kgen rocm` (needs clang and lld 19+), then rebuild this program (or set %s to the folder holding them)",
			strings.Join(m.CodeObjects(), ", "), m.Source, m.Dir, ROCmCodeObjectDirEnv)
	}
	return out, nil
}

// load opens the runtime, loads the first code object the device accepts
// and looks up every entry point, once.
func (m *ROCmModule) load() error {
	m.once.Do(func() {
		if m.err = rocmDriver.ready(); m.err != nil {
			return
		}
		imgs, err := m.images()
		if err != nil {
			m.err = err
			return
		}
		var why []string
		for _, img := range imgs {
			mod, err := rocmDriver.loadModule(img)
			if err == nil {
				m.mod, why = mod, nil
				break
			}
			why = append(why, err.Error())
		}
		if why != nil {
			m.err = fmt.Errorf("kgenrt: kernel %s: the device accepts none of its code objects (%s): %s", m.Kernel.Name, strings.Join(m.Archs, ", "), strings.Join(why, "; "))
			return
		}
		m.lookup(m.Kernel, func(name string) (gpuFunction, error) { return rocmDriver.getFunction(m.mod, name) }, "", false)
	})
	return m.err
}

// ROCmPort returns the ROCm port of kernel k over module m. Generated
// packages call it only inside their port tables.
func ROCmPort(k *Kernel, m *ROCmModule) Port {
	p := &rocmPort{gpuPort: gpuPort{kernel: k, drv: rocmDriver, code: &m.gpuEntries, load: m.load}, module: m}
	rocmPorts.Store(k, p)
	return p
}

var rocmPorts sync.Map // *Kernel → *rocmPort, for tests that fake the runtime (export_test.go)

// rocmPort is the ROCm row of the shared GPU port (gpu_port.go) over
// module, which also holds the entry points it launches.
type rocmPort struct {
	gpuPort
	module *ROCmModule
}

func (p *rocmPort) Ready() error { return p.module.load() }

// check is c.check for one launch: phases are launched inside the
// kernel's call (PortPhases), never chained.
func (p *rocmPort) check(c *Call) error {
	if err := c.check(p.kernel); err != nil {
		return err
	}
	if c.Next != nil {
		return fmt.Errorf("kgenrt: kernel %s: the ROCm port launches one call, got a chain of phases", p.kernel.Name)
	}
	return nil
}

// Run binds ROCm tensors in place and copies host tensors to device
// memory (outputs too, so elements a kernel does not write keep their
// values), launches on the null stream (a kernel with PortPhases: its
// phases, with their workspaces), waits, and copies the host outputs back.
func (p *rocmPort) Run(c *Call) error {
	if err := p.check(c); err != nil {
		return err
	}
	bs := p.kernel.Tensors()
	for i, t := range c.Tensors {
		if t.dev != nil {
			return p.kernel.tensorErr(bs[i], "is a Metal tensor; the ROCm port runs host and ROCm tensors")
		}
	}
	if p.idle(c) {
		return nil
	}
	if err := p.Ready(); err != nil {
		return err
	}
	return p.runHost(c)
}

// Encode refuses: command buffers are Metal's.
func (p *rocmPort) Encode(*CommandBuffer, *Call) error {
	return fmt.Errorf("kgenrt: kernel %s: the ROCm port takes no Metal command buffer; use Run, or Enqueue on your HIP stream", p.kernel.Name)
}

// Enqueue binds c's tensors, which must all be ROCm tensors (NewROCm,
// WrapROCm), in place and launches on stream, a hipStream_t passed as a
// CUDAStream (0: the null stream): no copies, no waiting. A kernel with
// PortPhases launches its phases there, its workspaces allocated and
// freed in stream order (hipMallocAsync, hipFreeAsync).
func (p *rocmPort) Enqueue(stream CUDAStream, c *Call) error {
	if err := p.check(c); err != nil {
		return err
	}
	if c.Kernel != p.kernel {
		return fmt.Errorf("kgenrt: kernel %s: Enqueue launches the kernel's own call; run one of its phases by itself with Run", p.kernel.Name)
	}
	return p.enqueue(stream, c)
}

// ROCmLauncher is what the ROCm port adds to Port: a launch on the
// caller's HIP stream with the caller's raw device pointers (from another
// framework's allocator, say). Select(ROCm) returns a Port that implements
// it.
type ROCmLauncher interface {
	Port
	// LaunchROCm enqueues c on stream (a hipStream_t; 0: the null stream)
	// with ptrs bound in place of c's tensors (same order: inputs then
	// outputs), without copies or waiting. c's tensors give only dtypes and
	// shapes (the generated launcher's checks); each pointer must be
	// non-zero, 16-byte aligned and hold the tensor's bytes; outputs may
	// equal an input (in place), no other overlap. A kernel with PortPhases
	// launches its phases there, as Enqueue does.
	LaunchROCm(stream CUDAStream, c *Call, ptrs []DevicePtr) error
}

func (p *rocmPort) LaunchROCm(stream CUDAStream, c *Call, ptrs []DevicePtr) error {
	return p.launchDevicePtrs(p.check, "LaunchROCm", stream, c, ptrs)
}

// ROCmError is a failed HIP runtime call: the call, the hipError_t and the
// runtime's name and description of it.
type ROCmError struct {
	Call   string
	Result int
	Name   string
	Text   string
}

func (e *ROCmError) Error() string {
	return fmt.Sprintf("%s: %s (%d): %s", e.Call, e.Name, e.Result, e.Text)
}
