package cfam

import (
	"regexp"
	"strings"

	"github.com/kgen-dev/kgen/ir"
)

// A batched rowwise kernel (ir/rowwise_batch.go) flattens (batch element,
// row) into the team's row index kgen_row, batch element outermost: every
// team unflattens its own, then moves each tensor's pointer to its row (a
// [cols] tensor to its vector, a [rows] tensor to its value) through the
// strides in the args struct, as a batched matmul's groups move theirs to
// their matrices (batchPrologue). The passes then read column j of a row
// at j times the tensor's column stride, or, on the CUDA and HIP vector
// paths, which the launcher enables only when every stride allows them
// (ir.AlignedField), at j.

// batchRowCount declares the launch's rows over every batch element and
// returns its name: teams at or past it do no element work.
func (rw *rowWriter) batchRowCount() string {
	rw.P("const ", rw.d.Uint, " kgen_grows = args.rows * ", strings.Join(prefixed("args.", rw.k.Batch()), " * "), "; // the rows of every batch element")
	return "kgen_grows"
}

// batchRow splits the team's row into its batch element and its row there
// (kgen_r) and moves every tensor pointer to it.
func (rw *rowWriter) batchRow() {
	u, batch := rw.d.Uint, rw.k.Batch()
	rw.P("// Row kgen_row of the launch is row kgen_r of batch element kgen_z of ", ir.Shape(batch).String(),
		"; each tensor's pointer moves to that row (element strides in args).")
	rw.P("const ", u, " kgen_r = kgen_row % args.rows;")
	rw.P(u, " kgen_z = kgen_row / args.rows;")
	batchIndices(rw.Writer, u, batch)
	for _, b := range rw.k.Bindings {
		if b.Role == ir.Args {
			continue
		}
		terms := batchTerms(b)
		if !b.IsRowVector() { // [rows, cols] and [rows]: the row's own
			terms = append(terms, "kgen_r * args."+ir.StrideField(b, len(b.Batch)))
		}
		if len(terms) > 0 {
			rw.P(rw.k.FormulaName(b), " += ", strings.Join(terms, " + "), ";")
		}
	}
}

// rowIndex is the formulas' row: the team's row, or in a batched kernel
// its row within its batch element.
func (rw *rowWriter) rowIndex() string {
	if rw.k.Batched() {
		return "kgen_r"
	}
	return "kgen_row"
}

// rowAt is the offset of a [rows] tensor's value for the team's row: the
// row, or 0 from a batched kernel's moved pointer.
func (rw *rowWriter) rowAt() string {
	if rw.k.Batched() {
		return "0"
	}
	return "kgen_row"
}

// colAt is the offset of column col of tensor b's row (of b itself, a
// [cols] row vector): kgen_base + col in a dense kernel (col for a row
// vector), col times b's column stride from a batched kernel's moved
// pointer.
func (rw *rowWriter) colAt(b ir.Binding, col string) string {
	switch {
	case rw.k.Batched():
		if !plainRE.MatchString(col) {
			col = "(" + col + ")"
		}
		return col + " * args." + ir.StrideField(b, len(b.FullShape())-1)
	case b.IsRowVector():
		return col
	}
	return "kgen_base + " + col
}

// vecAt is the offset of the 16-byte vector at column kgen_j0 of tensor
// b's row on the CUDA vector path, where every column stride is 1.
func (rw *rowWriter) vecAt(b ir.Binding) string {
	if rw.k.Batched() || b.IsRowVector() {
		return "kgen_j0"
	}
	return "kgen_base + kgen_j0"
}

// plainRE matches an operand that needs no parentheses before a product:
// an identifier, or a call whose parentheses close at its end.
var plainRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*|(min|max)\([^()]*\)|\([^()]*\))$`)

// prefixed is each of names after prefix.
func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}
