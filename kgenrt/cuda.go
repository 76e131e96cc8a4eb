package kgenrt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/kgen-dev/kgen/launch"
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
	mod   cudaModuleHandle
	fns   sync.Map // host name → cudaFunction
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
		if m.err = cudaReady(); m.err != nil {
			return
		}
		if m.Library != nil {
			m.mod, m.err = m.openLibrary()
			return
		}
		if m.image, m.err = m.binary(); m.err != nil {
			return
		}
		m.mod, m.err = cudaLoadModule(m.image)
		if m.err != nil {
			m.err = fmt.Errorf("loading %s: %w", m.BinaryName(), m.err)
		}
	})
	return m.err
}

// function returns the entry point of a variant, looked up once.
func (m *CUDAModule) function(hostName string) (cudaFunction, error) {
	if f, ok := m.fns.Load(hostName); ok {
		return f.(cudaFunction), nil
	}
	get := cudaGetFunction
	if m.Library != nil {
		get = cudaLibraryFunction
	}
	f, err := get(m.mod, hostName)
	if err != nil {
		return 0, fmt.Errorf("kgenrt: kernel %s: entry point %s in %s: %w", m.Kernel.Name, hostName, m.BinaryName(), err)
	}
	m.fns.Store(hostName, f)
	return f, nil
}

// CUDAStream is a CUstream handle; 0 is the legacy default stream.
type CUDAStream uintptr

// DevicePtr is a CUdeviceptr.
type DevicePtr uintptr

// CUDALauncher is what the CUDA port adds to Port: a launch on the caller's
// stream with the caller's device memory. Select(CUDA) returns a Port that
// implements it.
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
	p := &cudaPort{kernel: k, module: m}
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

type cudaPort struct {
	kernel *Kernel
	module *CUDAModule
}

func (p *cudaPort) Backend() Backend { return CUDA }

func (p *cudaPort) Ready() error { return p.module.load() }

// Encode refuses: command buffers are Metal's. CUDA launches go on a stream.
func (p *cudaPort) Encode(*CommandBuffer, *Call) error {
	return fmt.Errorf("kgenrt: kernel %s: the CUDA port takes no Metal command buffer; use Run, or LaunchCUDA on your stream", p.kernel.Name)
}

// Run copies host tensors to device memory (outputs too, so elements a
// kernel failed to write keep their host values), launches on the default
// stream, waits, and copies the outputs back. In-place tensors (the same
// host bytes) share one device buffer.
func (p *cudaPort) Run(c *Call) error {
	if err := c.check(p.kernel); err != nil {
		return err
	}
	if err := p.libraryCheck(c); err != nil {
		return err
	}
	if c.empty() {
		return nil
	}
	if err := p.Ready(); err != nil {
		return err
	}
	return cudaRunHost(p, c)
}

// libraryCheck applies a library module's own limits to a call with work.
func (p *cudaPort) libraryCheck(c *Call) error {
	if p.module.Library == nil || c.empty() {
		return nil
	}
	return p.module.libraryCheck(c)
}

func (p *cudaPort) LaunchCUDA(stream CUDAStream, c *Call, ptrs []DevicePtr) error {
	if err := c.check(p.kernel); err != nil {
		return err
	}
	if err := checkDevicePtrs(c, ptrs); err != nil {
		return err
	}
	if err := p.libraryCheck(c); err != nil {
		return err
	}
	if c.empty() {
		return nil
	}
	if err := p.Ready(); err != nil {
		return err
	}
	return cudaLaunch(p, stream, c, ptrs)
}

// checkDevicePtrs applies the host path's rules to device pointers: one per
// tensor, non-zero, 16-byte aligned (the kernels' vector loads), and no
// output overlapping another tensor except an identical input.
func checkDevicePtrs(c *Call, ptrs []DevicePtr) error {
	k := c.Kernel
	bs := k.Tensors()
	if len(ptrs) != len(bs) {
		return fmt.Errorf("kgenrt: kernel %s: LaunchCUDA takes %d device pointers, got %d", k.Name, len(bs), len(ptrs))
	}
	size := func(i int) uintptr { return uintptr(len(c.Tensors[i].data)) }
	for i, ptr := range ptrs {
		if ptr == 0 || ptr%16 != 0 {
			return k.tensorErr(bs[i], fmt.Sprintf("device pointer %#x is null or not 16-byte aligned", uintptr(ptr)))
		}
	}
	for i, b := range bs {
		if b.Role != Output {
			continue
		}
		lo, hi := uintptr(ptrs[i]), uintptr(ptrs[i])+size(i)
		for j := range bs {
			tlo, thi := uintptr(ptrs[j]), uintptr(ptrs[j])+size(j)
			if j == i || lo >= thi || tlo >= hi {
				continue
			}
			if !(bs[j].Role == Input && lo == tlo && hi == thi && c.Tensors[j].dtype == c.Tensors[i].dtype) {
				return k.tensorErr(b, fmt.Sprintf("overlaps %s %s on the device; an output may share memory only with an identical input (in place)", bs[j].Role, bs[j].Name))
			}
		}
	}
	return nil
}

// cudaLaunchOf evaluates the descriptor's CUDA launch for c: the size
// fields the call's args struct holds (plus the variant's element size,
// launch.ElemBytes) give the derived fields, written into a copy of the
// args, and the grid, launched as Grid[0] / Threadgroup[0] blocks of a 1-D
// group. The rules are the IR's (ir.Schedule.Launch), so kgenrt decides
// nothing about a kind's geometry itself.
func cudaLaunchOf(c *Call) (args []byte, blocks, threads uint32, err error) {
	k := c.Kernel
	l := k.Launch[CUDA]
	tg := l.Threadgroup[0]
	if l.Grid[0] == nil || tg <= 0 || tg > 1024 || l.Threadgroup[1] != 1 || l.Threadgroup[2] != 1 {
		return nil, 0, 0, fmt.Errorf("kgenrt: kernel %s: its CUDA launch (threadgroup %v) is not a 1-D launch of at most 1024 threads per block", k.Name, l.Threadgroup)
	}
	given := map[string]int{launch.ElemBytes: c.Variant.DType.Size()}
	offsets := map[string]int{}
	for _, f := range k.ArgsBinding().Fields {
		if f.Size {
			given[f.Name], offsets[f.Name] = int(binary.LittleEndian.Uint32(c.Args[f.Offset:])), f.Offset
		}
	}
	sizes, err := l.Sizes(given)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("kgenrt: kernel %s: %w", k.Name, err)
	}
	args = append([]byte(nil), c.Args...)
	for _, d := range l.Derived {
		binary.LittleEndian.PutUint32(args[offsets[d.Field]:], uint32(sizes[d.Field]))
	}
	grid, err := l.GridSize(sizes)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("kgenrt: kernel %s: %w", k.Name, err)
	}
	if grid[1] != 1 || grid[2] != 1 {
		return nil, 0, 0, fmt.Errorf("kgenrt: kernel %s: CUDA grid %v is not 1-D", k.Name, grid)
	}
	b := CeilDiv(grid[0], tg)
	if b > 1<<31-1 {
		return nil, 0, 0, fmt.Errorf("kgenrt: kernel %s: %d blocks exceed CUDA's grid limit", k.Name, b)
	}
	return args, uint32(b), uint32(tg), nil
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
