package ir

import (
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/launch"
	"github.com/kgen-dev/kgen/spec"
)

// A batched rowwise kernel (`batch: [b, h]` beside inputs) is a stack of
// row problems over leading dimensions, all in one launch, as a batched
// matmul is a stack of matrix products (matmul_batch.go): RoPE over every
// head of q [b, h, s, d] (a transposed view of [b, s, h, d]) with positions
// [b, s] shared by the heads, a q/k norm with a weight per head [h, d], a
// norm over one head of an activation. Each tensor is its batch dimensions
// ++ its Shape ([rows, cols], [cols] or [rows]), read through strides in
// the args struct (StrideField), so it may be any view; an input may lack
// a batch dimension (shared) or read it grouped (h / group, h / 4), exactly
// as a matmul's tensors do; an output has every batch dimension.
//
// The launch flattens (batch element, row) into one row index, batch
// element outermost (rows of one element are consecutive, the element
// index unflattened last dimension fastest, kgenrt.Kernel.EachBatch's
// order), so teams pack rows across batch elements: a decode step's one
// row per head fills the groups as a dense launch of b·h rows would.

// AlignedField names the args field of a batched rowwise kernel that the
// launcher sets to 1 when every tensor in the field's Aligned list can be
// read in 16-byte vectors (kgenrt.RowsAligned): the per-launch choice of
// the CUDA and HIP vector paths (docs/views.md).
const AlignedField = "kgen_aligned"

// rowBatchNames checks a rowwise kernel's `batch:` and returns its names
// (nil without one): size fields, so none may be a size or index name or a
// name the spec gives, and what batching does not reach yet is refused.
func rowBatchNames(s *spec.Spec, diags *diag.List) []string {
	if len(s.Batch) > 0 && len(s.Segments) > 0 {
		diags.Addf(s.BatchPos, "segments and batch do not combine yet: batch the segments' rows in two launches, or write one segment")
		return nil
	}
	for _, in := range s.Inputs {
		if len(s.Batch) > 0 && in.Quant != nil {
			diags.Addf(s.BatchPos, "input %s is packed (quant:), which a batched kernel does not read yet: drop batch and flatten the leading dimensions into rows", in.Name.Name)
			return nil
		}
	}
	return specBatch(s, diags, "a size rows, cols or index row, col", "rows", "cols", "rows_per_group", "row", "col")
}

// specBatch checks a rowwise or elementwise kernel's `batch:` against the
// kind's own names (sizes, spelled in what for messages) and returns its
// names, nil without one.
func specBatch(s *spec.Spec, diags *diag.List, what string, sizes ...string) []string {
	if len(s.Batch) == 0 {
		return nil
	}
	out := checkBatchNames(s.Batch, specNames(s, sizes...), what, diags)
	switch {
	case s.Backward != nil:
		diags.Addf(s.BatchPos, "a batched kernel has no derived backward yet; drop backward, or batch without it")
	case len(s.Save) > 0:
		diags.Addf(s.BatchPos, "a batched kernel does not save lets for a backward yet; drop save")
	}
	return out
}

// elemBatchNames checks an elementwise kernel's `batch:` (specBatch).
func elemBatchNames(s *spec.Spec, diags *diag.List) []string {
	return specBatch(s, diags, "the size n or index i", "n", "i")
}

// specBatchBindings gives a batched rowwise kernel's tensors their batch
// dimensions (inputs as written, outputs all of them) and returns the args
// fields batching adds after the size fields: the batch sizes and groups.
func specBatchBindings(s *spec.Spec, batch []string, out []Binding, diags *diag.List) []Field {
	if len(batch) == 0 {
		return nil
	}
	for i := range out {
		var dims []spec.BatchDim
		var pos diag.Pos
		what := "output " + out[i].Name
		if out[i].Role == Input && i < len(s.Inputs) {
			dims, pos, what = s.Inputs[i].Batch, s.Inputs[i].BatchPos, "input "+out[i].Name
		}
		out[i].Batch = tensorBatch(batch, dims, pos, what, "the kernel's", diags)
	}
	return batchFields(batch, out, specNames(s, "rows", "cols", "rows_per_group", "n"), diags, s.BatchPos)
}

// batchTail is the args fields after a batched rowwise kernel's
// params: every tensor's strides, then AlignedField. layOutRowBatch
// redoes them once the schedule knows the [rows] outputs.
func batchTail(batch []string, out []Binding) []Field {
	if len(batch) == 0 {
		return nil
	}
	var names []string
	for _, b := range out {
		if b.Role != Args && !b.IsPerRow() {
			names = append(names, b.Name)
		}
	}
	return append(strideFields(out), Field{Name: AlignedField, Type: dtype.U32, Aligned: names})
}

// layOutRowBatch redoes a batched rowwise kernel's strides and aligned
// flag (batchTail) after the schedule made some outputs [rows] (one
// stride fewer each, and no vector access), keeping the fields before
// them where they are.
func layOutRowBatch(k *Kernel, r *Rows) {
	if len(r.Batch) == 0 {
		return
	}
	args := k.ArgsBinding()
	var fields []Field
	for _, f := range args.Fields {
		if f.StrideOf == "" && f.Name != AlignedField {
			fields = append(fields, f)
		}
	}
	fields = append(fields, batchTail(r.Batch, k.Bindings)...)
	for i := range fields {
		fields[i].Offset = 4 * i
	}
	k.Bindings[args.Index].Fields = fields
}

// checkRowBatch refuses what a batched rowwise kernel does not do yet:
// column reductions and totals (a workspace per batch element), top-k
// selections, indexed reads and positioned writes.
func checkRowBatch(s *spec.Spec, r *Rows, diags *diag.List) {
	if len(r.Batch) == 0 {
		return
	}
	what := ""
	switch {
	case r.Cols != nil:
		what = "column reductions and totals (col_*, total_sum)"
	case r.TopK != nil:
		what = "top-k selections"
	case len(r.Gathers) > 0:
		what = "indexed reads (subscripts)"
	case len(r.Scatters) > 0:
		what = "positioned writes (at:)"
	default:
		return
	}
	diags.Addf(s.BatchPos, "a batched rowwise kernel does not take %s yet; drop batch and flatten the leading dimensions into rows", what)
}

// rowGroups is a batched rowwise launch's groups: every row of every batch
// element, rows_per_group to a group.
func rowGroups(batch []string) *launch.Expr {
	return launch.Ceil(launch.Times(launch.V("rows"), batchGrid(batch)), launch.V("rows_per_group"))
}

// checkBatchKind refuses `batch:` where the kind has none: a top-level
// batch in a matmul (its batch is matmul: {batch: […]}), and an input's
// batch in a kernel without a launch batch.
func checkBatchKind(s *spec.Spec, diags *diag.List) {
	if len(s.Batch) > 0 && s.Kind == spec.Matmul {
		diags.Addf(s.BatchPos, "batch beside inputs is for rowwise and elementwise kernels; a matmul's goes in matmul: {batch: […]}")
	}
	if s.Kind == spec.Matmul || len(s.Batch) > 0 {
		return
	}
	for _, in := range s.Inputs {
		if in.BatchPos.Line > 0 {
			diags.Addf(in.BatchPos, "input %s: batch dimensions need the launch's batch (batch: [b, h] beside inputs; a matmul's: matmul: {batch: […]}); without one a rowwise or elementwise kernel flattens leading dimensions into rows or n", in.Name.Name)
		}
	}
}
