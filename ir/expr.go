package ir

// Op is an expression node's operation.
type Op int

// The operations.
const (
	OpLiteral Op = iota // Text
	OpRef               // Ref, Name, Index
	OpUnary             // Operator ("-" or "!"), Args[0]
	OpBinary            // Operator, Args[0], Args[1]
	OpCall              // Func, Args
)

// RefKind says what a name refers to.
type RefKind int

// The kinds of name.
const (
	RefInput    RefKind = iota // an input tensor's element, converted to the compute type
	RefParam                   // a runtime param, converted to the compute type
	RefConstant                // a baked constant
	RefLet                     // an earlier let binding
	RefPi                      // π
	RefReduce                  // a row reduction's result (rowwise): Index into Rows.Reductions
	RefAcc                     // a matmul accumulator (f32, at the element's i, j): Index into Matmul.B
	RefIndex                   // an index or size (IndexNames: i, n; row, col, rows, cols; row, col, m, n): an integer, by Name
	RefInf                     // +∞ (inf; -inf is its negation)
	// RefPair is the element paired with this one in input Index (rowwise,
	// [rows, cols]): at column PairCol(Text, col, cols), Text the layout
	// ("interleaved" or "half", expr.PairFuncs), or PairColWidth(col,
	// cols, w) where Width is pair_half's width w; Name is the stage
	// parameter that carries it.
	RefPair
	// RefGather is an input read at computed coordinates (name[…],
	// gather.go): Index into Rows.Gathers, Name the stage parameter that
	// carries the element (GatherName), At the coordinates.
	RefGather
)

// PairWidthName is the per-row value holding pair_half's width w
// (Rows.PairWidth): the last target of the level-0 per-row stage.
const PairWidthName = "kgen_pair_width"

// PairColWidth is the column paired with col by pair_half(x, w) in a row of
// cols values, the one definition every backend mirrors (kgenrt's
// PairHalfWidth, the C-family kernels' kgen_ph): with h = clamp(w, 0,
// cols) / 2 (w made even and kept inside the row, so no read leaves it),
// columns below h pair with col + h, columns in [h, 2h) with col - h, and
// the columns from 2h on with themselves. At w = cols (even) it is
// PairCol("half", col, cols).
func PairColWidth(col, cols, w int) int {
	h := min(max(w, 0), cols) / 2
	switch {
	case col < h:
		return col + h
	case col < 2*h:
		return col - h
	}
	return col
}

// PairCol is the column paired with col in a row of cols (even) values:
// col ^ 1 interleaved, (col + cols/2) mod cols for split halves. An odd
// cols (refused by the launchers) keeps the last interleaved column paired
// with itself, never past the row.
func PairCol(layout string, col, cols int) int {
	if layout == "half" {
		return (col + cols/2) % cols
	}
	return min(col^1, cols-1)
}

// IndexNames are the integer names each kind's formulas see: the element's
// position and the sizes. A user name (input, param, …) of the same
// spelling shadows one, so specs written before they existed keep working.
var IndexNames = map[Kind][]string{
	Elementwise: {"i", "n"},
	Rowwise:     {"row", "col", "rows", "cols"},
	// A matmul's element (row, col) of the [m, n] product acc (a chain's
	// scores), and its sizes.
	KindMatmul: {"row", "col", "m", "n"},
}

// Expr is a checked expression. Numbers are in the compute type; Bool marks
// boolean values (comparisons, &&, ||, !); Int marks 32-bit integer values
// (indices, sizes, int params and inputs, integer lets, integer literals
// beside them, conversions i32/i8/u8, and the integer operators and select
// over them), whose + - * wrap; / and % truncate (by 0 they give 0), shift
// counts are taken modulo 32.
type Expr struct {
	Op       Op
	Bool     bool
	Int      bool
	Text     string // OpLiteral: the literal as written
	Ref      RefKind
	Name     string // OpRef
	Index    int    // OpRef: index among inputs, params, constants or lets
	Operator string // OpUnary, OpBinary
	Func     string // OpCall
	Args     []*Expr
	Off      int // OpCall: offset of the call in its formula, for messages
	// Width is a RefPair's width (pair_half(x, w): PairColWidth), nil for
	// the whole row. It is not among Args: it is a per-row value
	// (Rows.PairWidth), not an operand of the element's arithmetic.
	Width *Expr
	// At is a RefGather's coordinates, one per dimension of its input: not
	// among Args, since the loops compute them where they load the element
	// (gather.go), not the stage functions.
	At []*Expr
}
