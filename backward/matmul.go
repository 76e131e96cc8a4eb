package backward

import (
	"slices"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/expr"
	"github.com/kgen-dev/kgen/internal/yamlnode"
	"github.com/kgen-dev/kgen/spec"
)

// epilogue restates a matmul spec's epilogue as the rowwise kernel it is
// per output row, so that derivation can treat it like any other: the
// accumulators become [rows, cols] inputs of the storage dtype (acc, or
// the names the Bs give them), [n] inputs [cols], [m] inputs [rows], and
// the sizes m and n become rows and cols. Its backward writes the
// accumulators' gradients, from which the caller's own GEMMs give dA and dB
// (dA = acc_grad · Bᵀ, dB = Aᵀ · acc_grad; a quantized B's dA alike, through
// the frozen weights), and the epilogue inputs' gradients (a bias's summed
// over the rows).
func epilogue(s *spec.Spec, diags *diag.List) *spec.Spec {
	mm := s.Matmul
	switch {
	case mm.Then != nil:
		diags.Addf(s.Backward.Pos, "backward is not offered for a matmul chain (then:) yet")
		return nil
	case mm.Batch != nil:
		diags.Addf(s.Backward.Pos, "backward is not offered for a batched matmul yet")
		return nil
	}
	e := *s
	e.Kind, e.Matmul, e.Tile, e.CUDATiles = spec.Rowwise, nil, nil, nil
	// A matmul's epilogue computes in f32 whatever the storage (ir), and so
	// does its gradient: in f16, tanh saturates to -1 where GELU's
	// derivative is still 1e-3.
	e.Compute = spec.TypeRef{Type: dtype.F32, Pos: s.Backward.Pos}
	e.Inputs = nil
	for _, b := range mm.B {
		e.Inputs = append(e.Inputs, spec.Input{Name: b.Acc})
	}
	for _, in := range s.Inputs {
		switch {
		case slices.Equal(in.Dims, []string{"n"}):
			in.Dims = []string{"cols"}
		case slices.Equal(in.Dims, []string{"m"}):
			in.Dims = []string{"rows"}
		default:
			in.Dims = nil
		}
		in.Batch = nil
		e.Inputs = append(e.Inputs, in)
	}
	e.Let = renameSizes(s.Let, s.Backward.Pos)
	e.Outputs = renameSizes(s.Outputs, s.Backward.Pos)
	return &e
}

// renameSizes rewrites m and n as rows and cols in formulas.
func renameSizes(fs []spec.Formula, at diag.Pos) []spec.Formula {
	out := make([]spec.Formula, len(fs))
	for i, f := range fs {
		t := substitute(parse(f), func(name string) expr.Node {
			switch name {
			case "m":
				return ident("rows")
			case "n":
				return ident("cols")
			}
			return nil
		})
		f.Text, f.Map = format(t), yamlnode.Fixed(at)
		out[i] = f
	}
	return out
}
