package kgenrt

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/launch"
)

// Kernel describes one generated kernel to the runtime. Generated packages
// declare one per spec; nothing in kgenrt lists kernels or their dtypes.
type Kernel struct {
	Name     string // the spec's kernel name, "gelu_tanh"
	Spec     string // the spec file, relative to the kgen.yaml folder
	Kind     string // "elementwise", "rowwise": for messages and listings only
	Math     string // "precise" or "fast": the library's math mode
	Source   string // the whole MSL source, as written to the .metal file
	Fallback string // the Go expression of the CPU reference, for messages
	// Variants is the dtype-key table: one entry per storage dtype. A dtype
	// not in it is a *DTypeError, never another variant's kernel.
	Variants []Variant
	// Bindings is the kernel signature in buffer-index order: inputs,
	// outputs, then the args struct.
	Bindings       []Binding
	ElemsPerThread int // elements each thread handles at most
	// Launch is the kernel's launch per backend (zero for a backend without
	// a port): the grid as expressions over the args struct's size fields,
	// the threads per group, and the size fields the launcher derives with
	// their rules. The generated launcher renders the Metal one as Go; the
	// CUDA port evaluates its own from the call's size fields.
	Launch [NumBackends]launch.Launch

	// CPU and CPU64 are the kernel's generated CPU reference and float64
	// evaluation in generic form, set by the generated package's init, for
	// callers that handle kernels by descriptor (parity harnesses,
	// benchmarks); call them through RunCPU and RunCPU64, which check the
	// argument counts. K.Reference and K.Reference64 are the typed forms.
	// CPU64's sizes are those its inputs' lengths cannot tell (a rowwise
	// kernel's cols; nil for elementwise kernels), see Sizes64.
	CPU   func(tensors []*Tensor, params []float64) error
	CPU64 func(sizes Sizes, inputs [][]float64, params []float64) ([][]float64, error)

	// Batch is a strided kernel's leading (batch) dims in launch order, by
	// size field name (["b", "h"]): the grid's z index flattens them
	// row-major, the last fastest. Each binding's Batch is a subsequence of
	// it. Empty for the dense kernels (see Strided).
	Batch []string

	// Phases are the launches of the kernel's split form (a row-reducing
	// matmul wider than its threadgroup-memory strip): more entry points of
	// Source, each with its own bindings, variants and launch, chained in
	// one call by Call.Next. The kernel's ports run them; nil for most
	// kernels.
	Phases []*Kernel
	// PortPhases marks a kernel with no one-launch form (a rowwise kernel
	// with column reductions): the ports that do not chain calls (CUDA,
	// ROCm, Backend.ChainsPhases) launch Phases in order inside the
	// kernel's one call, with the workspaces (the phase bindings the kernel
	// lacks) allocated on the call's stream (gpu_phases.go).
	PortPhases bool
	// PortSplit, when set, is when the GPU port of its Backend launches
	// Phases as for PortPhases instead of the kernel's own entry point: a
	// derived size field of the port's launch above a bound (a batched
	// chain's flash decoding, kgen_splits > 1). nil: the kernel's own.
	PortSplit *PortSplit

	// CUDAForms are the CUDA port's launches by size, tried in order: the
	// first whose size field is at most its bound runs its phase's entry
	// point alone, in place of the kernel's own (a quantized matmul's
	// skinny kernel for m <= 16); nil: always the kernel's own. The port
	// decides per call, so Run, Enqueue and LaunchCUDA launch alike.
	CUDAForms []CUDAForm
}

// PortSplit is Kernel.PortSplit: on Backend, Phases when size field Field
// (derived by the backend's launch) is above Above.
type PortSplit struct {
	Backend Backend
	Field   string
	Above   int
}

// CUDAForm is one of Kernel.CUDAForms: Phases[Phase] when size field
// Field is at most AtMost.
type CUDAForm struct {
	Phase  int
	Field  string
	AtMost int
}

// Strided reports whether the kernel has batch dims and reads its tensors
// through strides (Field.StrideOf): it takes any view, and each tensor's
// rank is exact (Binding.Batch ++ Binding.Shape). The other kernels read
// dense tensors, take contiguous views only, and keep Binding.Shape's
// flattening rules.
func (k *Kernel) Strided() bool { return len(k.Batch) > 0 }

// ChainsPhases reports whether backend b's port runs a split kernel's
// phases as a chain of calls (Call.Next) that the generated call builder
// lays out, with workspaces from NewWorkspace: Metal's. The CUDA port runs
// its own split (one CUTLASS GEMM per B, then a generated kernel) inside
// the one call of its library's host function, so its call is the
// kernel's own whatever n is.
func (b Backend) ChainsPhases() bool { return b == Metal }

// Variant is one storage dtype's instantiation of a kernel.
type Variant struct {
	DType    DType
	HostName string // the MSL [[host_name]], "<kernel>_<dtype>"
	Key      string // hex sha256 of everything that shapes the compiled kernel
}

// Role is what a binding is for.
type Role int

// The binding roles, in binding order.
const (
	Input Role = iota
	Output
	Args
)

func (r Role) String() string {
	switch r {
	case Input:
		return "input"
	case Output:
		return "output"
	case Args:
		return "args"
	}
	return "role(?)"
}

// Binding is one [[buffer(Index)]] of the kernel.
type Binding struct {
	Index  int
	Name   string
	Role   Role
	DType  DType   // T = the variant's storage dtype; unused for Args
	Fields []Field // the args struct, for Args
	// Shape names a tensor's dimensions by the args struct's size fields,
	// outermost first: [n] (elementwise), [rows, cols] (rowwise; a segment's
	// tensors [<segment>_rows, cols]), [cols] for a row vector every row
	// shares. Check binds a tensor's trailing dims to the later sizes one
	// each and its leading dims, flattened, to the first, unless that size
	// is another shape's later dim (cols): then it takes exactly one dim.
	// Unused for Args.
	Shape []string
	// Batch are the binding's leading dims, before Shape, for a Strided
	// kernel: a subsequence of Kernel.Batch, each entry a size name ("h":
	// the dim is that size), "h/group" (group a size field: the launcher
	// derives group = h / dim, the GQA/MQA group of a K or V tensor with
	// fewer heads) or "h/4" (a baked group: the dim must be h/4). The
	// tensor's shape is Batch ++ Shape exactly.
	Batch []string
	// Paired marks an input the kernel reads at paired elements (rotary
	// embeddings): Check wants its last dim even and no output in place
	// over it.
	Paired bool
	// Indexed marks a tensor the kernel reads or writes at computed
	// coordinates (docs/indexing.md): an input a gather reads, an output a
	// positioned write writes. Check lets it share memory with no other
	// tensor, not even in place: other threads touch its elements.
	Indexed bool
	// Quant marks a quantized matmul operand (QuantFormat): the packed
	// tensor, whose last dim holds Quant.Width(k) words or bytes for Shape's
	// k, or with Table its scales or biases, k / Quant.Group a row. Nil
	// for every other binding.
	Quant *Quant
	Table bool
}

// stored is the stored length of a dim whose logical size is v: v itself
// except a quantized binding's last dim.
func (b *Binding) stored(j, v int) int {
	switch {
	case b.Quant == nil || j != len(b.Shape)-1:
		return v
	case b.Table:
		return v / b.Quant.Group
	}
	return b.Quant.Width(v)
}

// packedWhat and widthText say what a quantized binding is, for messages.
func (b *Binding) packedWhat() string {
	what := b.Quant.String() + " tensor"
	if b.Table {
		what = b.Quant.String() + " scale or bias table"
	}
	if strings.ContainsRune("aeiou", rune(what[0])) {
		return "an " + what
	}
	return "a " + what
}

func (b *Binding) widthText() string {
	dim := b.Shape[len(b.Shape)-1] // a matmul B's k, a packed rowwise input's cols
	if b.Table {
		return fmt.Sprintf("%s/%d", dim, b.Quant.Group)
	}
	return b.Quant.widthText(dim)
}

// logical is the logical size of a last dim stored as width elements (ok
// false when no size is stored so).
func (b *Binding) logical(width int) (int, bool) {
	switch {
	case b.Quant == nil:
		return width, true
	case b.Table:
		return width * b.Quant.Group, true
	}
	return b.Quant.KOf(width)
}

// Field is a 4-byte member of the args struct, little-endian at Offset.
type Field struct {
	Name   string
	Type   DType // U32, I32 or F32
	Offset int
	Size   bool // a size field (n) rather than a param
	// StrideOf names a tensor binding whose stride (in elements) of dim
	// StrideDim of its full shape (Batch ++ Shape) this field holds: a u32
	// written by Kernel.PutStrides; "" for other fields.
	StrideOf  string
	StrideDim int
	// Aligned, when set, makes the field a u32 flag Kernel.PutStrides
	// writes: 1 when the view of every tensor binding it names can be
	// read in 16-byte vectors along its last dim (RowsAligned), else 0. A
	// batched rowwise kernel's CUDA and HIP vector paths take it: the
	// choice is made once per launch, from the views.
	Aligned []string
}

// Variant returns the dtype-key table entry of storage dtype dt, or a
// *DTypeError naming the kernel and the dtypes it has.
func (k *Kernel) Variant(dt DType) (*Variant, error) {
	for i := range k.Variants {
		if k.Variants[i].DType == dt {
			return &k.Variants[i], nil
		}
	}
	return nil, &DTypeError{Kernel: k.Name, DType: dt, Have: k.dtypes()}
}

func (k *Kernel) dtypes() []DType {
	out := make([]DType, len(k.Variants))
	for i, v := range k.Variants {
		out[i] = v.DType
	}
	return out
}

// Tensors returns the tensor bindings (inputs then outputs), the order in
// which launchers pass tensors.
func (k *Kernel) Tensors() []Binding {
	var out []Binding
	for _, b := range k.Bindings {
		if b.Role != Args {
			out = append(out, b)
		}
	}
	return out
}

// Params returns the args struct's runtime params: its fields other than
// sizes, strides and the aligned flag (which the launcher fills).
func (k *Kernel) Params() []Field {
	var out []Field
	for _, f := range k.ArgsBinding().Fields {
		if !f.Size && f.StrideOf == "" && len(f.Aligned) == 0 {
			out = append(out, f)
		}
	}
	return out
}

// Inputs returns the input bindings.
func (k *Kernel) Inputs() []Binding { return k.ofRole(Input) }

// Outputs returns the output bindings.
func (k *Kernel) Outputs() []Binding { return k.ofRole(Output) }

func (k *Kernel) ofRole(r Role) []Binding {
	var out []Binding
	for _, b := range k.Bindings {
		if b.Role == r {
			out = append(out, b)
		}
	}
	return out
}

// RunCPU runs the CPU reference on tensors in binding order (inputs then
// outputs) with the params in order, each converted to its field's type.
func (k *Kernel) RunCPU(tensors []*Tensor, params ...float64) error {
	if err := k.counts("RunCPU", len(tensors), len(k.Tensors()), len(params), k.CPU == nil); err != nil {
		return err
	}
	return k.CPU(tensors, params)
}

// RunCPU64 evaluates the formulas in float64 on inputs in binding order and
// returns the outputs in binding order. sizes gives what the inputs' lengths
// cannot tell (a rowwise kernel's "cols"; nil for elementwise kernels).
func (k *Kernel) RunCPU64(sizes Sizes, inputs [][]float64, params ...float64) ([][]float64, error) {
	if err := k.counts("RunCPU64", len(inputs), len(k.Inputs()), len(params), k.CPU64 == nil); err != nil {
		return nil, err
	}
	return k.CPU64(sizes, inputs, params)
}

func (k *Kernel) counts(what string, got, want, params int, missing bool) error {
	switch {
	case missing:
		return fmt.Errorf("kgenrt: kernel %s: %s: the generated package did not register its CPU reference", k.Name, what)
	case got != want || params != len(k.Params()):
		return fmt.Errorf("kgenrt: kernel %s: %s takes %d tensors and %d params, got %d and %d", k.Name, what, want, len(k.Params()), got, params)
	}
	return nil
}

// ArgsBinding returns the args struct binding.
func (k *Kernel) ArgsBinding() Binding {
	for _, b := range k.Bindings {
		if b.Role == Args {
			return b
		}
	}
	return Binding{Index: -1}
}

// ArgsSize is the size of the args struct in bytes.
func (k *Kernel) ArgsSize() int { return 4 * len(k.ArgsBinding().Fields) }

// MaxElems is the largest element count a launch accepts: the kernels index
// with 32-bit unsigned integers and round the count up to whole threads.
func (k *Kernel) MaxElems() int64 { return 1<<32 - int64(k.ElemsPerThread) }

// keyVersion must equal the generator's (package ir); a test checks it.
const keyVersion = "kgen-key-v1"

// KeyOf recomputes a variant key the way the generator does: sha256 over the
// key version, the math mode, the host name and the whole source.
func KeyOf(source, hostName, math string) string {
	h := sha256.New()
	for _, part := range []string{keyVersion, math, hostName, source} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Validate checks the descriptor's own consistency: every key matches the
// embedded source (so a hand-edited source can never hide behind a cached
// pipeline), dtypes and host names are unique, and the bindings are
// numbered 0.. with the args struct last and its fields packed 4 bytes apart.
// The Metal port validates a kernel before compiling it.
func (k *Kernel) Validate() error {
	seen := map[DType]bool{}
	for _, v := range k.Variants {
		if seen[v.DType] || !v.DType.IsFloat() {
			return fmt.Errorf("kgenrt: kernel %s: dtype %v is repeated or not a storage dtype", k.Name, v.DType)
		}
		seen[v.DType] = true
		if got := KeyOf(k.Source, v.HostName, k.Math); got != v.Key {
			return fmt.Errorf("kgenrt: kernel %s: variant %s has key %s but its embedded source hashes to %s; regenerate with `kgen gen`", k.Name, v.HostName, v.Key, got)
		}
	}
	for i, b := range k.Bindings {
		last := i == len(k.Bindings)-1
		if b.Index != i || (b.Role == Args) != last {
			return fmt.Errorf("kgenrt: kernel %s: binding %s has index %d; want indices 0.. with the args struct last", k.Name, b.Name, b.Index)
		}
		for j, f := range b.Fields {
			if f.Offset != 4*j {
				return fmt.Errorf("kgenrt: kernel %s: args field %s at offset %d, want %d", k.Name, f.Name, f.Offset, 4*j)
			}
		}
	}
	if len(k.Variants) == 0 || len(k.Bindings) == 0 {
		return fmt.Errorf("kgenrt: kernel %s has no variants or no bindings", k.Name)
	}
	return k.checkPortSplit()
}

// checkPortSplit: a PortSplit's field is one its backend's launch derives,
// and there are phases to take.
func (k *Kernel) checkPortSplit() error {
	s := k.PortSplit
	if s == nil {
		return nil
	}
	for _, d := range k.Launch[s.Backend].Derived {
		if d.Field == s.Field && len(k.Phases) > 0 {
			return nil
		}
	}
	return fmt.Errorf("kgenrt: kernel %s: its %s split needs phases and %s among that launch's derived fields", k.Name, s.Backend, s.Field)
}

// Call is one checked launch: the tensors in binding order (Tensors[i] binds
// at Kernel.Bindings[i].Index), the args struct bytes, and the dispatch.
// Generated launchers build it; ports run it.
type Call struct {
	Kernel      *Kernel
	Variant     *Variant
	Tensors     []*Tensor
	Args        []byte // little-endian, fields at their offsets
	Grid        [3]int // dispatchThreads: total threads per axis
	Threadgroup [3]int // threads per threadgroup
	// Next is the launch that must follow this one, reading what it wrote:
	// the next phase of a split kernel (Kernel.Phases). Ports run the chain
	// in order; nil for one launch.
	Next *Call
}

// ownedBy reports whether the call is for kernel k or one of its phases.
func (c *Call) ownedBy(k *Kernel) bool {
	if c.Kernel == k {
		return true
	}
	for _, p := range k.Phases {
		if c.Kernel == p {
			return true
		}
	}
	return false
}

// heapCopy copies c, its tensor list, args bytes and chain, to the heap,
// for a port reached through the Port interface. The kernels and variants
// are k's own (matched by address), not read from c: the compiler's escape
// analysis is not field-sensitive, and copying any of c's pointers would
// move the caller's tensor list and args bytes to the heap too.
func (c *Call) heapCopy(k *Kernel) *Call {
	d := &Call{
		Tensors:     append([]*Tensor(nil), c.Tensors...),
		Args:        append([]byte(nil), c.Args...),
		Grid:        c.Grid,
		Threadgroup: c.Threadgroup,
	}
	for _, o := range append([]*Kernel{k}, k.Phases...) {
		if c.Kernel == o {
			d.Kernel = o
			for i := range o.Variants {
				if c.Variant == &o.Variants[i] {
					d.Variant = &o.Variants[i]
				}
			}
		}
	}
	if d.Variant == nil && c.Variant != nil {
		v := *c.Variant
		d.Variant = &v
	}
	if c.Next != nil {
		d.Next = c.Next.heapCopy(k)
	}
	return d
}

// empty reports whether the call has no work (a zero grid axis).
func (c *Call) empty() bool { return c.Grid[0] == 0 || c.Grid[1] == 0 || c.Grid[2] == 0 }

// check is what every port asks before launching: the call belongs to the
// port's kernel and is laid out as its bindings say.
func (c *Call) check(k *Kernel) error {
	if c == nil || !c.ownedBy(k) {
		return fmt.Errorf("kgenrt: a call for another kernel reached the port of %s", k.Name)
	}
	if c.Kernel != k {
		return c.check(c.Kernel) // a phase: laid out by its own bindings
	}
	var ibuf [16]int
	if len(c.Tensors) != len(k.tensorIndex(ibuf[:0])) || len(c.Args) != k.ArgsSize() || c.Variant == nil {
		return fmt.Errorf("kgenrt: kernel %s: malformed call (%d tensors, %d args bytes)", k.Name, len(c.Tensors), len(c.Args))
	}
	return nil
}
