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
)

// Expr is a checked expression. Numbers are in the compute type; Bool marks
// boolean values (comparisons, &&, ||, !).
type Expr struct {
	Op       Op
	Bool     bool
	Text     string // OpLiteral: the literal as written
	Ref      RefKind
	Name     string // OpRef
	Index    int    // OpRef: index among inputs, params, constants or lets
	Operator string // OpUnary, OpBinary
	Func     string // OpCall
	Args     []*Expr
	Off      int // OpCall: offset of the call in its formula, for messages
}
