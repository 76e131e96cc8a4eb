// Package spec loads kernel spec files (one kernel per YAML file) into a
// positioned model and checks everything that can be checked without reading
// the formulas: field names and types, dtypes, names, ports, tolerances.
// Formulas are kept as text with a map back to the file; package expr parses
// them.
package spec

import (
	"github.com/kgen-dev/kgen/kgenrt"
	"strconv"

	"github.com/kgen-dev/kgen/backend"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/internal/yamlnode"
)

// Kind is the shape of work a kernel does.
type Kind string

// The kinds of kernel.
const (
	Elementwise Kind = "elementwise"
	Rowwise     Kind = "rowwise"
	Matmul      Kind = "matmul"
)

// Backend is a GPU backend a kernel may have a port for (package backend
// owns the enum; the spec, the IR and the emitters share it).
type Backend = backend.Backend

// The backends, in the order of the port table.
const (
	Metal       = backend.Metal
	CUDA        = backend.CUDA
	ROCm        = backend.ROCm
	NumBackends = backend.NumBackends
)

// BackendNames lists the backends' spec spellings in port-table order.
func BackendNames() []string { return backend.Names() }

// Name is an identifier as written in the spec.
type Name struct {
	Name string
	Pos  diag.Pos
}

// TypeRef is a dtype as written in the spec.
type TypeRef struct {
	Type dtype.DType
	Pos  diag.Pos
}

// Input is a tensor read by the kernel.
type Input struct {
	Name
	DType TypeRef // Invalid = the variant's storage type
	// Dims is the input's shape by its dimensions, as written: [rows,
	// cols], [cols], [rows] (rowwise), [n] (elementwise), [m, n], [n], [m]
	// (matmul epilogue inputs); nil when absent (the kind's full shape).
	// The old `shape: row` reads as [cols]. Which dimensions a kind takes
	// is checked by ir, which knows the kind; DimsPos is where it is written.
	Dims    []string
	DimsPos diag.Pos
	// Batch is the leading dimensions of an input of a batched matmul's
	// epilogue or of a batched rowwise kernel (see BatchDim); BatchPos is
	// where it is written, zero when absent (the launch's whole batch).
	Batch    []BatchDim
	BatchPos diag.Pos
	// Quant is a rowwise input's packed format (`quant:`, the matmul B's
	// field and layout, [rows, cols] logical): formulas read its
	// dequantized values. Nil for plain elements.
	Quant *Quant
}

// BatchDim is one leading dimension of a tensor of a batched matmul
// (`batch:`): the launch's batch size Size read whole (`h`), or grouped,
// batch index h reading the tensor's index h / group (`h / group`, the
// grouped-query attention form: Group a size field the launcher derives
// from the shapes) or h / GroupConst (`h / 4`, baked).
type BatchDim struct {
	Size       Name
	Group      string
	GroupConst int
}

// String is the dimension as kgenrt's binding tables spell it: "h",
// "h/group" or "h/4".
func (d BatchDim) String() string {
	switch {
	case d.Group != "":
		return d.Size.Name + "/" + d.Group
	case d.GroupConst > 0:
		return d.Size.Name + "/" + strconv.Itoa(d.GroupConst)
	}
	return d.Size.Name
}

// Operand is one matrix of a matmul: A [m, k] or a B [k, n], stored row-major
// unless ColMajor (A stored [k, m], B stored [n, k], so x @ w.T needs no
// transpose). Acc names a B's f32 accumulator in the formulas.
type Operand struct {
	Name
	DType    TypeRef // Invalid = the variant's storage type
	ColMajor bool
	// LayoutPos is where layout was written (zero: the default).
	LayoutPos diag.Pos
	Acc       Name
	// Batch and BatchPos: as Input's, for a batched matmul's operand.
	Batch    []BatchDim
	BatchPos diag.Pos
	// Quant is a B's packed format (`quant:`), nil for plain elements.
	Quant *Quant
}

// Quant is a matmul B's or a rowwise input's `quant:` field: q4_0, q8_0, or {format: affine,
// bits: 4, group: 64[, scales: s, biases: b]} (kgenrt.QuantFormat says how
// each is stored).
type Quant struct {
	Pos diag.Pos
	kgenrt.Quant
	// Scales and Biases name an affine operand's tables, <b>_scales and
	// <b>_biases unless given (mx.quantize's outputs).
	Scales, Biases Name
}

// MatmulSpec is a matmul kernel's `matmul:` field: one A and one or two Bs
// (two: a gated matmul, acc and acc2 over the same A).
type MatmulSpec struct {
	A Operand
	B []Operand
	// Then is a chain's second operand (V, logical [n, p]): the outputs
	// are softmax-weighted rows of it, acc2 by default (nil: no chain).
	Then *Operand
	// Batch names the launch's leading dimensions, outermost first, by
	// size fields (`batch: [b, h]`): every tensor is a stack of matrices
	// over them (unless its own batch says otherwise), one grid slice
	// per batch element. Nil: one matrix product.
	Batch    []Name
	BatchPos diag.Pos
	Pos      diag.Pos
}

// Tile is a matmul's tile override: BM×BN outputs per threadgroup, BK of K
// per step, WM×WN simdgroups. Zero fields are kgen's choice.
type Tile struct {
	BM, BN, BK, WM, WN int
	Pos                diag.Pos
}

// Param is a runtime scalar passed in the args struct.
type Param struct {
	Name
	Type TypeRef
	// Example is a typical value (RoPE's theta: 10000), which parity and
	// benchmarks pass instead of their generic pick; ExampleText is as
	// written, "" when absent.
	Example     float64
	ExampleText string
}

// Constant is a number baked into the generated source.
type Constant struct {
	Name
	Text  string // as written, for exact rounding to the compute type
	Value float64
}

// Formula is one `let` binding or output.
type Formula struct {
	Name
	// DType pins an output's storage dtype (the long form {name, dtype,
	// formula}); Invalid = the variant's storage type.
	DType TypeRef
	Text  string
	Map   yamlnode.ScalarMap // offsets in Text → file positions
	// Dims and At make an output a positioned write (the long form's shape
	// and at, docs/indexing.md): the tensor's own dimensions, and one
	// coordinate formula per dimension giving where element (row, col) is
	// written; nil for an ordinary output. DimsPos and AtPos are where they
	// are written.
	Dims    []string
	DimsPos diag.Pos
	At      []Formula
	AtPos   diag.Pos
}

// Tolerance bounds the parity check of one storage dtype:
// pass when |got-ref| <= Abs + Rel*|ref|.
type Tolerance struct {
	DType TypeRef
	Abs   float64
	Rel   float64
}

// Port says whether kgen generates a backend's port.
type Port struct {
	Generated bool
	Pos       diag.Pos // zero when the key is absent
}

// Spec is one kernel spec file.
type Spec struct {
	Path string // relative to the config folder, slash-separated
	// Damaged names the fields that declare names (inputs, params,
	// constants, let, outputs) but could not be read whole: an error in
	// them, or an unknown key that looks like a typo of one. Later checks
	// stay quiet about what follows from it (undefined and unused names),
	// so the root cause is reported alone.
	Damaged   []string
	Kernel    Name
	Doc       string
	Kind      Kind
	KindPos   diag.Pos // zero when the field is absent
	DTypes    []TypeRef
	Compute   TypeRef // Invalid = the storage type
	Inputs    []Input
	Params    []Param
	Constants []Constant
	Let       []Formula
	Outputs   []Formula
	Math      string // "precise" or "fast"
	// Domain is the inputs the author means the kernel for: "all" (the
	// default: parity feeds ±Inf and NaN too) or "finite" (parity feeds
	// finite values only), for kernels whose result on a non-finite input
	// depends on how the compute type rounds (issue 12, class 9).
	Domain      string
	Threadgroup int
	Ports       [NumBackends]Port
	Tolerances  []Tolerance
	// Segments names the independent row problems of a multi-segment
	// rowwise kernel (segments: [q, k]); nil for a single segment.
	Segments    []Name
	SegmentsPos diag.Pos // zero when the field is absent
	// Batch names a batched rowwise kernel's leading dimensions (`batch:
	// [b, h]`, beside inputs), outermost first, by size fields: every
	// tensor is a stack of row problems over them unless its own batch
	// says otherwise (Input.Batch). Nil: one row problem. A matmul's batch
	// is MatmulSpec.Batch.
	Batch    []Name
	BatchPos diag.Pos // zero when the field is absent
	// Backward asks for a derived <kernel>_backward kernel (nil: none).
	Backward *Backward
	// Save names per-row lets the forward also writes (f32 [rows] outputs
	// <let>_saved, added to Outputs) for the backward to read (save.go).
	Save []Name
	// Matmul is a matmul kernel's operands (nil for other kinds); Tile its
	// tile override (nil: kgen's choice).
	Matmul *MatmulSpec
	Tile   *Tile
	// CUDATiles overrides the problem classes of a matmul's CUDA port
	// (nil: kgen's); CUDATilesPos is the key's position.
	CUDATiles      []CUDAClass
	CUDATilesPos   diag.Pos
	ThreadgroupPos diag.Pos // zero when the field is absent
	Pos            diag.Pos // the file's first line, for whole-file messages
}
