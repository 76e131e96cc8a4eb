package kgenrt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// The CUDA path. A kernel whose spec says `cuda: generated` has a .cu file
// (written by `kgen gen`) and a CUDAModule in its generated package; `kgen
// cuda` compiles the .cu with nvcc into <kernel>-<hash>.fatbin inside the
// package's cudabin/ folder, which the package embeds. At run time the port
// loads that fatbin through the CUDA driver API (libcuda.so.1, opened with
// purego: no cgo, no CUDA headers, CGO_ENABLED=0 builds), and launches the
// variant's extern "C" entry point with the tensors' device pointers in
// binding order and the args struct by value.
//
// Ready (and so Select and Available) fails, with the reason, when the
// driver cannot be opened, no device exists, the binary was not built (or was
// built from another version of the source), or the module does not load.

// CUDAFatbinDirEnv names a folder searched for <kernel>-<hash>.fatbin before
// the embedded binaries: for binaries built after the program (test binaries
// carried to a GPU machine, say).
const CUDAFatbinDirEnv = "KGEN_CUDA_FATBIN_DIR"

// CUDAModule is one kernel's compiled CUDA code, as the generated package
// describes it. Generated packages declare one per CUDA port.
type CUDAModule struct {
	Kernel   *Kernel
	Source   string // the .cu file, relative to the kgen.yaml folder
	Hash     string // the first 16 hex digits of the sha256 of the .cu file
	Binaries fs.FS  // the package's embedded binaries
	Dir      string // their folder inside Binaries
	// Library is set when the binary is a shared library of host
	// functions (matmul: CUTLASS), not a fatbin (cuda_library.go).
	Library *CUDALibrary

	once  sync.Once
	image []byte
	err   error
	mod   gpuModule
	// the entry points, looked up at load: per entry of Kernel.Variants
	// the kernel's own and each of Kernel.CUDAForms' phases', and each of
	// a PortPhases kernel's phases' (gpu.go)
	gpuEntries
}

// BinaryName is the file name of the module's fatbin.
func (m *CUDAModule) BinaryName() string {
	if m.Library != nil {
		return m.Kernel.Name + "-" + m.Hash + ".so"
	}
	return m.Kernel.Name + "-" + m.Hash + ".fatbin"
}

// binary finds the module's fatbin: in $KGEN_CUDA_FATBIN_DIR, then embedded.
func (m *CUDAModule) binary() ([]byte, error) {
	name := m.BinaryName()
	if dir := os.Getenv(CUDAFatbinDirEnv); dir != "" {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			return b, nil
		}
	}
	if m.Binaries != nil {
		if b, err := fs.ReadFile(m.Binaries, path.Join(m.Dir, name)); err == nil {
			return b, nil
		}
	}
	why := fmt.Sprintf("no CUDA binary %s for %s in the package's %s/ folder", name, m.Source, m.Dir)
	if stale := m.others(); len(stale) > 0 {
		why = fmt.Sprintf("%s; %s holds %s, built from another version of %s", why, m.Dir, strings.Join(stale, ", "), m.Source)
	}
	return nil, fmt.Errorf("%s: build it with `kgen cuda` (needs nvcc), then rebuild this program (or set %s to the folder holding it)", why, CUDAFatbinDirEnv)
}

// others lists the kernel's binaries for other hashes (stale builds).
func (m *CUDAModule) others() []string {
	if m.Binaries == nil {
		return nil
	}
	entries, err := fs.ReadDir(m.Binaries, m.Dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, m.Kernel.Name+"-") && strings.HasSuffix(n, path.Ext(m.BinaryName())) && n != m.BinaryName() {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// load opens the driver and loads the module once per process.
func (m *CUDAModule) load() error {
	m.once.Do(func() {
		if m.err = cudaDriver.ready(); m.err != nil {
			return
		}
		get := cudaDriver.getFunction
		if m.Library != nil {
			get = cudaLibraryFunction
			m.mod, m.err = m.openLibrary()
		} else if m.image, m.err = m.binary(); m.err == nil {
			m.mod, m.err = cudaDriver.loadModule(m.image)
		}
		if m.err != nil {
			m.err = fmt.Errorf("loading %s: %w", m.BinaryName(), m.err)
			return
		}
		m.lookup(m.Kernel, func(name string) (gpuFunction, error) { return get(m.mod, name) }, " in "+m.BinaryName(), true)
	})
	return m.err
}

// CUDAStream is a CUstream handle; 0 is the legacy default stream. The
// generated launchers' Enqueue takes one: Port.Enqueue launches there.
type CUDAStream uintptr

// Backend is CUDA: a stream's launches go to the CUDA port (Select(s.Backend())).
func (CUDAStream) Backend() Backend { return CUDA }

// DevicePtr is a CUdeviceptr.
type DevicePtr uintptr

// CUDALauncher is what the CUDA port adds to Port: a launch on the
// caller's stream with the caller's raw device pointers. Select(CUDA)
// returns a Port that implements it.
type CUDALauncher interface {
	Port
	// LaunchCUDA enqueues c on stream with ptrs bound in place of c's
	// tensors (same order: inputs then outputs), without copies or waiting.
	// c's tensors give only dtypes and shapes (the generated launcher's
	// checks); each pointer must be non-zero, 16-byte aligned and hold the
	// tensor's bytes; outputs may equal an input (in place), no other overlap.
	LaunchCUDA(stream CUDAStream, c *Call, ptrs []DevicePtr) error
}

// CUDAPort returns the CUDA port of kernel k over module m. Generated
// packages call it only inside their port tables.
func CUDAPort(k *Kernel, m *CUDAModule) Port {
	p := newCUDAPort(k, m)
	cudaPorts.Store(k, p)
	return p
}

// CUDAPortOf returns the CUDA port that CUDAPort made for k, for harnesses
// that handle kernels by descriptor (parity, benchmarks).
func CUDAPortOf(k *Kernel) (CUDALauncher, error) {
	if p, ok := cudaPorts.Load(k); ok {
		return p.(*cudaPort), nil
	}
	return nil, &PortError{Kernel: k.Name, Backend: CUDA, Fallback: k.Fallback}
}

var cudaPorts sync.Map // *Kernel → *cudaPort

// cudaPort is the CUDA row of the shared GPU port (gpu_port.go) over
// module, which also holds the entry points it launches.
type cudaPort struct {
	gpuPort
	module *CUDAModule
}

// newCUDAPort binds the shared port to m's entry points and, for a
// library module, its host functions.
func newCUDAPort(k *Kernel, m *CUDAModule) *cudaPort {
	p := &cudaPort{gpuPort: gpuPort{kernel: k, drv: cudaDriver, forms: true}}
	p.use(m)
	return p
}

// use makes m the port's module.
func (p *cudaPort) use(m *CUDAModule) {
	p.module, p.code, p.load, p.library = m, &m.gpuEntries, m.load, m.Library != nil
}

func (p *cudaPort) Ready() error { return p.module.load() }

// check is c.check for one launch: the CUDA port has no chained calls (a
// split kernel's phases are a Metal schedule; its CUDA slot, if any, is one
// launch).
func (p *cudaPort) check(c *Call) error {
	if err := c.check(p.kernel); err != nil {
		return err
	}
	if c.Next != nil {
		return fmt.Errorf("kgenrt: kernel %s: the CUDA port launches one call, got a chain of phases", p.kernel.Name)
	}
	return p.libraryCheck(c)
}

// Encode refuses: command buffers are Metal's. CUDA launches go on a stream.
func (p *cudaPort) Encode(*CommandBuffer, *Call) error {
	return fmt.Errorf("kgenrt: kernel %s: the CUDA port takes no Metal command buffer; use Run, or Enqueue on your stream", p.kernel.Name)
}

// Run binds CUDA tensors in place and copies host tensors to device memory
// (outputs too, so elements a kernel failed to write keep their host
// values), launches on the default stream, waits, and copies the host
// outputs back. In-place host tensors (the same bytes) share one device
// buffer.
func (p *cudaPort) Run(c *Call) error {
	if err := p.check(c); err != nil {
		return err
	}
	if p.idle(c) {
		return nil
	}
	if err := p.Ready(); err != nil {
		return err
	}
	return p.runHost(c)
}

// Enqueue binds c's tensors, which must all be CUDA tensors, in place and
// launches on stream: no copies, no waiting. c comes from a generated
// launcher, which has checked the tensors (dtypes, shapes, overlap).
func (p *cudaPort) Enqueue(stream CUDAStream, c *Call) error {
	if err := p.check(c); err != nil {
		return err
	}
	if c.Kernel != p.kernel {
		return fmt.Errorf("kgenrt: kernel %s: Enqueue launches the kernel's own call; run one of its phases by itself with Run or LaunchCUDA", p.kernel.Name)
	}
	return p.enqueue(stream, c)
}

// libraryCheck applies a library module's own limits to a call with work.
func (p *cudaPort) libraryCheck(c *Call) error {
	if p.module.Library == nil || c.empty() {
		return nil
	}
	return p.module.libraryCheck(c)
}

func (p *cudaPort) LaunchCUDA(stream CUDAStream, c *Call, ptrs []DevicePtr) error {
	return p.launchDevicePtrs(p.check, "LaunchCUDA", stream, c, ptrs)
}

// launchDevicePtrs is LaunchCUDA and LaunchROCm: c checked by the port's
// check, ptrs by the host path's rules (checkDevicePtrs), then c launched
// on stream with ptrs in place of its tensors.
func (p *gpuPort) launchDevicePtrs(check func(*Call) error, method string, stream CUDAStream, c *Call, ptrs []DevicePtr) error {
	if err := check(c); err != nil {
		return err
	}
	if err := checkDevicePtrs(c, ptrs, method); err != nil {
		return err
	}
	if p.idle(c) {
		return nil
	}
	if err := p.load(); err != nil {
		return err
	}
	return p.launch(stream, c, ptrs)
}

// checkDevicePtrs applies the host path's rules to device pointers: one per
// tensor, non-zero, 16-byte aligned (the kernels' vector loads), and no
// output overlapping another tensor except an identical input.
func checkDevicePtrs(c *Call, ptrs []DevicePtr, method string) error {
	k := c.Kernel
	var ibuf [16]int
	bs := k.tensorIndex(ibuf[:0])
	if len(ptrs) != len(bs) {
		return fmt.Errorf("kgenrt: kernel %s: %s takes %d device pointers, got %d", k.Name, method, len(bs), len(ptrs))
	}
	size := func(i int) uintptr { return uintptr(c.Tensors[i].nbytes()) }
	for i, ptr := range ptrs {
		if ptr == 0 || ptr%16 != 0 {
			return k.tensorErr(k.Bindings[bs[i]], fmt.Sprintf("device pointer %#x is null or not 16-byte aligned", uintptr(ptr)))
		}
	}
	for i, bi := range bs {
		b := &k.Bindings[bi]
		if b.Role != Output {
			continue
		}
		lo, hi := uintptr(ptrs[i]), uintptr(ptrs[i])+size(i)
		for j, bj := range bs {
			tlo, thi := uintptr(ptrs[j]), uintptr(ptrs[j])+size(j)
			if j == i || lo >= thi || tlo >= hi {
				continue
			}
			o := &k.Bindings[bj]
			if !(o.Role == Input && lo == tlo && hi == thi && c.Tensors[j].dtype == c.Tensors[i].dtype) {
				return k.tensorErr(*b, fmt.Sprintf("overlaps %s %s on the device; an output may share memory only with an identical input (in place)", o.Role, o.Name))
			}
		}
	}
	return nil
}

// CUDAError is a failed CUDA driver call: the call, the CUresult and the
// driver's name and description of it.
type CUDAError struct {
	Call   string
	Result int
	Name   string
	Text   string
}

func (e *CUDAError) Error() string {
	return fmt.Sprintf("%s: %s (%d): %s", e.Call, e.Name, e.Result, e.Text)
}

// errNoCUDADevice is Ready's reason when the driver loads but sees no GPU.
var errNoCUDADevice = errors.New("the CUDA driver reports no device")
