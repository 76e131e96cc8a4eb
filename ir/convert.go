package ir

import (
	"fmt"

	"github.com/kgen-dev/kgen/expr"
)

// convert turns a checked tree into IR, dropping parentheses (the tree's
// shape already fixes the evaluation order).
func (c *formulaChecker) convert(n expr.Node) *Expr {
	switch v := n.(type) {
	case *expr.Number:
		return &Expr{Op: OpLiteral, Text: v.Text, Int: v.Int}
	case *expr.Ident:
		if v.Name == "pi" {
			return &Expr{Op: OpRef, Ref: RefPi, Name: "pi"}
		}
		if _, declared := c.symbols[v.Name]; v.Name == expr.Inf && !declared {
			return &Expr{Op: OpRef, Ref: RefInf, Name: expr.Inf}
		}
		e := &Expr{Op: OpRef, Name: v.Name}
		if sym, ok := c.symbols[v.Name]; ok {
			e.Ref, e.Index, e.Bool, e.Int = sym.kind, sym.index, sym.typ == expr.Bool, sym.typ == expr.Int
		}
		if e.Ref == RefInput && e.Index >= 0 && e.Index < len(c.s.Inputs) && c.s.Inputs[e.Index].Quant != nil { // a packed input: its element at (row, col), quant_rows.go
			row, col := &Expr{Op: OpRef, Ref: RefIndex, Name: "row", Int: true}, &Expr{Op: OpRef, Ref: RefIndex, Name: "col", Int: true}
			return &Expr{Op: OpRef, Ref: RefGather, Name: v.Name, Index: -1, Text: fmt.Sprint(e.Index), At: []*Expr{row, col}}
		}
		return e
	case *expr.Paren:
		return c.convert(v.X)
	case *expr.Unary:
		x := c.convert(v.X)
		return &Expr{Op: OpUnary, Operator: v.Op, Bool: v.Op == "!", Int: v.Op == "-" && x.Int, Args: []*Expr{x}}
	case *expr.Binary:
		e := &Expr{Op: OpBinary, Operator: v.Op, Args: []*Expr{c.convert(v.X), c.convert(v.Y)}}
		switch v.Op {
		case "&&", "||", "<", "<=", ">", ">=", "==", "!=":
			e.Bool = true
		default:
			e.Int = e.Args[0].Int
		}
		return e
	case *expr.Index:
		return c.convertIndex(v)
	case *expr.Call:
		if v.Fn == expr.Detach { // the value itself: only package backward tells it apart
			return c.convert(v.Args[0])
		}
		if layout, ok := expr.PairFuncs[v.Fn]; ok {
			name := v.Args[0].(*expr.Ident).Name // checked: an input's name
			e := &Expr{Op: OpRef, Ref: RefPair, Index: c.symbols[name].index, Name: "kgen_pair_" + name, Text: layout}
			if len(v.Args) == 2 {
				e.Width = c.convert(v.Args[1])
			}
			return e
		}
		e := &Expr{Op: OpCall, Func: v.Fn, Off: v.Off}
		for _, a := range v.Args {
			e.Args = append(e.Args, c.convert(a))
		}
		_, conv := expr.IntConversions[v.Fn]
		e.Int = conv || v.Fn == "topk_index" || v.Fn == "select" && len(e.Args) == 3 && e.Args[1].Int
		return e
	}
	return nil
}
