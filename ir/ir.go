// Package ir is the kernel model every emitter reads: checked formulas as
// expression trees, the buffer bindings (the one place that fixes buffer
// indices for MSL and Go alike), the args struct layout, the dispatch, and
// one variant per storage dtype.
package ir

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/kgenrt"
	"github.com/kgen-dev/kgen/launch"
)

// Kernel is one spec, checked and laid out. Its fields are kind-neutral;
// what a kind adds lives in its Schedule.
type Kernel struct {
	Name        string
	Doc         string
	Kind        Kind     // Schedule.Kind()
	SpecPath    string   // relative to the config folder
	NamePos     diag.Pos // where the spec names the kernel, for messages
	Math        string   // "precise" or "fast"
	Domain      string   // "all" or "finite": the inputs parity feeds (spec.Spec.Domain)
	Threadgroup int
	// Compute is the arithmetic type; dtype.Invalid means "the variant's
	// storage type".
	Compute  dtype.DType
	Variants []Variant
	Bindings []Binding // by buffer index
	// Segments names the independent problems of a multi-segment kernel
	// (nil for one segment). Segment s has its own tensors (bindings with
	// Segment == s, named <segment>_<name>) and size fields.
	Segments  []string
	Constants []Constant
	Steps     []Step // let bindings then outputs, in spec order
	Ports     [NumBackends]bool
	Schedule  Schedule
}

// Launch is the kernel's launch on backend b.
func (k *Kernel) Launch(b Backend) launch.Launch { return k.Schedule.Launch(k, b) }

// Sources lists the backends whose kernel source kgen writes, in port-table
// order: Metal always (its source is what the variant keys hash and what the
// CPU harness proves, even where the Metal port is null), then every other
// generated port. Generate writes exactly these; verify expects exactly these.
func (k *Kernel) Sources() []Backend {
	out := []Backend{Metal}
	for b := Metal + 1; b < NumBackends; b++ {
		if k.Ports[b] {
			out = append(out, b)
		}
	}
	return out
}

// Describe is the schedule in words (see Schedule.Describe).
func (k *Kernel) Describe() []string { return k.Schedule.Describe(k) }

// Variant is one storage dtype's instantiation of a kernel.
type Variant struct {
	DType     dtype.DType
	HostName  string // "<kernel>_<dtype>"
	Tolerance Tolerance
}

// Tolerance bounds parity: pass when |got-ref| <= Abs + Rel*|ref|.
type Tolerance struct {
	Abs, Rel float64
}

// Role is what a binding is for.
type Role string

// The binding roles, in binding order.
const (
	Input  Role = "input"
	Output Role = "output"
	Args   Role = "args"
)

// Binding is one [[buffer(i)]] of the kernel.
type Binding struct {
	Index int
	Name  string
	Role  Role
	// DType is the element type; dtype.Invalid means the variant's storage
	// type ("T"). Unset for Args.
	DType dtype.DType
	// Shape is a tensor's dimensions, named by the size fields that give
	// them, outermost first. Unset for Args.
	Shape Shape
	// Segment is the index of the segment the tensor belongs to, in a
	// multi-segment kernel (see Kernel.Segments); 0 otherwise.
	Segment int
	// Operand marks a matmul's A or B: an input read as a whole matrix, not
	// an element value of the formulas (see Kernel.ElementInputs).
	Operand bool
	// Paired marks an input read at the paired element (rowwise pair
	// reads): its cols must be even, and no output may alias it, since
	// another thread reads each element's partner.
	Paired bool
	// Indexed marks a tensor read or written at computed coordinates
	// (docs/indexing.md): an input a gather reads, or an output written by
	// a positioned write (IsScatter). It shares memory with no other
	// tensor, in place included: other threads touch its elements.
	Indexed bool
	// Batch is a batched matmul's tensor's leading dimensions, before
	// Shape (see BatchDim); nil otherwise.
	Batch []BatchDim
	// Quant is a quantized matmul B's format (quant.go): on the packed
	// tensor itself (Shape [n, k], stored Quant.Width(k) elements a row)
	// and on its scales and biases (Table set; Shape [n, k], stored
	// k / Quant.Group a row). Nil for every other binding.
	Quant  *kgenrt.Quant
	Table  bool
	Fields []Field // the scalar struct, for Args
}

// Shape names a tensor's dimensions by size fields: [n] (elementwise),
// [rows, cols] or [<segment>_rows, cols], and [cols] for a row vector that
// every row shares.
type Shape []string

func (s Shape) String() string { return "[" + strings.Join(s, ", ") + "]" }

// IsRowVector reports whether the tensor is a [cols] row vector.
func (b Binding) IsRowVector() bool { return len(b.Shape) == 1 && b.Shape[0] == "cols" }

// IsColOutput reports whether the tensor is a rowwise kernel's [cols]
// output, a column reduction over every row (Rows.Cols), or its [1]
// total_sum output, which the later launches write and the row passes do
// not.
func (b Binding) IsColOutput() bool { return b.Role == Output && (b.IsRowVector() || b.IsTotal()) }

// IsPerRow reports whether the tensor of a rowwise kernel holds one value
// per row: [rows] (or [<segment>_rows]), a per-row scale, position or max.
func (b Binding) IsPerRow() bool { return len(b.Shape) == 1 && strings.HasSuffix(b.Shape[0], "rows") }

// Field is a 4-byte member of the args struct.
type Field struct {
	Name   string
	Type   dtype.DType // u32, i32 or f32
	Offset int
	Size   bool // a size field (n; rows, cols) rather than a param
	// Dim marks the size field of an indexable input's own dimension
	// (gather.go): a size, not a row count the launch covers.
	Dim bool
	// Derived is set on size fields the launcher computes from the others
	// (rowwise: rows_per_group): the Metal rule in words, for the inventory
	// (Launch(b).Derived holds each backend's evaluable rule).
	Derived string
	// Example is a param's typical value as written in the spec ("" when
	// absent): parity passes it instead of its generic pick.
	Example string
	// StrideOf names the tensor binding whose element stride along its
	// dimension StrideDim (of Binding.FullShape) the field holds: a
	// batched matmul's views. Neither a size nor a param.
	StrideOf  string
	StrideDim int
	// Aligned lists, on a batched rowwise kernel's AlignedField, the
	// tensors whose views must all allow 16-byte vector access for the
	// launcher to set the field to 1 (kgenrt.RowsAligned). Neither a size
	// nor a param.
	Aligned []string
}

// Constant is a baked number.
type Constant struct {
	Name string
	Text string // as written
}

// Step computes one named value.
type Step struct {
	Name   string
	Output bool   // an output (stored), else a let binding
	Source string // the formula as written in the spec
	Expr   *Expr
	// At is a positioned write's coordinates as checked (scatter.go), nil
	// for an ordinary output or a let; Rows.Scatters holds them inlined.
	At []*Expr
}

// BindingsOf returns the kernel's bindings of one role.
func (k *Kernel) BindingsOf(r Role) []Binding {
	var out []Binding
	for _, b := range k.Bindings {
		if b.Role == r {
			out = append(out, b)
		}
	}
	return out
}

// ComputeTypes lists the types the formulas are evaluated in: the fixed
// compute type, or each variant's storage type when compute follows it.
func (k *Kernel) ComputeTypes() []dtype.DType {
	if k.Compute != dtype.Invalid {
		return []dtype.DType{k.Compute}
	}
	var out []dtype.DType
	for _, v := range k.Variants {
		out = append(out, v.DType)
	}
	return out
}

// ArgsBinding returns the args struct binding.
func (k *Kernel) ArgsBinding() Binding { return k.BindingsOf(Args)[0] }

// Params returns the non-size fields of the args struct.
func (k *Kernel) Params() []Field {
	var out []Field
	for _, f := range k.ArgsBinding().Fields {
		if !f.Size && f.StrideOf == "" && f.Name != AlignedField {
			out = append(out, f)
		}
	}
	return out
}

// keyVersion changes whenever the key's inputs change meaning.
const keyVersion = "kgen-key-v1"

// Key hashes everything that shapes a compiled variant: the whole source,
// the host name and the math mode. A variant's key is Key of the kernel's
// generated Metal source: the IR does not hold it, since it exists only once
// the source does; the Go emitter, the inventory and verify compute it from
// the source they are given.
func Key(source []byte, hostName, math string) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(keyVersion), []byte(math), []byte(hostName), source} {
		h.Write(part)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
