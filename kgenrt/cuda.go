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

	once   sync.Once
	image  []byte
	err    error
	mod    cudaModuleHandle
	fns    []cudaFunction // per entry of Kernel.Variants, looked up at load
	fnErrs []error
	// formFns[f][i] is the entry point of Kernel.CUDAForms[f]'s phase for
	// the storage dtype of Kernel.Variants[i] (formErrs likewise).
	formFns  [][]cudaFunction
	formErrs [][]error
	// phaseFns and phaseErrs are each phase's, per entry of its Variants,
	// for a kernel with PortPhases (cuda_phases.go).
	phaseFns  [][]cudaFunction
	phaseErrs [][]error
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
		get := cudaGetFunction
		if m.Library != nil {
			get = cudaLibraryFunction
			m.mod, m.err = m.openLibrary()
		} else if m.image, m.err = m.binary(); m.err == nil {
			m.mod, m.err = cudaLoadModule(m.image)
		}
		if m.err != nil {
			m.err = fmt.Errorf("loading %s: %w", m.BinaryName(), m.err)
			return
		}
		// Every variant's entry point, once: a launch then indexes a slice.
		// A missing one fails only the launches of its variant.
		m.fns, m.fnErrs = m.entries(get, m.Kernel)
		for _, f := range m.Kernel.CUDAForms {
			fns, errs := m.entries(get, m.Kernel.Phases[f.Phase])
			m.formFns, m.formErrs = append(m.formFns, fns), append(m.formErrs, errs)
		}
		if m.Kernel.PortPhases {
			m.phaseFunctions(get)
		}
	})
	return m.err
}

// entries looks up the entry point of kernel pk (the module's kernel or
// one of its phases) for each storage dtype of the module kernel's
// variants, in their order.
func (m *CUDAModule) entries(get func(cudaModuleHandle, string) (cudaFunction, error), pk *Kernel) ([]cudaFunction, []error) {
	vs := m.Kernel.Variants
	fns, errs := make([]cudaFunction, len(vs)), make([]error, len(vs))
	for i, v := range vs {
		host := ""
		for _, pv := range pk.Variants {
			if pv.DType == v.DType {
				host = pv.HostName
			}
		}
		if host == "" {
			errs[i] = fmt.Errorf("kgenrt: kernel %s: %s has no %s variant", m.Kernel.Name, pk.Name, v.DType)
			continue
		}
		if fns[i], errs[i] = get(m.mod, host); errs[i] != nil {
			errs[i] = fmt.Errorf("kgenrt: kernel %s: entry point %s in %s: %w", m.Kernel.Name, host, m.BinaryName(), errs[i])
		}
	}
	return fns, errs
}

// function returns the entry point of variant v (an entry of the kernel's
// dtype-key table, or one with the same host name): the kernel's own, or
// with form f >= 0 that of Kernel.CUDAForms[f]'s phase.
func (m *CUDAModule) function(v *Variant, f int) (cudaFunction, error) {
	vs := m.Kernel.Variants
	for i := range vs {
		if &vs[i] == v || vs[i].HostName == v.HostName {
			if f >= 0 {
				return m.formFns[f][i], m.formErrs[f][i]
			}
			return m.fns[i], m.fnErrs[i]
		}
	}
	return 0, fmt.Errorf("kgenrt: kernel %s: no variant %s in its dtype-key table", m.Kernel.Name, v.HostName)
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

// launchKernel is the driver launch; tests without a GPU replace it to time
// and count the host path up to the driver (export_test.go).
var launchKernel = cudaLaunchKernel

type cudaPort struct {
	kernel *Kernel
	module *CUDAModule

	geomOnce sync.Once
	geom     *cudaGeom
	forms    []*cudaGeom // per Kernel.CUDAForms: its phase's CUDA launch
}

func (p *cudaPort) Backend() Backend { return CUDA }

func (p *cudaPort) Ready() error { return p.module.load() }

// geometry returns the CUDA launch of the kernel (f < 0) or of form f's
// phase, prepared once.
func (p *cudaPort) geometry(f int) *cudaGeom {
	p.geomOnce.Do(func() {
		p.geom = newCUDAGeom(p.kernel)
		for _, form := range p.kernel.CUDAForms {
			p.forms = append(p.forms, newCUDAGeom(p.kernel.Phases[form.Phase]))
		}
	})
	if f >= 0 {
		return p.forms[f]
	}
	return p.geom
}

// form is the CUDAForms entry a call of the kernel itself takes (the
// first whose size field is at most its bound), or -1 for the kernel's own
// entry point.
func (p *cudaPort) form(c *Call) int {
	if c.Kernel != p.kernel {
		return -1
	}
	for f, form := range p.kernel.CUDAForms {
		if v, ok := sizeField(c, form.Field); ok && int(v) <= form.AtMost {
			return f
		}
	}
	return -1
}

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
	return cudaRunHost(p, c)
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
	var buf [16]DevicePtr
	ptrs := buf[:0]
	i := 0
	for _, b := range p.kernel.Bindings {
		if b.Role == Args {
			continue
		}
		t := c.Tensors[i]
		switch {
		case t.cuda == nil:
			return p.kernel.tensorErr(b, "is in host memory; Enqueue binds CUDA tensors only (kgenrt.NewCUDA, WrapCUDA): use Run to stage host tensors")
		case t.cuda.freed:
			return p.kernel.tensorErr(b, "is a CUDA tensor that was freed")
		}
		ptrs = append(ptrs, t.cudaPtr())
		i++
	}
	if p.idle(c) {
		return nil
	}
	if err := p.Ready(); err != nil {
		return err
	}
	return p.launch(stream, c, ptrs)
}

// idle reports whether the call launches nothing: an empty grid, except
// for a kernel with PortPhases, whose later launches may have work where
// its first has none (no rows, yet [cols] outputs to write).
func (p *cudaPort) idle(c *Call) bool { return c.empty() && !p.kernel.PortPhases }

// libraryCheck applies a library module's own limits to a call with work.
func (p *cudaPort) libraryCheck(c *Call) error {
	if p.module.Library == nil || c.empty() {
		return nil
	}
	return p.module.libraryCheck(c)
}

func (p *cudaPort) LaunchCUDA(stream CUDAStream, c *Call, ptrs []DevicePtr) error {
	if err := p.check(c); err != nil {
		return err
	}
	if err := checkDevicePtrs(c, ptrs); err != nil {
		return err
	}
	if p.idle(c) {
		return nil
	}
	if err := p.Ready(); err != nil {
		return err
	}
	return p.launch(stream, c, ptrs)
}

// launch enqueues c's variant with ptrs and the args struct (its derived
// fields by the CUDA launch) as the kernel parameters, from a reused
// parameter buffer: nothing here allocates.
func (p *cudaPort) launch(stream CUDAStream, c *Call, ptrs []DevicePtr) error {
	if p.kernel.PortPhases {
		if c.Kernel == p.kernel {
			return p.launchPhases(stream, c, ptrs)
		}
		return p.launchPhase(stream, c, ptrs)
	}
	f := p.form(c)
	fn, err := p.module.function(c.Variant, f)
	if err != nil {
		return err
	}
	if p.module.Library != nil {
		return cudaCallLibrary(fn, stream, c, ptrs)
	}
	buf := getLaunchBuf()
	defer launchBufs.Put(buf)
	geom := p.geometry(f)
	blocks, err := geom.prepare(c, ptrs, buf)
	if err != nil {
		return err
	}
	if err := launchKernel(fn, blocks, geom.threads, stream, buf); err != nil {
		return fmt.Errorf("kgenrt: kernel %s: %s: %w", p.kernel.Name, c.Variant.HostName, err)
	}
	return nil
}

// checkDevicePtrs applies the host path's rules to device pointers: one per
// tensor, non-zero, 16-byte aligned (the kernels' vector loads), and no
// output overlapping another tensor except an identical input.
func checkDevicePtrs(c *Call, ptrs []DevicePtr) error {
	k := c.Kernel
	var ibuf [16]int
	bs := k.tensorIndex(ibuf[:0])
	if len(ptrs) != len(bs) {
		return fmt.Errorf("kgenrt: kernel %s: LaunchCUDA takes %d device pointers, got %d", k.Name, len(bs), len(ptrs))
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
