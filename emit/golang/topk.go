package golang

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// The top-k selection in the CPU references (ir.TopK, docs/topk.md): the
// topk stage's key for every column of the row, then kgenrt.TopK's sort in
// the selection's total order, whose first k are the kernels' k rounds'
// winners; topk_norm divides in float32 in slot order as the kernels do.

// topkDecl declares the row loops' selection, kgenTopK, once per call.
func topkDecl(g *evalGen) []jen.Code {
	t := g.k.TopKSelection()
	if t == nil {
		return nil
	}
	return []jen.Code{jen.Id("kgenTopK").Op(":=").Add(rt("NewTopK")).Call(jen.Lit(t.K), jen.Id("cols")).
		Comment(fmt.Sprintf("the top-%d selection of %s, reused row by row", t.K, g.k.FormatExpr(t.Key)))}
}

// topkRow selects one row and stores its selection outputs.
func topkRow(g *evalGen, st ir.Stage, seg int) []jen.Code {
	t := g.k.TopKSelection()
	key := jen.Add(g.call(st, seg, rowIndex))
	if g.io.mode != dtype.Invalid {
		key = jen.Float64().Call(key)
	}
	body := []jen.Code{
		jen.Comment(fmt.Sprintf("The top-%d selection: every column's key, then the first %d in (key descending, column ascending).", t.K, t.K)),
		jen.Id("kgenTopK").Dot("Reset").Call(),
		rowColLoop(jen.Id("kgenTopK").Dot("Add").Call(jen.Id("kgenJ"), key)),
		jen.Id("kgenTopK").Dot("Select").Call(),
	}
	var stores []jen.Code
	outs := g.k.SegmentBindings(seg, ir.Output)
	for _, o := range t.Outputs {
		b := outs[o.Out]
		var val jen.Code
		switch {
		case o.What == ir.TopKIndex:
			val = jen.Id("kgenTopK").Dot("Index").Call(jen.Id("kgenS")) // an int32 in every mode, as integer outputs are
		case o.What == ir.TopKNorm && g.io.mode == dtype.Invalid:
			val = jen.Id("kgenTopK").Dot("Norm").Call(jen.Id("kgenS"))
		case o.What == ir.TopKNorm:
			val = jen.Id("kgenTopK").Dot("Norm32").Call(jen.Id("kgenS"))
		case g.io.mode == dtype.Invalid:
			val = jen.Id("kgenTopK").Dot("Value").Call(jen.Id("kgenS"))
		default:
			val = jen.Id("kgenTopK").Dot("Value32").Call(jen.Id("kgenS"))
		}
		at := jen.Id("kgenRow").Op("*").Lit(t.K).Op("+").Id("kgenS")
		stores = append(stores, g.io.store(b, at, val))
	}
	return append(body, jen.For(jen.Id("kgenS").Op(":=").Lit(0), jen.Id("kgenS").Op("<").Lit(t.K), jen.Id("kgenS").Op("++")).Block(stores...))
}
