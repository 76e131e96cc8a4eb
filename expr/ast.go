// Package expr is kgen's formula language: a lexer, a Pratt parser with Go's
// operator precedence, and a checker that resolves names and types.
//
// Grammar (precedence from loosest to tightest, all binary operators left
// associative):
//
//	expr    = or
//	or      = and { "||" and }
//	and     = cmp { "&&" cmp }
//	cmp     = sum { ("<" | "<=" | ">" | ">=" | "==" | "!=") sum }
//	sum     = product { ("+" | "-" | "|" | "^") product }
//	product = unary { ("*" | "/" | "%" | "<<" | ">>" | "&") unary }
//	unary   = ("-" | "!") unary | primary
//	primary = number | name | name "(" [ expr { "," expr } ] ")" | name "[" expr { "," expr } "]" | "(" expr ")"
//	number  = digits [ "." digits ] [ ("e" | "E") [ "+" | "-" ] digits ] | "." digits [exponent]
//
// Offsets in the tree are byte offsets into the formula text; the caller maps
// them to file positions.
package expr

import "github.com/kgen-dev/kgen/funcs"

// Type is the type of a formula value (defined by the function table,
// whose rows give argument and result types).
type Type = funcs.Type

// The value types. Numbers are computed in the kernel's compute type.
const (
	Unknown = funcs.Unknown
	Num     = funcs.Num
	Bool    = funcs.Bool
	Int     = funcs.Int
)

// ToFloat is the conversion of an integer to a number: f32(i) is i in the
// compute type (exact below 2^24 in f32; rounded to nearest even in f16
// and bf16).
const ToFloat = "f32"

// IntConversions are the conversions to an integer, each with the range it
// saturates to: of a number, toward zero (round first with rint or round),
// NaN giving 0; of an integer, clamped. The result is an integer (i32).
var IntConversions = map[string][2]int64{
	"i32": {-1 << 31, 1<<31 - 1},
	"i8":  {-128, 127},
	"u8":  {0, 255},
}

// IntOnly are the operators defined on integers alone: remainder, bit
// operations and shifts (the count taken modulo 32).
var IntOnly = map[string]bool{"%": true, "&": true, "|": true, "^": true, "<<": true, ">>": true}

// PairFuncs read, in a rowwise kernel, the element paired with the current
// one in a [rows, cols] input (rotary embeddings), by layout: interleaved
// pairs (2k, 2k+1), or split halves (k, k + cols/2). Their argument is the
// input's name; cols must be even. pair_half takes an optional second
// argument, the rotated width w (partial rotary embeddings): an integer
// uniform across the row; with h = clamp(w, 0, cols) / 2, columns below h
// pair with col + h, columns in [h, 2h) with col - h, the rest with
// themselves (ir.PairColWidth).
var PairFuncs = map[string]string{"pair_interleaved": "interleaved", "pair_half": "half"}

// Detach is detach(x): x itself, through which no gradient flows (a
// backward: kernel treats it as a constant; PyTorch's detach, JAX's
// stop_gradient). Softmax's max shift is the use: exp(x -
// detach(row_max(x))) has the same value, and its backward neither
// spends two passes on a gradient that is zero in exact arithmetic nor
// hands that zero's rounding to the row's largest element.
const Detach = "detach"

// Inf is the name of +∞ in formulas (-inf is its negation), for masks.
const Inf = "inf"

// Node is a formula tree node.
type Node interface {
	// Offset is the byte offset of the node's first character.
	Offset() int
}

// Number is a numeric literal. Int is set by the checker on an integer
// literal (digits only) used as an integer: beside another integer
// (row + 1), or alone where an integer is wanted.
type Number struct {
	Off  int
	Text string
	Int  bool
}

// Ident names an input, param, constant, earlier let, or pi.
type Ident struct {
	Off  int
	Name string
}

// Unary is -X or !X.
type Unary struct {
	Off int
	Op  string
	X   Node
}

// Binary is X Op Y; OpOff is the operator's offset.
type Binary struct {
	X     Node
	Op    string
	OpOff int
	Y     Node
}

// Call is Fn(Args...).
type Call struct {
	Off  int
	Fn   string
	Args []Node
}

// Index is Name[Args...]: an input read at computed integer coordinates,
// one per dimension (docs/indexing.md); a coordinate outside its dimension
// reads 0.
type Index struct {
	Off  int
	Name string
	Args []Node
}

// Paren is (X), kept so that messages and echoes can show the source shape.
type Paren struct {
	Off int
	X   Node
}

func (n *Number) Offset() int { return n.Off }
func (n *Ident) Offset() int  { return n.Off }
func (n *Unary) Offset() int  { return n.Off }
func (n *Binary) Offset() int { return n.X.Offset() }
func (n *Call) Offset() int   { return n.Off }
func (n *Paren) Offset() int  { return n.Off }
func (n *Index) Offset() int  { return n.Off }

// Walk calls f on n and its descendants, parents first.
func Walk(n Node, f func(Node)) {
	if n == nil {
		return
	}
	f(n)
	switch v := n.(type) {
	case *Unary:
		Walk(v.X, f)
	case *Binary:
		Walk(v.X, f)
		Walk(v.Y, f)
	case *Call:
		for _, a := range v.Args {
			Walk(a, f)
		}
	case *Paren:
		Walk(v.X, f)
	case *Index:
		for _, a := range v.Args {
			Walk(a, f)
		}
	}
}
