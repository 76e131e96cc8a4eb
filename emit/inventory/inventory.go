// Package inventory builds the kernel inventory of `kgen list --json` from
// the IR: what each kernel is, where it lives, its variants and keys, its
// bindings and its dispatch. The JSON shape is part of kgen's contract.
package inventory

import (
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// Inventory is the top-level document.
type Inventory struct {
	Version int      `json:"version"`
	Kernels []Kernel `json:"kernels"`
}

// Kernel describes one kernel.
type Kernel struct {
	Name        string             `json:"name"`
	Kind        string             `json:"kind"`
	Spec        string             `json:"spec"`
	MSL         string             `json:"msl"`
	Math        string             `json:"math"`
	Threadgroup int                `json:"threadgroup"`
	Ports       map[string]*string `json:"ports"`
	Variants    []Variant          `json:"variants"`
	Bindings    []Binding          `json:"bindings"`
	Dispatch    Dispatch           `json:"dispatch"`
	// Passes is a rowwise kernel's schedule: what each pass over a row
	// computes and where it reads its inputs from.
	Passes []string `json:"passes,omitempty"`
	// Split is a kernel's two-launch form (a row-reducing matmul wider than
	// its threadgroup-memory strip), which its launcher takes for n > Over
	// within the one call; absent for kernels that always launch once.
	Split *Split `json:"split,omitempty"`
	// CUDASplit is the CUDA port's two launches (ir.SplitCUDA), run for any
	// n inside the one call of its library's host function; absent for
	// kernels whose CUDA port launches once.
	CUDASplit *CUDASplit `json:"cuda_split,omitempty"`
}

// CUDASplit is the CUDA port's split: per B a CUTLASS GEMM writing the f32
// accumulator into a workspace, then the generated kernel Entry.
type CUDASplit struct {
	Workspaces []string `json:"workspaces"` // f32 [m, n] each, from a stream-ordered pool
	Launches   []string `json:"launches"`   // what each launch does, in order
	Entry      string   `json:"entry"`      // the second launch's kernel
	Block      int      `json:"block"`      // its threads per block
}

// Split is the launches of a kernel's split form, in order.
type Split struct {
	Over int `json:"n_over,omitempty"`
	// When names the size field compared when it is not n: a batched
	// chain's flash-decoding split runs when kgen_splits > 1 (n_over 1),
	// quantized weights' matrix-vector phase when m <= 8 (at_most 8);
	// "always" for column reductions, which have no one-launch form.
	When   string  `json:"when,omitempty"`
	AtMost int     `json:"at_most,omitempty"`
	Phases []Phase `json:"phases"`
}

// Phase is one launch of a split form: an entry point of the kernel's
// source with its variants, signature and dispatch. Its workspace bindings
// (f32 [m, n], named kgen_ws<i>) are allocated by the launcher.
type Phase struct {
	Entry    string    `json:"entry"`
	Does     string    `json:"does"`
	Variants []Variant `json:"variants"`
	Bindings []Binding `json:"bindings"`
	Dispatch Dispatch  `json:"dispatch"`
}

// Variant is one storage dtype's instantiation.
type Variant struct {
	DType    string `json:"dtype"`
	HostName string `json:"host_name"`
	Key      string `json:"key"`
}

// Binding is one buffer of the kernel's signature.
type Binding struct {
	Index  int     `json:"index"`
	Name   string  `json:"name"`
	Role   string  `json:"role"`
	DType  string  `json:"dtype,omitempty"`
	Fields []Field `json:"fields,omitempty"`
	// Shape is "row" for a rowwise kernel's [cols] row vector, "rows" for a
	// [rows] per-row tensor, "cols" for a [cols] output (a column
	// reduction), "[1]" for a total_sum output, "[rows, 8]" for a top-k selection's output (k baked),
	// the dimensions in brackets for an indexable input read by subscript
	// ("[vocab, cols]", docs/indexing.md); Segment names
	// the segment of a multi-segment rowwise kernel the tensor belongs to.
	Shape   string `json:"shape,omitempty"`
	Segment string `json:"segment,omitempty"`
	// At is a positioned write's coordinates, one formula per dimension of
	// Shape (docs/indexing.md): where element (row, col) is written.
	At []string `json:"at,omitempty"`
}

// Field is one member of the args struct.
type Field struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Offset int    `json:"offset"`
	// Derived is how the launcher computes a size field from the others
	// (rowwise: rows_per_group from cols).
	Derived string `json:"derived,omitempty"`
}

// Dispatch is Metal dispatchThreads: grid = total threads per axis.
type Dispatch struct {
	Grid        [3]string `json:"grid"`
	Threadgroup [3]int    `json:"threadgroup"`
}

// Build makes the inventory. msl gives each kernel's .metal path relative
// to the config folder and its bytes, which every variant key hashes.
func Build(kernels []*ir.Kernel, msl func(*ir.Kernel) (path string, source []byte)) Inventory {
	inv := Inventory{Version: 1, Kernels: []Kernel{}}
	for _, k := range kernels {
		inv.Kernels = append(inv.Kernels, kernel(k, msl))
	}
	return inv
}

func kernel(k *ir.Kernel, msl func(*ir.Kernel) (string, []byte)) Kernel {
	path, source := msl(k)
	key := func(v ir.Variant) string { return ir.Key(source, v.HostName, k.Math) }
	out := Kernel{
		Name: k.Name, Kind: k.Kind.String(), Spec: k.SpecPath, MSL: path, Math: k.Math,
		Threadgroup: k.Threadgroup, Ports: map[string]*string{},
		Dispatch: Dispatch{Grid: k.Launch(ir.Metal).GridStrings(), Threadgroup: k.Launch(ir.Metal).Threadgroup},
	}
	for b := ir.Backend(0); b < ir.NumBackends; b++ {
		out.Ports[b.String()] = nil
		if k.Ports[b] {
			generated := "generated"
			out.Ports[b.String()] = &generated
		}
	}
	for _, v := range k.Variants {
		out.Variants = append(out.Variants, Variant{DType: v.DType.String(), HostName: v.HostName, Key: key(v)})
	}
	for _, b := range k.Bindings {
		bd := binding(b)
		switch {
		case b.IsTopKOutput():
			bd.Shape = b.Shape.String() // [rows, k]: a top-k selection, k baked
		case b.IsTotal():
			bd.Shape = b.Shape.String() // [1]: a total_sum over every element of the launch
		case b.IsColOutput():
			bd.Shape = "cols" // one value per column, reduced over the rows
		case b.IsRowVector():
			bd.Shape = "row"
		case b.IsPerRow():
			bd.Shape = "rows" // one value per row
		case b.IsIndexable():
			bd.Shape = b.Shape.String() // its own dimensions, read by subscript: "[vocab, cols]"
		case b.IsScatter():
			bd.Shape, bd.At = b.Shape.String(), scatterAt(k, b) // a positioned write
		}
		if len(k.Segments) > 0 && b.Role != ir.Args {
			bd.Segment = k.Segments[b.Segment]
		}
		out.Bindings = append(out.Bindings, bd)
	}
	out.Passes = k.Describe()
	if ph := k.Phases(); len(ph) > 0 {
		cond := k.PhasesWhen()
		out.Split = &Split{Over: cond.Bound}
		if cond.AtMost {
			out.Split = &Split{AtMost: cond.Bound}
		}
		switch cond.Field {
		case "": // no one-launch form (column reductions)
			out.Split.When = "always"
		case "n":
		default:
			out.Split.When = cond.Field
		}
		for _, p := range ph {
			pj := Phase{Entry: p.Entry, Does: p.Comment, Dispatch: Dispatch{Grid: p.Launch.GridStrings(), Threadgroup: p.Launch.Threadgroup}}
			for _, v := range p.Variants {
				pj.Variants = append(pj.Variants, Variant{DType: v.DType.String(), HostName: v.HostName, Key: key(v)})
			}
			for _, b := range p.Bindings {
				pj.Bindings = append(pj.Bindings, binding(b))
			}
			out.Split.Phases = append(out.Split.Phases, pj)
		}
	}
	if mm := k.Matmul(); mm != nil && mm.CUDA != nil && mm.Split != nil && mm.Split.CUDA != nil {
		sp := mm.Split
		cs := &CUDASplit{Entry: sp.Rows.Entry, Block: sp.CUDA.Tile.Threads()}
		for w, b := range sp.Space {
			cs.Workspaces = append(cs.Workspaces, b.Name)
			cs.Launches = append(cs.Launches, "CUTLASS GEMM "+mm.A.Name+"·"+mm.B[w].Name+", identity epilogue: the f32 accumulator into "+b.Name)
		}
		cs.Launches = append(cs.Launches, sp.Rows.Entry+": "+sp.CUDA.Comment)
		out.CUDASplit = cs
	}
	return out
}

func binding(b ir.Binding) Binding {
	out := Binding{Index: b.Index, Name: b.Name, Role: string(b.Role)}
	if b.Role == ir.Args {
		for _, f := range b.Fields {
			out.Fields = append(out.Fields, Field{Name: f.Name, Type: f.Type.String(), Offset: f.Offset, Derived: f.Derived})
		}
		return out
	}
	out.DType = "T"
	if b.DType != dtype.Invalid {
		out.DType = b.DType.String()
	}
	return out
}

// scatterAt is positioned write b's coordinates in formula syntax, lets
// inlined.
func scatterAt(k *ir.Kernel, b ir.Binding) []string {
	for o, ob := range k.SegmentBindings(b.Segment, ir.Output) {
		if ob.Index != b.Index {
			continue
		}
		var out []string
		for _, c := range k.Rows().ScatterOf(o).At {
			out = append(out, k.FormatExpr(c))
		}
		return out
	}
	return nil
}
