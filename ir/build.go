package ir

import (
	"math"

	"github.com/kgen-dev/kgen/backend"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/spec"
)

// DefaultTolerances apply to storage dtypes a spec gives no tolerance for.
// Each covers the storage rounding of the type (half an ulp at 1 is 2^-24,
// 2^-11, 2^-8) with room for a few ulps of compute error.
var DefaultTolerances = map[dtype.DType]Tolerance{
	dtype.F32:  {Abs: 1e-6, Rel: 1e-5},
	dtype.F16:  {Abs: 1e-3, Rel: 2e-3},
	dtype.BF16: {Abs: 1e-2, Rel: 1.6e-2},
}

// Build checks the formulas of every spec and lays each out as a Kernel.
// Kernels come back in spec-path order; a spec with errors yields none.
func Build(specs []*spec.Spec, diags *diag.List) []*Kernel {
	var out []*Kernel
	for _, s := range specs {
		var local diag.List
		k := buildKernel(s, &local)
		diags.Append(&local)
		if local.Len() == 0 && k != nil && k.Schedule != nil {
			out = append(out, k)
		}
	}
	return out
}

// kinds maps a spec's kind to its IR kind and the builder of its bindings
// and schedule: the one place ir branches on the kind.
var kinds = map[spec.Kind]struct {
	kind     Kind
	bindings func(s *spec.Spec, k *Kernel, diags *diag.List) []Binding
	schedule func(s *spec.Spec, k *Kernel, diags *diag.List) Schedule
}{
	spec.Elementwise: {Elementwise, bindings, elementwiseSchedule},
	spec.Rowwise:     {Rowwise, rowBindings, rowSchedule},
	spec.Matmul:      {KindMatmul, matmulBindings, matmulSchedule},
}

func buildKernel(s *spec.Spec, diags *diag.List) *Kernel {
	kb, ok := kinds[s.Kind]
	if !ok {
		diags.Addf(s.KindPos, "kind %s is not supported", s.Kind)
		return nil
	}
	k := &Kernel{
		Name: s.Kernel.Name, Doc: s.Doc, Kind: kb.kind, SpecPath: s.Path, NamePos: s.Kernel.Pos, Math: s.Math, Domain: s.Domain,
		Threadgroup: s.Threadgroup, Compute: s.Compute.Type,
	}
	checkPorts(s, diags)
	for b, p := range s.Ports {
		k.Ports[b] = p.Generated
	}
	if !s.Ports[spec.Metal].Generated && s.Ports[spec.Metal].Pos.Line == 0 {
		k.Ports[spec.Metal] = true // metal is generated unless the spec says null
	}
	k.Variants = variants(s, diags)
	for _, seg := range s.Segments {
		k.Segments = append(k.Segments, seg.Name)
	}
	k.Bindings = kb.bindings(s, k, diags)
	checkPinned(s, k, diags)
	checkBatchKind(s, diags)
	checkLimits(s, k, diags)
	checkIntTensors(s, k, diags)
	for _, c := range s.Constants {
		k.Constants = append(k.Constants, Constant{Name: c.Name.Name, Text: c.Text})
	}
	k.Steps = newFormulaChecker(s, k, diags).run()
	checkLiterals(s, k, diags)
	// A damaged spec silences the formula errors that follow from it
	// (spec.Spec.Damaged): its formulas are not whole, so never schedule them.
	if diags.Len() > 0 || len(s.Damaged) > 0 {
		return k
	}
	if s.Matmul != nil && s.Kind != spec.Matmul {
		diags.Addf(s.Matmul.Pos, "the matmul field is only for matmul kernels (kind: matmul)")
	}
	if s.Tile != nil && s.Kind != spec.Matmul {
		diags.Addf(s.Tile.Pos, "the tile field is only for matmul kernels (kind: matmul)")
	}
	if s.CUDATiles != nil && (s.Kind != spec.Matmul || !k.Ports[CUDA]) {
		diags.Addf(s.CUDATilesPos, "cuda_tiles sets the problem classes of a matmul's CUDA port: it needs kind: matmul and cuda: generated")
	}
	k.Schedule = kb.schedule(s, k, diags)
	if mm := k.Matmul(); mm != nil && k.Ports[ROCm] {
		mm.ROCm = hipGemmPlan(s, mm, diags)
	}
	return k
}

func elementwiseSchedule(s *spec.Spec, k *Kernel, _ *diag.List) Schedule {
	return &Elems{PerThread: elemsPerThread(k), CUDAPerThread: cudaPerThread(k), Batch: elemBatchNames(s, &diag.List{})}
}

// checkIntTensors rejects what integer tensors do not reach yet: an
// integer input or a pinned output dtype in matmul kernels.
func checkIntTensors(s *spec.Spec, k *Kernel, diags *diag.List) {
	if k.Kind != KindMatmul {
		return
	}
	for _, in := range s.Inputs {
		if in.DType.Type.IsInt() {
			diags.Addf(in.DType.Pos, "input %s: integer tensors (%s) are supported in elementwise and rowwise kernels, not matmul epilogues yet", in.Name.Name, in.DType.Type)
		}
	}
	for _, o := range s.Outputs {
		switch {
		case o.DType.Type.IsInt():
			diags.Addf(o.DType.Pos, "output %s: integer tensors (%s) are supported in elementwise and rowwise kernels, not matmul outputs", o.Name.Name, o.DType.Type)
		case o.DType.Type != dtype.Invalid:
			diags.Addf(o.DType.Pos, "output %s: a matmul output is stored in the variant's dtype; a pinned output dtype is for elementwise and rowwise kernels", o.Name.Name)
		}
	}
}

// checkLimits rejects a kernel with more buffers than a backend it has a
// port for can bind, at the spec, before any compiler sees it.
func checkLimits(s *spec.Spec, k *Kernel, diags *diag.List) {
	for b := Backend(0); b < NumBackends; b++ {
		lim := backend.Table[b].Buffers
		if !k.Ports[b] || len(k.Bindings) <= lim {
			continue
		}
		diags.Addf(s.Kernel.Pos, "kernel %s binds %d buffers (tensors and the args struct); %s allows %d per kernel", k.Name, len(k.Bindings), b, lim)
	}
}

// Generated lists the backends kgen writes ports for. A backend set here
// must have a row in emit/cfam's Dialects and emit/golang's ports
// (generate's TestEveryPortedBackendIsEmitted).
var Generated = [NumBackends]bool{Metal: true, CUDA: true, ROCm: true}

// checkPorts rejects ports kgen cannot generate: a backend outside
// Generated, and a ROCm port of a kind in rocmRefuses.
func checkPorts(s *spec.Spec, diags *diag.List) {
	for b := Backend(0); b < NumBackends; b++ {
		if s.Ports[b].Generated && !Generated[b] {
			diags.Addf(s.Ports[b].Pos, "kgen cannot generate a %s port yet; set `%s: null` (callers take their fallback path)", b, b)
		}
	}
	p := s.Ports[spec.ROCm]
	if why, refused := rocmRefuses[s.Kind]; p.Generated && refused {
		diags.Addf(p.Pos, "kgen cannot generate a rocm port of a %s kernel yet (%s); set `rocm: null` (callers take their fallback path)", s.Kind, why)
	}
}

// rocmRefuses lists the kinds the HIP dialect does not write, with the
// reason: the one place that decides which kinds a ROCm port may have.
// Every kind has a HIP writer now; a matmul's features the HIP GEMM does
// not write are refused by hipGemmPlan (matmul_rocm.go).
var rocmRefuses = map[spec.Kind]string{}

func variants(s *spec.Spec, diags *diag.List) []Variant {
	tol := map[dtype.DType]Tolerance{}
	for _, t := range s.Tolerances {
		tol[t.DType.Type] = Tolerance{Abs: t.Abs, Rel: t.Rel}
		if !hasDType(s, t.DType.Type) {
			diags.Addf(t.DType.Pos, "tolerance for %s, which is not one of this kernel's dtypes %v", t.DType.Type, typeNames(s.DTypes))
		}
	}
	var out []Variant
	for _, d := range s.DTypes {
		t, ok := tol[d.Type]
		if !ok {
			t = DefaultTolerances[d.Type]
		}
		out = append(out, Variant{DType: d.Type, HostName: s.Kernel.Name + "_" + d.Type.String(), Tolerance: t})
	}
	return out
}

func hasDType(s *spec.Spec, t dtype.DType) bool {
	for _, d := range s.DTypes {
		if d.Type == t {
			return true
		}
	}
	return false
}

func typeNames(ts []spec.TypeRef) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Type.String())
	}
	return out
}

// bindings fixes buffer indices: inputs in order, outputs in order, then the
// args struct (size fields, then params; 4 bytes each, no padding).
func bindings(s *spec.Spec, _ *Kernel, diags *diag.List) []Binding {
	if len(s.Segments) > 0 {
		diags.Addf(s.SegmentsPos, "segments are only for rowwise kernels (kind: rowwise)")
	}
	refuseQuantInputs(s, diags, "an elementwise kernel")
	var out []Binding
	for _, in := range s.Inputs {
		checkDims(in, diags, "an elementwise input has shape [n] (every tensor has n elements)", Shape{"n"})
		out = append(out, Binding{Index: len(out), Name: in.Name.Name, Role: Input, DType: in.DType.Type, Shape: Shape{"n"}})
	}
	for _, o := range s.Outputs {
		out = append(out, Binding{Index: len(out), Name: o.Name.Name, Role: Output, DType: o.DType.Type, Shape: Shape{"n"}})
	}
	batch := elemBatchNames(s, diags)
	fields := []Field{{Name: "n", Type: dtype.U32, Offset: 0, Size: true}}
	fields = append(fields, specBatchBindings(s, batch, out, diags)...)
	for _, p := range s.Params {
		fields = append(fields, Field{Name: p.Name.Name, Type: p.Type.Type, Example: p.ExampleText})
	}
	fields = append(fields, batchTail(batch, out)...)
	for i := range fields {
		fields[i].Offset = 4 * i
	}
	return append(out, Binding{Index: len(out), Name: "args", Role: Args, Fields: fields})
}

// elemsPerThread gives each thread 16 bytes of its narrowest tensor.
func elemsPerThread(k *Kernel) int {
	narrowest := 4
	for _, b := range k.Bindings {
		if b.Role == Args {
			continue
		}
		types := []dtype.DType{b.DType}
		if b.DType == dtype.Invalid {
			types = nil
			for _, v := range k.Variants {
				types = append(types, v.DType)
			}
		}
		for _, t := range types {
			if t.Size() < narrowest && t.Size() > 0 {
				narrowest = t.Size()
			}
		}
	}
	return 16 / narrowest
}

// checkLiterals rejects literals and constants that overflow a compute type.
func checkLiterals(s *spec.Spec, k *Kernel, diags *diag.List) {
	types := k.ComputeTypes()
	for _, c := range s.Constants {
		if c.Text == "" { // no value; spec reported it
			continue
		}
		for _, t := range types {
			if v, err := dtype.Literal(c.Text, t); err != nil || math.IsInf(v, 0) {
				diags.Addf(c.Pos, "constant %s = %s overflows the compute type %s", c.Name.Name, c.Text, t)
				break
			}
		}
	}
}

// checkPinned refuses a kernel whose every tensor is pinned to a dtype
// with more than one variant: the launcher tells variants apart by the
// dtype of a tensor of the variant's storage type, and such variants would
// be one kernel under several names. With one dtype, the launcher takes
// the only variant (kgenrt.Kernel.Check).
func checkPinned(s *spec.Spec, k *Kernel, diags *diag.List) {
	if len(s.DTypes) < 2 {
		return
	}
	for _, b := range k.Bindings {
		if b.Role != Args && b.DType == dtype.Invalid {
			return
		}
	}
	diags.Addf(s.DTypes[1].Pos, "every tensor of %s has a dtype of its own, so its %d variants would be the same kernel: list one dtype (dtypes: [%s])", s.Kernel.Name, len(s.DTypes), s.DTypes[0].Type)
}
