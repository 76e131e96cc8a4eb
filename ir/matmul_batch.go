package ir

import (
	"fmt"
	"go/token"
	"go/types"
	"slices"
	"strconv"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/launch"
	"github.com/kgen-dev/kgen/spec"
)

// A batched matmul (`matmul: {batch: [b, h], …}`) is a stack of matrix
// products over leading dimensions, one grid slice (the grid's z) per batch
// element, so every head of an attention layer runs in one launch. Its
// tensors are views: each binding's element strides travel in the args
// struct (StrideField), so a caller binds one head of a [b, s, h, d]
// activation, a KV cache's first len rows or a transposed layout without a
// copy. A tensor may lack a batch dimension (shared across it) or read it
// grouped (query head h reads KV head h / group: grouped-query attention).

// BatchDim is one leading dimension of a batched matmul's tensor: batch
// dimension Axis of the launch (size field Size), read whole, or grouped:
// batch index x reads the tensor's index x / group, Group a size field the
// launcher derives from the shapes, or x / GroupConst (baked).
type BatchDim struct {
	Size       string
	Axis       int
	Group      string
	GroupConst int
}

// String spells the dimension as kgenrt's binding tables do: "h",
// "h/group" or "h/4".
func (d BatchDim) String() string {
	switch {
	case d.Group != "":
		return d.Size + "/" + d.Group
	case d.GroupConst > 0:
		return d.Size + "/" + strconv.Itoa(d.GroupConst)
	}
	return d.Size
}

// Batched reports whether k is a batched matmul or rowwise kernel: its
// tensors carry leading dimensions and are read through strides.
func (k *Kernel) Batched() bool { return len(k.Batch()) > 0 }

// Batch is a batched matmul's or rowwise kernel's launch dimensions (size
// fields), outermost first; nil otherwise.
func (k *Kernel) Batch() []string {
	if mm := k.Matmul(); mm != nil {
		return mm.Batch
	}
	switch s := k.Schedule.(type) {
	case *Rows:
		return s.Batch
	case *Elems:
		return s.Batch
	}
	return nil
}

// FullShape is a binding's whole shape: its batch dimensions, then Shape.
func (b Binding) FullShape() []string {
	var out []string
	for _, d := range b.Batch {
		out = append(out, d.String())
	}
	return append(out, b.Shape...)
}

// StrideField names the args struct field holding binding b's element
// stride along dimension dim of its FullShape (kgen_ names are reserved:
// no user name can take them).
func StrideField(b Binding, dim int) string {
	return fmt.Sprintf("kgen_%s_s%d", b.Name, dim)
}

// batchOf reads a matmul tensor's `batch:` against the launch's batch
// dimensions: absent, the tensor has all of them, whole.
func batchOf(batch []string, dims []spec.BatchDim, pos diag.Pos, what string, diags *diag.List) []BatchDim {
	if len(batch) == 0 && pos.Line > 0 {
		diags.Addf(pos, "%s: a tensor's batch needs the matmul's batch (matmul: {batch: [b, h], …})", what)
		return nil
	}
	return tensorBatch(batch, dims, pos, what, "the matmul's", diags)
}

// tensorBatch reads a tensor's `batch:` against the launch's batch
// dimensions batch (whose names them in messages): absent (pos zero), the
// tensor has all of them, whole; otherwise a subsequence, each whole or
// grouped.
func tensorBatch(batch []string, dims []spec.BatchDim, pos diag.Pos, what, whose string, diags *diag.List) []BatchDim {
	if pos.Line == 0 {
		var out []BatchDim
		for i, s := range batch {
			out = append(out, BatchDim{Size: s, Axis: i})
		}
		return out
	}
	out := []BatchDim{}
	last := -1
	for _, d := range dims {
		axis := -1
		for i, s := range batch {
			if s == d.Size.Name {
				axis = i
			}
		}
		switch {
		case axis < 0:
			diags.Addf(d.Size.Pos, "%s: batch dimension %s is not one of %s batch %v", what, d.Size.Name, whose, batch)
			continue
		case axis <= last:
			diags.Addf(d.Size.Pos, "%s: batch dimensions follow %s batch order %v, each at most once", what, whose, batch)
			continue
		}
		last = axis
		out = append(out, BatchDim{Size: d.Size.Name, Axis: axis, Group: d.Group, GroupConst: d.GroupConst})
	}
	return out
}

// batchNames checks a matmul's `batch:` names and returns them: size
// fields, so none may be a matrix size, a param or a group.
func batchNames(s *spec.Spec, m *spec.MatmulSpec, diags *diag.List) []string {
	out := checkBatchNames(m.Batch, userNames(s, m), "a matrix size m, n, k, p", diags)
	if len(out) > 0 {
		switch {
		case len(m.B) > 1:
			diags.Addf(m.BatchPos, "a gated matmul (two b operands) is not batched yet; drop batch or launch it per batch element")
		case s.Ports[spec.CUDA].Generated && m.Then == nil:
			diags.Addf(s.Ports[spec.CUDA].Pos, "a batched matmul other than a chain has no CUDA port yet (its CUTLASS plan is one matrix product); write cuda: null")
		}
	}
	return out
}

// checkBatchNames checks a launch's batch dimension names against the
// names taken (sizes says which sizes of the kind those are, for the
// message) and the generated launcher's locals, and returns them.
func checkBatchNames(names []spec.Name, taken map[string]bool, sizes string, diags *diag.List) []string {
	var out []string
	for _, n := range names {
		if taken[n.Name] {
			diags.Addf(n.Pos, "batch dimension %s: the name is taken (%s, a tensor, param, constant or formula, or an earlier batch dimension)", n.Name, sizes)
		}
		if why := goLocalClash(n.Name); why != "" {
			diags.Addf(n.Pos, "batch dimension %s: %s", n.Name, why)
		}
		taken[n.Name] = true
		out = append(out, n.Name)
	}
	return out
}

// userNames are the names a batch dimension or group may not take: the
// matrix sizes and every name the spec gives.
func userNames(s *spec.Spec, m *spec.MatmulSpec) map[string]bool {
	taken := specNames(s, "m", "n", "k", "p")
	ops := append([]spec.Operand{m.A}, m.B...)
	if m.Then != nil {
		ops = append(ops, *m.Then)
	}
	for _, o := range ops {
		taken[o.Name.Name], taken[o.Acc.Name] = true, true
	}
	return taken
}

// specNames are the kind's own names sizes and every name the spec gives:
// its kernel, params, inputs, constants and formulas.
func specNames(s *spec.Spec, sizes ...string) map[string]bool {
	taken := map[string]bool{s.Kernel.Name: true}
	for _, n := range sizes {
		taken[n] = true
	}
	for _, p := range s.Params {
		taken[p.Name.Name] = true
	}
	for _, in := range s.Inputs {
		taken[in.Name.Name] = true
	}
	for _, c := range s.Constants {
		taken[c.Name.Name] = true
	}
	for _, f := range append(append([]spec.Formula{}, s.Let...), s.Outputs...) {
		taken[f.Name.Name] = true
	}
	return taken
}

// batchFields are a batched kernel's args fields after the matrix sizes:
// the batch sizes, then each group a grouped dimension names (derived by
// the launcher from the shapes).
func batchFields(batch []string, bindings []Binding, taken map[string]bool, diags *diag.List, pos diag.Pos) []Field {
	var out []Field
	for _, b := range batch {
		out = append(out, Field{Name: b, Type: dtype.U32, Size: true})
	}
	seen := map[string]bool{}
	for _, b := range bindings {
		for _, d := range b.Batch {
			if d.Group == "" || seen[d.Group] {
				continue
			}
			if taken[d.Group] || slices.Contains(batch, d.Group) {
				diags.Addf(pos, "tensor %s: group %s is taken (a size field, batch dimension, tensor, param, constant or formula)", b.Name, d.Group)
			}
			if why := goLocalClash(d.Group); why != "" {
				diags.Addf(pos, "tensor %s: group %s: %s", b.Name, d.Group, why)
			}
			seen[d.Group] = true
			out = append(out, Field{Name: d.Group, Type: dtype.U32, Size: true,
				Derived: fmt.Sprintf("%s / (the %s dimension of %s)", d.Size, d.String(), b.Name)})
		}
	}
	return out
}

// strideFields are a batched kernel's stride fields, one per dimension of
// every tensor binding, after the params.
func strideFields(bindings []Binding) []Field {
	var out []Field
	for _, b := range bindings {
		if b.Role == Args {
			continue
		}
		for j := range b.FullShape() {
			out = append(out, Field{Name: StrideField(b, j), Type: dtype.U32, StrideOf: b.Name, StrideDim: j})
		}
	}
	return out
}

// callBuilderLocals are the identifiers a generated call builder declares
// or reads besides its size fields (emit/golang's callBuilder): a batch
// size or group, which becomes a local there, may not be one.
var callBuilderLocals = map[string]bool{"sizes": true, "v": true, "err": true, "ts": true, "args": true,
	"kgenrt": true, "math": true, "binary": true, "fmt": true, "launch": true}

// goLocalClash says why a size field name cannot be a Go local of the
// generated launchers ("" when it can): a Go keyword, a predeclared
// identifier (min, max and len are called there) or a call builder's own
// local.
func goLocalClash(name string) string {
	if token.IsKeyword(name) || types.Universe.Lookup(name) != nil || callBuilderLocals[name] {
		return "the name is one the generated Go launcher uses (a Go keyword, a predeclared identifier or one of its locals); choose another"
	}
	return ""
}

// batchGrid is the launch's grid z: one slice per batch element.
func batchGrid(batch []string) *launch.Expr {
	if len(batch) == 0 {
		return launch.N(1)
	}
	z := launch.V(batch[0])
	for _, b := range batch[1:] {
		z = launch.Times(z, launch.V(b))
	}
	return z
}
