package golang

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/emit/inventory"
	"github.com/kgen-dev/kgen/ir"
)

// The elementwise kind: one stage computes every output of one element,
// element i of every tensor.
var elementwiseHandler = kindHandler{
	loops:          elementLoops,
	formulasDoc:    "Per element, in %s (math: %s):",
	prelude:        func(*ir.Kernel, *names) ([]jen.Code, error) { return nil, nil },
	perThread:      func(k *ir.Kernel) int { return k.Schedule.(*ir.Elems).PerThread },
	reference64Doc: []string{"Inputs must have equal lengths."},
	dispatchDoc:    elementDispatchDoc,
}

// elementLoops calls the stage for every element: for i < n.
func elementLoops(g *evalGen) []jen.Code {
	st := g.stages[0]
	n := g.k.BindingsOf(ir.Output)[0].Shape[0]
	idx := func(ir.Binding) jen.Code { return jen.Id("i") }
	return []jen.Code{jen.For(jen.Id("i").Op(":=").Lit(0), jen.Id("i").Op("<").Id(n), jen.Id("i").Op("++")).Block(g.store(st, 0, idx)...)}
}

func elementDispatchDoc(b *strings.Builder, ik *ir.Kernel, k inventory.Kernel) {
	fmt.Fprintf(b, "- dispatch: dispatchThreads, grid (`%s`), threadgroup (%d, %d, %d), %d element(s) per thread\n\n",
		strings.Join(k.Dispatch.Grid[:], "`, `"), k.Dispatch.Threadgroup[0], k.Dispatch.Threadgroup[1],
		k.Dispatch.Threadgroup[2], ik.Schedule.(*ir.Elems).PerThread)
}
