package kgenrt

import (
	"fmt"
	"sync"
)

// gpuPort is what the CUDA and ROCm ports share: a kernel's launch over
// one driver table. The ports embed it and add how their code is found
// (cudaPort, rocmPort); everything from a checked call to the driver's
// launch is here and in gpu_phases.go.
type gpuPort struct {
	kernel *Kernel
	drv    *gpuDriver
	// code is the loaded module's entry points (valid once load succeeds);
	// load is the port's Ready: its module loaded once.
	code *gpuEntries
	load func() error
	// forms: the port picks Kernel.CUDAForms by size (CUDA's).
	forms bool
	// library: the entry points are a CUDA library module's host
	// functions (CUTLASS, cuda_library.go), called in place of a launch.
	// A static call, not a func field: through a func value the call and
	// its pointers would escape, and a launch would allocate.
	library bool

	geomOnce  sync.Once
	geom      *cudaGeom
	formGeoms []*cudaGeom // per Kernel.CUDAForms: its phase's launch
}

func (p *gpuPort) Backend() Backend { return p.drv.backend }

// geometry returns the launch of the kernel (f < 0) or of form f's phase
// on the port's backend, prepared once.
func (p *gpuPort) geometry(f int) *cudaGeom {
	p.geomOnce.Do(func() {
		p.geom = newGeom(p.kernel, p.drv.backend)
		if p.forms {
			for _, form := range p.kernel.CUDAForms {
				p.formGeoms = append(p.formGeoms, newGeom(p.kernel.Phases[form.Phase], p.drv.backend))
			}
		}
	})
	if f >= 0 {
		return p.formGeoms[f]
	}
	return p.geom
}

// form is the CUDAForms entry a call of the kernel itself takes (the
// first whose size field is at most its bound), or -1 for the kernel's own
// entry point.
func (p *gpuPort) form(c *Call) int {
	if c.Kernel != p.kernel || !p.forms {
		return -1
	}
	for f, form := range p.kernel.CUDAForms {
		if v, ok := sizeField(c, form.Field); ok && int(v) <= form.AtMost {
			return f
		}
	}
	return -1
}

// idle reports whether the call launches nothing: an empty grid, except
// for a kernel with PortPhases, whose later launches may have work where
// its first has none (no rows, yet [cols] outputs to write).
func (p *gpuPort) idle(c *Call) bool { return c.empty() && !p.kernel.PortPhases }

// launch enqueues c's variant with ptrs and the args struct (its derived
// fields by the backend's launch) as the kernel parameters, from a reused
// parameter buffer: nothing here allocates.
func (p *gpuPort) launch(stream CUDAStream, c *Call, ptrs []DevicePtr) error {
	if p.kernel.PortPhases || p.splits() {
		if c.Kernel == p.kernel {
			return p.launchPhases(stream, c, ptrs)
		}
		return p.launchPhase(stream, c, ptrs)
	}
	return p.launchOwn(stream, c, ptrs)
}

// splits reports whether the kernel may launch its phases on this port
// (Kernel.PortSplit); launchPhases decides per call.
func (p *gpuPort) splits() bool {
	s := p.kernel.PortSplit
	return s != nil && s.Backend == p.drv.backend
}

// launchOwn enqueues c as one launch: the kernel's own entry point, or
// that of its CUDAForms phase for c's sizes, or its library function.
func (p *gpuPort) launchOwn(stream CUDAStream, c *Call, ptrs []DevicePtr) error {
	f := p.form(c)
	fn, err := p.code.function(c.Variant, f)
	if err != nil {
		return err
	}
	if p.library {
		return cudaCallLibrary(fn, stream, c, ptrs)
	}
	buf := getLaunchBuf()
	defer launchBufs.Put(buf)
	geom := p.geometry(f)
	blocks, err := geom.prepare(c, ptrs, buf)
	if err != nil {
		return err
	}
	if err := p.drv.launch(fn, blocks, geom.threads, stream, buf); err != nil {
		return fmt.Errorf("kgenrt: kernel %s: %s: %w", p.kernel.Name, c.Variant.HostName, err)
	}
	return nil
}

// enqueue binds c's tensors, which must all be device tensors of the
// port's backend, in place and launches on stream: no copies, no waiting.
// c comes from a generated launcher, which has checked the tensors
// (dtypes, shapes, overlap); nothing here allocates.
func (p *gpuPort) enqueue(stream CUDAStream, c *Call) error {
	var buf [16]DevicePtr
	ptrs := buf[:0]
	i := 0
	for _, b := range p.kernel.Bindings {
		if b.Role == Args {
			continue
		}
		t, name := c.Tensors[i], p.drv.backend.title()
		switch {
		case t.gpu == nil:
			return p.kernel.tensorErr(b, "is in host memory; Enqueue binds "+name+" tensors only (kgenrt.New"+name+", Wrap"+name+"): use Run to stage host tensors")
		case t.gpu.drv != p.drv:
			return p.kernel.tensorErr(b, "is a "+t.gpu.drv.backend.title()+" tensor; the "+name+" port binds "+name+" tensors")
		case t.gpu.freed:
			return p.kernel.tensorErr(b, "is a "+name+" tensor that was freed")
		}
		ptrs = append(ptrs, t.gpuPtr())
		i++
	}
	if p.idle(c) {
		return nil
	}
	if err := p.load(); err != nil {
		return err
	}
	return p.launch(stream, c, ptrs)
}

// foreign refuses a device tensor of another GPU backend in a Run: its
// memory is neither the port's device's nor the host's.
func (p *gpuPort) foreign(c *Call) error {
	for i, t := range c.Tensors {
		if t.gpu != nil && t.gpu.drv != p.drv {
			name := p.drv.backend.title()
			return c.Kernel.tensorErr(c.Kernel.Tensors()[i], "is a "+t.gpu.drv.backend.title()+" tensor; the "+name+" port binds "+name+" tensors and stages host tensors")
		}
	}
	return nil
}

// runHost stages c's host tensors through temporary device buffers (the
// outputs too, so elements a kernel failed to write keep their host
// values; host tensors that are the same bytes share one buffer), binds
// the port's own device tensors in place, launches on the default stream,
// waits, and copies the host outputs back: a strided output element by
// element, so its gaps (which another output may own) keep their bytes.
func (p *gpuPort) runHost(c *Call) error {
	if err := p.foreign(c); err != nil {
		return err
	}
	d := p.drv
	return d.session(func() error {
		ptrs := make([]DevicePtr, len(c.Tensors))
		var allocated []DevicePtr
		defer func() {
			for _, a := range allocated {
				d.free(a)
			}
		}()
		plan := stages(c)
		for i, st := range plan {
			if st.Tensor.gpu != nil {
				ptrs[i] = st.Tensor.gpuPtr() // bound in place, at its offset
				continue
			}
			if st.SameAs >= 0 {
				ptrs[i] = ptrs[st.SameAs]
				continue
			}
			data := st.Tensor.data
			if len(data) == 0 {
				continue // an empty segment: the kernel reads and writes none of it
			}
			a, err := d.alloc(len(data))
			if err != nil {
				return err
			}
			allocated = append(allocated, a)
			ptrs[i] = a
			if err := d.toDevice(a, data); err != nil {
				return err
			}
		}
		if err := p.launch(0, c, ptrs); err != nil {
			return err
		}
		if err := d.sync("after " + c.Variant.HostName); err != nil {
			return err
		}
		for i, st := range plan {
			if !st.CopyOut || st.Tensor.gpu != nil || len(st.Tensor.data) == 0 {
				continue
			}
			if st.Tensor.strides == nil {
				if err := d.toHost(st.Tensor.data, ptrs[i]); err != nil {
					return err
				}
				continue
			}
			img := make([]byte, len(st.Tensor.data))
			if err := d.toHost(img, ptrs[i]); err != nil {
				return err
			}
			st.Tensor.copyElems(st.Tensor.data, img)
		}
		return nil
	})
}
