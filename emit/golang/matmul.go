package golang

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/emit/inventory"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgenrt"
)

// The matmul kind: the accumulators come from kgenrt's blocked products
// (float32 sums in Reference, float64 in Reference64), then the epilogue
// stage runs for every element (i, j) of the [m, n] outputs.
var matmulHandler = kindHandler{
	loops:     matmulLoops,
	prelude:   matmulPrelude,
	given64:   []string{"m", "n", "k"},
	perThread: func(*ir.Kernel) int { return 1 },
	referenceDoc: []string{
		"The accumulators are float32 sums over k (kgenrt.MatMulF32, blocked and parallel); the",
		"kernel's simdgroup products sum in another order, which parity's bound allows for.",
	},
	reference64Doc: []string{
		"m, n and k give the matrices' sizes: a is m·k values, each b k·n (in their layouts),",
		"epilogue inputs n, m or m·n values; the outputs come back as m·n values, row-major.",
	},
	dispatchDoc: matmulDispatchDoc,
}

// matmulLoops computes each accumulator over the whole output, then calls
// the epilogue stage at every (kgenI, kgenJ).
func matmulLoops(g *evalGen) []jen.Code {
	mm := g.k.Matmul()
	product := "MatMulF32"
	if g.io.mode == dtype.Invalid {
		product = "MatMul64"
	}
	var out []jen.Code
	dims := []jen.Code{jen.Id("m"), jen.Id("n"), jen.Id("k")}
	for i, b := range mm.B {
		bv := jen.Id(g.n.local(b.Name))
		if b.Quant != nil {
			bv = jen.Id(fmt.Sprintf("kgenW%d", i))
			out = append(out, dequantLines(g, b, i)...)
		}
		args := []jen.Code{jen.Id(g.n.local(mm.A.Name)), jen.Lit(mm.A.ColMajor), bv, jen.Lit(b.ColMajor)}
		out = append(out, jen.Id(fmt.Sprintf("kgenAcc%d", i)).Op(":=").Add(rt(product)).Call(append(args, dims...)...))
	}
	if mm.Chain != nil {
		return append(out, chainLoops(g)...)
	}
	if mm.Rows != nil {
		return append(out, matmulRowLoop(g))
	}
	st := g.stages[0]
	body := []jen.Code{}
	for i, a := range st.Args {
		if a.Kind == ir.ArgAcc {
			body = append(body, jen.Id(g.n.local(a.Name)).Op(":=").Id(fmt.Sprintf("kgenAcc%d", st.Args[i].Index)).Index(jen.Id("kgenI").Op("*").Id("n").Op("+").Id("kgenJ")))
		}
	}
	body = append(body, g.store(st, 0, matmulIndex)...)
	loop := jen.For(jen.Id("kgenI").Op(":=").Lit(0), jen.Id("kgenI").Op("<").Id("m"), jen.Id("kgenI").Op("++")).Block(
		jen.For(jen.Id("kgenJ").Op(":=").Lit(0), jen.Id("kgenJ").Op("<").Id("n"), jen.Id("kgenJ").Op("++")).Block(body...))
	return append(out, loop)
}

// dequantLines dequantize quantized B i into kgenW<i>, [n, k] row-major
// (so read col-major): as the kernels compute it for Reference (an f32
// tensor), exactly for Reference64.
func dequantLines(g *evalGen, b ir.Operand, i int) []jen.Code {
	scales, biases := "", ""
	if b.Scales >= 0 {
		scales, biases = g.k.Bindings[b.Scales].Name, g.k.Bindings[b.Biases].Name
	}
	return dequantInto(g, fmt.Sprintf("kgenW%d", i), *b.Quant, b.Name, scales, biases, "n", "k", ir.QuantText(g.k, b))
}

// dequantInto dequantizes packed tensor packed (with its tables, "" for
// ggml) of [n, k] logical values into local out: an f32 tensor as the
// kernels compute it for Reference, the exact float64 values for
// Reference64.
func dequantInto(g *evalGen, out string, q kgenrt.Quant, packed, scales, biases, n, k, comment string) []jen.Code {
	w := jen.Id(out)
	tables := []jen.Code{jen.Nil(), jen.Nil()}
	if scales != "" {
		tables = []jen.Code{jen.Id(g.n.local(scales)), jen.Id(g.n.local(biases))}
	}
	args := append([]jen.Code{quantValue(q), jen.Id(g.n.local(packed))}, tables...)
	if g.io.mode == dtype.Invalid {
		return []jen.Code{jen.Add(w).Op(":=").Add(rt("Dequantize64Values")).Call(append(args, jen.Id(n), jen.Id(k))...).Comment(comment)}
	}
	return []jen.Code{
		jen.List(w, jen.Err()).Op(":=").Add(rt("DequantizedTensor")).Call(args...).Comment(comment),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
	}
}

// quantValue is a kgenrt.Quant literal.
func quantValue(q kgenrt.Quant) jen.Code {
	name := map[kgenrt.QuantFormat]string{kgenrt.Affine: "Affine", kgenrt.Q4_0: "Q4_0", kgenrt.Q8_0: "Q8_0"}[q.Format]
	return rt("Quant").Values(field("Format", rt(name)), field("Bits", jen.Lit(q.Bits)), field("Group", jen.Lit(q.Group)))
}

// matmulIndex is the element (kgenI, kgenJ) of a tensor by its shape.
func matmulIndex(b ir.Binding) jen.Code {
	switch b.Shape.String() {
	case "[n]":
		return jen.Id("kgenJ")
	case "[m]":
		return jen.Id("kgenI")
	}
	return jen.Id("kgenI").Op("*").Id("n").Op("+").Id("kgenJ")
}

func matmulDispatchDoc(b *strings.Builder, ik *ir.Kernel, k inventory.Kernel) {
	cuda := "no CUDA port"
	if mm := ik.Matmul(); mm != nil && mm.CUDA != nil {
		cuda = "CUDA: the library's host entry points, launched by CUTLASS (16-bit storage) or as the SIMT GEMM's grid (f32)"
	}
	fmt.Fprintf(b, "- dispatch (Metal): dispatchThreads, grid (`%s`), threadgroup (%d, 1, 1); %s\n",
		strings.Join(k.Dispatch.Grid[:], "`, `"), ik.Threadgroup, cuda)
	for _, line := range ik.Describe() {
		fmt.Fprintf(b, "- %s\n", line)
	}
	b.WriteString("\n")
}

// matmulPrelude: a matmul's Reference needs no prelude (its row
// accumulators are the one simdgroup's, matmulRowAcc).
func matmulPrelude(*ir.Kernel, *names) ([]jen.Code, error) { return nil, nil }

// matmulRowLoop runs a row-reducing matmul's stages row by row over the
// accumulators, as the rowwise kind's reference does over its inputs.
func matmulRowLoop(g *evalGen) jen.Code {
	used := map[string]bool{}
	for _, st := range g.stages {
		for _, a := range st.Args {
			if a.Kind == ir.ArgRowLet {
				used[a.Name] = true
			}
		}
	}
	colLoop := func(st ir.Stage, stmts ...jen.Code) jen.Code {
		var bind []jen.Code
		for _, a := range st.Args {
			if a.Kind == ir.ArgAcc {
				bind = append(bind, jen.Id(g.n.local(a.Name)).Op(":=").Id(fmt.Sprintf("kgenAcc%d", a.Index)).Index(jen.Id("kgenI").Op("*").Id("n").Op("+").Id("kgenJ")))
			}
		}
		return jen.For(jen.Id("kgenJ").Op(":=").Lit(0), jen.Id("kgenJ").Op("<").Id("n"), jen.Id("kgenJ").Op("++")).Block(append(bind, stmts...)...)
	}
	var body []jen.Code
	for _, st := range g.stages {
		switch st.Kind {
		case ir.StageRowLets:
			body = append(body, rowLetCall(g, st, 0, used)...)
		case ir.StagePass:
			var terms, adds, results []jen.Code
			for i, red := range g.k.Rows().Reductions {
				if red.Level != st.Level {
					continue
				}
				a, t := jen.Id(fmt.Sprintf("kgen_a%d", i)), jen.Id(fmt.Sprintf("kgen_t%d", i))
				body = append(body, jen.Add(a).Op(":=").Add(matmulRowAcc(g, red)).Comment(red.Op.Func()+"("+g.k.FormatExpr(red.Arg)+")"))
				terms = append(terms, t)
				adds = append(adds, g.io.add(a, jen.Id("kgenJ"), t))
				res := jen.Add(a).Dot("Result").Call(jen.Id("n"))
				if g.io.mode == dtype.BF16 || g.io.mode == dtype.F16 {
					res = roundTo(g.io.mode, res)
				}
				results = append(results, jen.Id(ir.ReductionName(i)).Op(":=").Add(res))
			}
			loop := append([]jen.Code{jen.List(terms...).Op(":=").Add(g.call(st, 0, matmulIndex))}, adds...)
			body = append(body, colLoop(st, loop...))
			body = append(body, results...)
		case ir.StageWrite:
			body = append(body, colLoop(st, g.store(st, 0, matmulIndex)...))
		}
	}
	return jen.For(jen.Id("kgenI").Op(":=").Lit(0), jen.Id("kgenI").Op("<").Id("m"), jen.Id("kgenI").Op("++")).Block(body...)
}

// matmulRowAcc is a row reduction's accumulator in a matmul's row loop:
// Reference combines the lanes by the xor butterfly the kernel's row
// passes write (kgenrt.NewRowAccButterfly), so a row_sum rounds as the
// kernel's does; Reference64 sums exactly as for any kind.
func matmulRowAcc(g *evalGen, red ir.Reduction) jen.Code {
	if g.io.mode == dtype.Invalid {
		return g.io.acc(red)
	}
	return rt("NewRowAccButterfly").Call(rt(rowOps[red.Op.Func()]))
}

// chainLoops computes a chain's scores from the accumulators, streams
// softmax(scores)·V with kgenrt (SoftmaxMatMulF32 in the kernel's order;
// SoftmaxMatMul64 in two passes for Reference64), then calls the write
// stage at every (kgenI, kgenJ) of the [m, p] outputs with acc2 and the
// row's sum of weights.
func chainLoops(g *evalGen) []jen.Code {
	mm := g.k.Matmul()
	ch := mm.Chain
	score, write := g.stages[0], g.stages[1]
	elem, stream := jen.Float32(), "SoftmaxMatMulF32"
	if g.io.mode == dtype.Invalid {
		elem, stream = jen.Float64(), "SoftmaxMatMul64"
	}
	loop := func(i, n string, body ...jen.Code) *jen.Statement {
		return jen.For(jen.Id(i).Op(":=").Lit(0), jen.Id(i).Op("<").Id(n), jen.Id(i).Op("++")).Block(body...)
	}
	scores := loop("kgenI", "m", loop("kgenJ", "n",
		jen.Id(g.n.local(mm.B[0].Acc)).Op(":=").Id("kgenAcc0").Index(jen.Id("kgenI").Op("*").Id("n").Op("+").Id("kgenJ")),
		jen.Id("kgenS").Index(jen.Id("kgenI").Op("*").Id("n").Op("+").Id("kgenJ")).Op("=").Add(g.call(score, 0, chainIndex))))
	outIdx := jen.Id("kgenI").Op("*").Id("p").Op("+").Id("kgenJ")
	writes := loop("kgenI", "m",
		jen.Id(ir.ReductionName(0)).Op(":=").Id("kgenL").Index(jen.Id("kgenI")),
		loop("kgenJ", "p", append([]jen.Code{jen.Id(g.n.local(ch.Then.Acc)).Op(":=").Id("kgenO").Index(outIdx)},
			g.store(write, 0, chainIndex)...)...))
	return []jen.Code{
		jen.Id("kgenS").Op(":=").Make(jen.Index().Add(elem), jen.Id("m").Op("*").Id("n")).Comment("the scores, " + g.k.FormatExpr(ch.Score)),
		scores,
		jen.List(jen.Id("kgenO"), jen.Id("kgenL")).Op(":=").Add(rt(stream)).Call(jen.Id("kgenS"), jen.Id(g.n.local(ch.Then.Name)), jen.Lit(ch.Then.ColMajor), jen.Id("m"), jen.Id("n"), jen.Id("p")),
		writes,
	}
}

// chainIndex is the element (kgenI, kgenJ) of a chain's [m, p] output.
func chainIndex(ir.Binding) jen.Code {
	return jen.Id("kgenI").Op("*").Id("p").Op("+").Id("kgenJ")
}
