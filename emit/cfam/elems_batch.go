package cfam

import (
	"strings"

	"github.com/kgen-dev/kgen/ir"
)

// A batched elementwise kernel (ir.Elems.Batch) gives each batch element
// ceildiv(n, kPerThread) threads, one slice of its n elements each, batch
// element outermost: a thread unflattens its batch element (as a batched
// rowwise team does, rows_batch.go), moves every tensor's pointer to it,
// and moves its slice as the dense kernel does (16-byte vectors) when the
// launcher's ir.AlignedField says every view allows it, else element by
// element through each tensor's stride along n.

// elemBatchBase declares base, the thread's slice within its batch
// element, and moves the tensors' pointers; threads past the last slice
// return.
func elemBatchBase(w *Writer, k *ir.Kernel, d *Dialect) {
	o, batch := d.Offset, k.Batch()
	w.P("// Thread kgen_t takes slice kgen_t % kgen_tpe of batch element kgen_t / kgen_tpe of ", ir.Shape(batch).String(),
		"; each tensor's pointer moves to that element (element strides in args).")
	w.P("const ", o, " kgen_tpe = ((", o, ")args.n + kPerThread - 1) / kPerThread; // slices per batch element")
	w.P("const ", o, " kgen_t = ", d.Threads[GlobalID].Expr, ";")
	w.Block("if (kgen_t >= kgen_tpe * "+strings.Join(prefixed("args.", batch), " * ")+")", func() { w.P("return;") })
	w.P(d.Uint, " kgen_z = (", d.Uint, ")(kgen_t / kgen_tpe);")
	w.P("const ", o, " base = (kgen_t % kgen_tpe) * kPerThread;")
	batchIndices(w, d.Uint, batch)
	for _, b := range k.Bindings {
		if b.Role != ir.Args && len(b.Batch) > 0 {
			w.P(b.Name, " += ", strings.Join(batchTerms(b), " + "), ";")
		}
	}
}

// elemBatchLoads declares every input's slice and loads it: 16-byte
// vectors when the launch is aligned, else element by element at the
// tensor's stride along n.
func elemBatchLoads(w *Writer, k *ir.Kernel, d *Dialect, count string) {
	ins := k.BindingsOf(ir.Input)
	for _, b := range ins {
		w.P(d.ArrayAlign, d.TypeName(b.DType), " kgen_v_", b.Name, "[kPerThread];")
	}
	w.IfElse("args."+ir.AlignedField+" != 0u", func() {
		for _, b := range ins {
			w.P("kgen_load<kPerThread>(", b.Name, " + base, kgen_v_", b.Name, ", ", count, ");")
		}
	}, func() {
		elemLoop(w, d, true, func() {
			for _, b := range ins {
				w.P("kgen_v_", b.Name, "[i] = ", b.Name, "[(base + i) * args.", ir.StrideField(b, len(b.Batch)), "];")
			}
		})
	})
}

// elemBatchStores stores every output's slice as elemBatchLoads loads.
func elemBatchStores(w *Writer, k *ir.Kernel, d *Dialect, count string) {
	outs := k.BindingsOf(ir.Output)
	w.IfElse("args."+ir.AlignedField+" != 0u", func() {
		for _, b := range outs {
			w.P("kgen_store<kPerThread>(", b.Name, " + base, kgen_v_", b.Name, ", ", count, ");")
		}
	}, func() {
		elemLoop(w, d, true, func() {
			for _, b := range outs {
				w.P(b.Name, "[(base + i) * args.", ir.StrideField(b, len(b.Batch)), "] = kgen_v_", b.Name, "[i];")
			}
		})
	})
}
