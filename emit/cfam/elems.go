package cfam

import (
	"strings"

	"github.com/kgen-dev/kgen/launch"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// elems writes elementwise kernels: each thread loads kPerThread
// consecutive elements of every input (16-byte vectors when the slice is
// whole), calls the eval stage per element and stores the outputs alike.
type elems struct{}

func (elems) describe(k *ir.Kernel, d *Dialect, v *view) {
	v.PerThread = perThread(k, d).String()
	v.Computes = "Computes, per element, in the compute type (" + computeName(k, d) + "; math: " + k.Math + ")"
	for _, s := range k.Steps {
		v.Formulas = append(v.Formulas, s.Name+" = "+s.Source)
	}
}

// helpers: the 16-byte load and store helpers of every element type.
func (elems) helpers(k *ir.Kernel, d *Dialect) []helper {
	seen := map[dtype.DType]bool{}
	for _, b := range k.Bindings {
		switch {
		case b.Role == ir.Args:
		case b.DType != dtype.Invalid:
			seen[b.DType] = true
		default:
			for _, v := range k.Variants {
				seen[v.DType] = true
			}
		}
	}
	var out []string
	for _, t := range dtype.Storage {
		if seen[t] {
			out = append(out, d.Types[t])
		}
	}
	return []helper{{"vector_io", out}}
}

func (elems) threads(*ir.Kernel) []ThreadIndex { return []ThreadIndex{GlobalID} }

func (elems) body(w *Writer, k *ir.Kernel, d *Dialect) {
	w.P("using C = ", computeName(k, d), ";")
	if per := perThread(k, d); per.Op != launch.Lit {
		// The IR's rule over the element size, spelled in C as it is.
		w.P("constexpr ", d.Uint, " ", launch.ElemBytes, " = sizeof(T);")
		w.P("constexpr ", d.Uint, " kPerThread = ", per, ";")
	} else {
		w.P("constexpr ", d.Uint, " kPerThread = ", per, ";")
	}
	if k.Batched() {
		elemBatchBase(w, k, d)
	} else {
		w.P("const ", d.Offset, " base = ", d.Threads[GlobalID].Expr, " * kPerThread;")
		w.Block("if (base >= args.n)", func() { w.P("return;") })
	}
	perThread := "kPerThread"
	if d.Offset != d.Uint {
		perThread = "(" + d.Offset + ")kPerThread"
	}
	w.P("const ", d.Uint, " count = min(", perThread, ", args.n - base);")
	if !d.UnrollElemLoops {
		elemSlice(w, k, d, "count", false)
		return
	}
	// A whole thread's slice (every thread but the last) takes a path
	// with a constant count and no per-element guard; the last thread's
	// partial slice keeps the guarded loop. On the H200 the guard alone
	// cost gelu_tanh, silu and gelu_erf (bf16, 2^27) 10-15% of copy
	// speed (docs/cuda.md, "Error budget and the whole-slice path").
	w.IfElse("count == kPerThread",
		func() { elemSlice(w, k, d, "kPerThread", false) },
		func() { elemSlice(w, k, d, "count", true) })
}

// elemSlice writes one thread's slice: load every input's count elements,
// evaluate each, store the outputs. guarded loops over all kPerThread slots
// with an `if (i < count)` (the arrays stay in registers); otherwise the
// loop runs count times (a constant kPerThread where unrolled).
func elemSlice(w *Writer, k *ir.Kernel, d *Dialect, count string, guarded bool) {
	st := k.Stages()[0]
	if k.Batched() {
		elemBatchLoads(w, k, d, count)
	}
	for _, b := range k.BindingsOf(ir.Input) {
		if k.Batched() {
			break
		}
		w.P(d.ArrayAlign, d.TypeName(b.DType), " kgen_v_", b.Name, "[kPerThread];")
		w.P("kgen_load<kPerThread>(", b.Name, " + base, kgen_v_", b.Name, ", ", count, ");")
	}
	outs := k.BindingsOf(ir.Output)
	for _, b := range outs {
		w.P(d.ArrayAlign, d.TypeName(b.DType), " kgen_v_", b.Name, "[kPerThread];")
	}
	elemLoop(w, d, guarded, func() {
		var args []string
		for _, a := range st.Args {
			switch a.Kind {
			case ir.ArgInput:
				if a.Int { // an integer tensor's element, as an int
					args = append(args, "(int)kgen_v_"+a.Name+"[i]")
					continue
				}
				args = append(args, d.Cvt("C", "kgen_v_"+a.Name+"[i]"))
			case ir.ArgParam:
				args = append(args, paramArg(d, a))
			case ir.ArgIndex: // i or n
				args = append(args, map[string]string{"i": "(int)(base + i)", "n": "(int)args.n"}[a.Name])
			}
		}
		for _, b := range outs {
			ty := "C"
			if b.DType.IsInt() {
				ty = "int"
			}
			w.P(ty, " kgen_c_", b.Name, ";")
			args = append(args, "kgen_c_"+b.Name)
		}
		w.P(st.Name, "(", strings.Join(args, ", "), ");")
		for _, b := range outs {
			w.P("kgen_v_", b.Name, "[i] = ", storeCvt(d, b, "kgen_c_"+b.Name), ";")
		}
	})
	if k.Batched() {
		elemBatchStores(w, k, d, count)
		return
	}
	for _, b := range outs {
		w.P("kgen_store<kPerThread>(", b.Name, " + base, kgen_v_", b.Name, ", ", count, ");")
	}
}

// perThread is the elements one thread handles on d's backend: a literal,
// or an expression of launch.ElemBytes (CUDA, per storage dtype).
func perThread(k *ir.Kernel, d *Dialect) *launch.Expr {
	return k.Schedule.(*ir.Elems).PerThreadOn(d.Backend)
}

// paramArg passes a param to a stage: an integer param as int (a u32 one
// wraps), a float one converted to the compute type.
func paramArg(d *Dialect, a ir.StageArg) string {
	if a.Int {
		return "(int)args." + a.Name
	}
	return d.Cvt("C", "args."+a.Name)
}

// elemLoop writes the loop over a thread's elements around element.
func elemLoop(w *Writer, d *Dialect, guarded bool, element func()) {
	if !d.UnrollElemLoops {
		w.Block("for ("+d.Uint+" i = 0; i < count; ++i)", element)
		return
	}
	// A constant trip count keeps the per-thread arrays in registers.
	w.P("#pragma unroll")
	w.Block("for ("+d.Uint+" i = 0; i < kPerThread; ++i)", func() {
		if guarded {
			w.Block("if (i < count)", element)
		} else {
			element()
		}
	})
}

// computeName spells the compute type; "T" is the variant's storage type.
func computeName(k *ir.Kernel, d *Dialect) string {
	return d.TypeName(k.Compute)
}
