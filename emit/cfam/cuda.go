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

// vectorPaths reports whether every tensor a pass walks is stored in T,
// the condition for the 16-byte vector paths ([rows] tensors are read and
// written once per row, never as vectors).
func vectorPaths(k *ir.Kernel) bool {
	for _, bd := range k.Bindings {
		if bd.Role != ir.Args && bd.DType != dtype.Invalid && !bd.IsPerRow() {
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
		if bd.Role != ir.Args && !bd.IsPerRow() { // [rows] tensors take no vector access
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
		scalarPath.loops(rw, p, body)
		return
	}
	rw.IfElse("kgen_vec", func() { vectorPath.loops(rw, p, body) }, func() { scalarPath.loops(rw, p, body) })
}

// rowPath is one way a CUDA pass walks its row: element by element or by
// 16-byte vectors. Both take an unrolled loop over the cache slots when the
// row fits the cache (filling the caches the pass reads first), else a
// strided loop over the row.
type rowPath struct {
	cached  string // the condition under which the row fits the cache
	slot    string // the cache-slot loop's variable
	count   string // its trip count
	j, at   string // the slot's first column and its value
	note    string // the comment on the cache fill
	strided string // the head of the strided loop
	fill    func(rw *rowWriter, n string)
	elems   func(rw *rowWriter, p int, fromCache bool, body elemBody)
}

var scalarPath = rowPath{
	cached: "kgen_cached", slot: "kgen_i", count: "kCache", j: "kgen_j", at: "kgen_lane + kgen_i * kgen_width",
	note:    "// Fill the cache first: independent guarded loads, all in flight at once.",
	strided: "for (unsigned int kgen_j = kgen_lane; kgen_j < kgen_cols; kgen_j += kgen_width)",
	fill: func(rw *rowWriter, n string) {
		rw.P("kgen_c_", n, "[kgen_i] = ", rw.loadCvt(rw.inputIndex(n), n+"[kgen_base + kgen_j]"), ";")
	},
	elems: func(rw *rowWriter, p int, fromCache bool, body elemBody) {
		for _, i := range rw.r.Reads[p-1] {
			n := rw.inputName(i)
			if fromCache && rw.r.IsCached(i) {
				rw.P("const ", rw.valType(i), " kgen_v_", n, " = kgen_c_", n, "[kgen_i];")
			} else {
				rw.P("const ", rw.valType(i), " kgen_v_", n, " = ", rw.deviceLoad(i), ";")
			}
		}
		rw.pairLoads(p, "kgen_j")
		body(false)
	},
}

var vectorPath = rowPath{
	cached: "kgen_vcached", slot: "kgen_s", count: "kSlots", j: "kgen_j0", at: "(kgen_lane + kgen_s * kgen_width) * kV",
	note:    "// Fill the cache first: independent guarded 16-byte loads, all in flight at once.",
	strided: "for (unsigned int kgen_j0 = kgen_lane * kV; kgen_j0 < kgen_cols; kgen_j0 += kgen_width * kV)",
	fill: func(rw *rowWriter, n string) {
		vecLoad(rw, n, "*reinterpret_cast<const uint4*>("+n+" + kgen_base + kgen_j0)")
		unrolledElems(rw, func() {
			rw.P("kgen_c_", n, "[kgen_s * kV + kgen_e] = kgen_cvt<C>(kgen_w_", n, "[kgen_e]);")
		})
	},
	elems: vecElems,
}

// loops writes pass p's loops on this path around body.
func (pt *rowPath) loops(rw *rowWriter, p int, body elemBody) {
	strided := func() {
		rw.P("#pragma unroll 4")
		rw.Block(pt.strided, func() { pt.elems(rw, p, false, body) })
	}
	if len(rw.r.Cached) == 0 {
		strided()
		return
	}
	rw.IfElse(pt.cached, func() {
		if fill := cacheFills(rw, p); len(fill) > 0 {
			rw.P(pt.note)
			pt.slots(rw, func() {
				for _, i := range fill {
					pt.fill(rw, rw.inputName(i))
				}
			})
		}
		pt.slots(rw, func() { pt.elems(rw, p, true, body) })
	}, strided)
}

// slots writes the unrolled loop over the cache slots, body running for
// the slots inside the row.
func (pt *rowPath) slots(rw *rowWriter, body func()) {
	rw.P("#pragma unroll")
	rw.Block("for (unsigned int "+pt.slot+" = 0; "+pt.slot+" < "+pt.count+"; ++"+pt.slot+")", func() {
		rw.P("const unsigned int ", pt.j, " = ", pt.at, ";")
		rw.Block("if ("+pt.j+" < kgen_cols)", body)
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
		for _, o := range elemOutputs(k) {
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
		vecPairLoads(rw, p, fromCache)
		body(true)
	})
	if write {
		for _, o := range elemOutputs(k) {
			n := k.FormulaName(o)
			rw.P("*reinterpret_cast<uint4*>(", n, " + kgen_base + kgen_j0) = *reinterpret_cast<const uint4*>(kgen_y_", n, ");")
		}
	}
}

// vecPairLoads declares the paired elements of pass p's pair reads on the
// vector path: an interleaved partner sits in the same 16-byte vector (kV
// is even), read from the vector or the cache slot next door; a split-half
// partner is a device load.
func vecPairLoads(rw *rowWriter, p int, fromCache bool) {
	if rw.r.Pair == "half" {
		rw.pairLoads(p, "(kgen_j0 + kgen_e)")
		return
	}
	for _, i := range rw.r.PairReads[p-1] {
		n := rw.inputName(i)
		if fromCache && rw.r.IsCached(i) {
			rw.P("const C kgen_p_", n, " = kgen_c_", n, "[kgen_s * kV + (kgen_e ^ 1u)];")
		} else {
			rw.P("const C kgen_p_", n, " = kgen_cvt<C>(kgen_w_", n, "[kgen_e ^ 1u]);")
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
