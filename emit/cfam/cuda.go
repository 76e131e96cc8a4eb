package cfam

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// The CUDA row passes. When cols is a multiple of the vector (kV = 16 /
// sizeof(T)) and every pointer is 16-byte aligned, lane l takes the row's
// 16-byte vectors l, l + lanes, …; otherwise its elements l, l + lanes, …,
// as on Metal. Cached inputs (ir.Rows.Cached) live in registers: when the
// row fits the cache, the pass that first reads an input fills the cache
// with independent guarded loads (all in flight at once), and every pass is
// a fully unrolled loop over the cache slots (constant indices, so the
// arrays stay in registers); wider rows take a loop that re-reads device
// memory. rows_per_group comes from the args struct: the CUDA port sets it
// with kgenrt.CUDARowsPerGroup (at most two 16-byte vectors per lane).

// vectorPaths reports whether every tensor is stored in T, the condition
// for the 16-byte vector paths.
func vectorPaths(k *ir.Kernel) bool {
	for _, bd := range k.Bindings {
		if bd.Role != ir.Args && bd.DType != dtype.Invalid {
			return false
		}
	}
	return true
}

// cudaRowDecls declares the vector width and whether this launch may take
// the 16-byte vector path (and its cached variant).
func cudaRowDecls(rw *rowWriter) {
	if !vectorPaths(rw.k) {
		return
	}
	rw.P("// 16-byte vectors when every row starts 16-byte aligned (cols a multiple of kV, aligned pointers).")
	rw.P("constexpr unsigned int kV = 16 / sizeof(T);")
	var ors []string
	for _, bd := range rw.k.Bindings {
		if bd.Role != ir.Args {
			ors = append(ors, fmt.Sprintf("reinterpret_cast<unsigned long long>(%s)", bd.Name))
		}
	}
	rw.P("const bool kgen_vec = args.cols % kV == 0 && ((", strings.Join(ors, " | "), ") & 15) == 0;")
	if len(rw.r.Cached) > 0 {
		rw.P("constexpr unsigned int kSlots = kCache / kV; // cached vectors per lane and input")
		rw.P("const bool kgen_vcached = args.cols <= kSlots * kV * kgen_width;")
	}
}

// cudaRowLoops writes pass p's element loops: the vector and scalar paths,
// chosen at run time, when vectors are possible, else the scalar path alone.
func cudaRowLoops(rw *rowWriter, p int, body elemBody) {
	if !vectorPaths(rw.k) {
		scalarLoops(rw, p, body)
		return
	}
	rw.IfElse("kgen_vec", func() { vecLoops(rw, p, body) }, func() { scalarLoops(rw, p, body) })
}

// cachedOrStrided writes the loop over the cache slots when the row fits
// the cache (cond), else the strided loop; without caches, the strided
// loop alone.
func cachedOrStrided(rw *rowWriter, cond string, cached, strided func()) {
	if len(rw.r.Cached) == 0 {
		strided()
		return
	}
	rw.IfElse(cond, cached, strided)
}

// slots writes an unrolled loop over the cache slots whose in-row elements
// run body; slot and j name the loop's slot and column variables.
func slots(rw *rowWriter, slot, count, j, at string, body func()) {
	rw.P("#pragma unroll")
	rw.Block("for (unsigned int "+slot+" = 0; "+slot+" < "+count+"; ++"+slot+")", func() {
		rw.P("const unsigned int ", j, " = ", at, ";")
		rw.Block("if ("+j+" < kgen_cols)", body)
	})
}

// scalarLoops writes a pass's element loop: unrolled over the cache when the
// row fits it, else strided over the row.
func scalarLoops(rw *rowWriter, p int, body elemBody) {
	at := "kgen_lane + kgen_i * kgen_width"
	cachedOrStrided(rw, "kgen_cached", func() {
		if fill := cacheFills(rw, p); len(fill) > 0 {
			rw.P("// Fill the cache first: independent guarded loads, all in flight at once.")
			slots(rw, "kgen_i", "kCache", "kgen_j", at, func() {
				for _, i := range fill {
					n := rw.inputName(i)
					rw.P("kgen_c_", n, "[kgen_i] = kgen_cvt<C>(", n, "[kgen_base + kgen_j]);")
				}
			})
		}
		slots(rw, "kgen_i", "kCache", "kgen_j", at, func() {
			scalarLoads(rw, p, true)
			body(false)
		})
	}, func() {
		rw.P("#pragma unroll 4")
		rw.Block("for (unsigned int kgen_j = kgen_lane; kgen_j < kgen_cols; kgen_j += kgen_width)", func() {
			scalarLoads(rw, p, false)
			body(false)
		})
	})
}

// cacheFills lists the cached inputs that pass p reads first, whose caches
// the pass fills.
func cacheFills(rw *rowWriter, p int) []int {
	var fill []int
	for _, i := range rw.r.Reads[p-1] {
		if rw.r.IsCached(i) && rw.r.FirstRead(i, p) {
			fill = append(fill, i)
		}
	}
	return fill
}

// scalarLoads writes an element's input reads in the scalar path;
// fromCache: the row fits the cache (the unrolled loop).
func scalarLoads(rw *rowWriter, p int, fromCache bool) {
	for _, i := range rw.r.Reads[p-1] {
		n := rw.inputName(i)
		switch in := rw.k.SegmentBindings(0, ir.Input)[i]; {
		case in.IsRowVector():
			rw.P("const C kgen_v_", n, " = kgen_cvt<C>(__ldg(&", n, "[kgen_j]));")
		case !fromCache || !rw.r.IsCached(i):
			rw.P("const C kgen_v_", n, " = kgen_cvt<C>(", n, "[kgen_base + kgen_j]);")
		default:
			rw.P("const C kgen_v_", n, " = kgen_c_", n, "[kgen_i];")
		}
	}
}

// vecLoops writes a pass's loop over 16-byte vectors (kV elements of T):
// over the cache slots when the row fits the cache, else strided over the
// row.
func vecLoops(rw *rowWriter, p int, body elemBody) {
	at := "(kgen_lane + kgen_s * kgen_width) * kV"
	cachedOrStrided(rw, "kgen_vcached", func() {
		if fill := cacheFills(rw, p); len(fill) > 0 {
			rw.P("// Fill the cache first: independent guarded 16-byte loads, all in flight at once.")
			slots(rw, "kgen_s", "kSlots", "kgen_j0", at, func() {
				for _, i := range fill {
					n := rw.inputName(i)
					vecLoad(rw, n, "*reinterpret_cast<const uint4*>("+n+" + kgen_base + kgen_j0)")
					unrolledElems(rw, func() {
						rw.P("kgen_c_", n, "[kgen_s * kV + kgen_e] = kgen_cvt<C>(kgen_w_", n, "[kgen_e]);")
					})
				}
			})
		}
		slots(rw, "kgen_s", "kSlots", "kgen_j0", at, func() { vecElems(rw, p, true, body) })
	}, func() {
		rw.P("#pragma unroll 4")
		rw.Block("for (unsigned int kgen_j0 = kgen_lane * kV; kgen_j0 < kgen_cols; kgen_j0 += kgen_width * kV)", func() {
			vecElems(rw, p, false, body)
		})
	})
}

// vecLoad declares the 16-byte vector kgen_w_<n> and loads src into it.
func vecLoad(rw *rowWriter, n, src string) {
	rw.P("alignas(16) T kgen_w_", n, "[kV];")
	rw.P("*reinterpret_cast<uint4*>(kgen_w_", n, ") = ", src, ";")
}

// unrolledElems writes the unrolled loop over one vector's elements.
func unrolledElems(rw *rowWriter, body func()) {
	rw.P("#pragma unroll")
	rw.Block("for (unsigned int kgen_e = 0; kgen_e < kV; ++kgen_e)", body)
}

// vecElems writes the work on one vector of pass p: its loads, the
// per-element loop around body and, in the write pass, the 16-byte output
// stores; fromCache: the row fits the cache.
func vecElems(rw *rowWriter, p int, fromCache bool, body elemBody) {
	k, r := rw.k, rw.r
	reads := r.Reads[p-1]
	write := p == r.Passes+1
	for _, i := range reads {
		n := rw.inputName(i)
		switch in := k.SegmentBindings(0, ir.Input)[i]; {
		case in.IsRowVector():
			vecLoad(rw, n, "__ldg(reinterpret_cast<const uint4*>("+n+" + kgen_j0))")
		case !fromCache || !r.IsCached(i):
			vecLoad(rw, n, "*reinterpret_cast<const uint4*>("+n+" + kgen_base + kgen_j0)")
		}
	}
	if write {
		for _, o := range k.SegmentBindings(0, ir.Output) {
			rw.P("alignas(16) T kgen_y_", k.FormulaName(o), "[kV];")
		}
	}
	unrolledElems(rw, func() {
		for _, i := range reads {
			n := rw.inputName(i)
			if fromCache && !k.SegmentBindings(0, ir.Input)[i].IsRowVector() && r.IsCached(i) {
				rw.P("const C kgen_v_", n, " = kgen_c_", n, "[kgen_s * kV + kgen_e];")
			} else {
				rw.P("const C kgen_v_", n, " = kgen_cvt<C>(kgen_w_", n, "[kgen_e]);")
			}
		}
		body(true)
	})
	if write {
		for _, o := range k.SegmentBindings(0, ir.Output) {
			n := k.FormulaName(o)
			rw.P("*reinterpret_cast<uint4*>(", n, " + kgen_base + kgen_j0) = *reinterpret_cast<const uint4*>(kgen_y_", n, ");")
		}
	}
}

// cudaInstances writes one extern "C" __global__ entry point per storage
// dtype, named by the variant's host name, calling the templated body.
func cudaInstances(w *Writer, v *view) {
	k, d := v.kernel, v.d
	bounds := fmt.Sprint(k.Threadgroup)
	if v.MinBlocks > 0 {
		bounds += fmt.Sprint(", ", v.MinBlocks)
	}
	for _, variant := range k.Variants {
		t := d.Types[variant.DType]
		w.Func(`extern "C" __global__ void __launch_bounds__(`+bounds+") "+variant.HostName, kernelParams(k, d, t), func() {
			w.P(k.Name, "_body<", t, ">(", v.ParamNames, ");")
		})
		w.P()
	}
}
