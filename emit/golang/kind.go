package golang

import (
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/emit/inventory"
	"github.com/kgen-dev/kgen/ir"
)

// kindHandler is what the Go emitter does differently per kind. Everything
// else (descriptor, launchers, call builder, stage functions, Reference and
// Reference64 frames) is shared and reads the IR's stages, shapes and
// launch. Adding a kind means adding one entry to kinds; a test fails while
// a kind has none (TestEveryKindHasAHandler).
type kindHandler struct {
	// loops writes the loops of Reference and Reference64 over the
	// elements of one evaluation mode: stage calls, accumulation, stores.
	loops func(g *evalGen) []jen.Code
	// prelude writes what Reference needs between the size locals and the
	// loops (nil: nothing).
	prelude func(k *ir.Kernel, n *names) ([]jen.Code, error)
	// given64 lists the size fields Reference64 takes as leading int
	// arguments because its inputs' lengths cannot tell them.
	given64 []string
	// perThread is the descriptor's ElemsPerThread: the most elements one
	// thread handles (the kernels' 32-bit indexing limit leaves that room).
	perThread func(k *ir.Kernel) int
	// referenceDoc and reference64Doc end the doc comments of Reference
	// and Reference64.
	referenceDoc, reference64Doc []string
	// formulasDoc heads the formulas in the kernel type's doc comment, a
	// format of the compute type and the math mode: what one evaluation
	// covers ("Per element", "Per row"), so a row reduction is not read as
	// a per-element value.
	formulasDoc string
	// dispatchDoc writes the dispatch lines of the kernel's inventory.md
	// section.
	dispatchDoc func(b *strings.Builder, ik *ir.Kernel, k inventory.Kernel)
}

var kinds = map[ir.Kind]kindHandler{
	ir.Elementwise: elementwiseHandler,
	ir.Rowwise:     rowwiseHandler,
	ir.KindMatmul:  matmulHandler,
}

// handler is k's kind handler; kernelFiles refuses kinds without one.
func handler(k *ir.Kernel) kindHandler { return kinds[k.Kind] }
