package funcs

// String is the rule in words, for editors (kgen lsp's hover) and
// messages; the rules' meaning is documented on their constants.
func (r Rule) String() string {
	switch r {
	case Library:
		return "library: within a few ulps of the exact result; operand errors propagate by the partial derivatives"
	case Exact:
		return "exact: the operand's error passes through, nothing added"
	case Choice:
		return "choice: the result is one of the operands; its error is the largest operand error"
	case Select:
		return "select: the value and error of the operand picked"
	case Rounded:
		return "rounded: operand errors propagate by the derivatives, then one rounding of the compute type"
	}
	return "unknown rule"
}
