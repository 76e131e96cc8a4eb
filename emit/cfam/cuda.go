package cfam

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kgen-dev/kgen/ir"
)

// The CUDA row passes. When cols is a multiple of the vector (kV = 16 /
// sizeof(T)) and every pointer is 16-byte aligned, lane l takes the row's
// 16-byte vectors l, l + lanes, …; otherwise its elements l, l + lanes, …,
// as on Metal. Cached inputs (ir.Rows.Cached) live in registers: when the
// row fits, the pass that first reads an input fills its cache with
// independent guarded loads (all in flight at once), and every pass is a
// fully unrolled loop over the cache slots (constant indices, so the arrays
// stay in registers). The vector path caches the raw 16-byte vectors in the
// storage type (a bf16 row costs half the registers of floats); wider rows
// take a loop that re-reads device memory, the first read asking L2 to keep
// the row and the last one to let it go. rows_per_group comes from the args
// struct: the IR's CUDA launch sets it (teams from one lane, at most
// ir.Rows.CUDAVectors 16-byte vectors per lane below the whole block).

// vectorSlots is the vector cache of each cached input, in 16-byte vectors
// per lane: the IR's CUDAVectors, which also sizes the teams, so every row
// a team of fewer than the whole block takes fits the cache. It stays
// under __launch_bounds__' 64 registers without spilling (ptxas, checked
// by TestCUDANoSpills); one cached bf16 input stays in registers up to 8K
// columns at 256 lanes, wider rows re-read through L2.
func vectorSlots(r *ir.Rows) int { return r.CUDAVectors }

// vectorPaths reports whether every tensor a pass walks is stored in T,
// the condition for the 16-byte vector paths (ir.Kernel.RowTensorsInT).
func vectorPaths(k *ir.Kernel) bool { return k.RowTensorsInT() }

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
		if bd.Role != ir.Args && !bd.IsPerRow() && !bd.IsColOutput() && !bd.IsTopKOutput() { // [rows] tensors take no vector access; [cols] and [rows, k] outputs none in the row passes
			ors = append(ors, fmt.Sprintf("reinterpret_cast<unsigned long long>(%s)", bd.Name))
		}
	}
	aligned := ""
	if rw.k.Batched() { // the launcher's choice from the views (ir.AlignedField)
		aligned = " && args." + ir.AlignedField + " != 0u"
	}
	rw.P("const bool kgen_vec = args.cols % kV == 0 && ((", strings.Join(ors, " | "), ") & 15) == 0", aligned, ";")
	if len(rw.r.Cached) > 0 {
		rw.P("constexpr unsigned int kSlots = ", vectorSlots(rw.r), "; // cached 16-byte vectors per lane and input")
		rw.P("const bool kgen_vcached = args.cols <= kSlots * kV * kgen_width;")
		for _, i := range rw.r.Cached {
			rw.P("alignas(16) T kgen_vc_", rw.inputName(i), "[kSlots * kV];")
		}
		for _, c := range rw.r.LetCache {
			n := rw.k.Steps[c.Step].Name
			rw.P("C ", letCacheName(n), "[kSlots * kV]; // ", n, ", from pass ", c.Pass, " (ir.Rows.LetCache)")
		}
	}
}

// cudaRowLoops writes pass p's element loops: the vector and scalar paths,
// chosen at run time, when vectors are possible, else the scalar path alone.
func cudaRowLoops(rw *rowWriter, p int, body elemBody) {
	if !vectorPaths(rw.k) {
		scalarLoop(rw, p, body)
		return
	}
	rw.IfElse("kgen_vec", func() { vectorLoops(rw, p, body) }, func() { scalarLoop(rw, p, body) })
}

// scalarLoop is the path for rows that are not whole aligned vectors: lane
// l takes elements l, l + lanes, … of device memory in every pass (no
// register cache: the row was just read by the same lane, so a re-read
// hits L1 or L2, and a cache here would cost the vector path registers).
func scalarLoop(rw *rowWriter, p int, body elemBody) {
	rw.P("#pragma unroll 4")
	rw.Block("for (unsigned int kgen_j = kgen_lane; kgen_j < kgen_cols; kgen_j += kgen_width)", func() {
		for _, i := range rw.r.Reads[p-1] {
			rw.P("const ", rw.valType(i), " kgen_v_", rw.inputName(i), " = ", rw.deviceLoad(i), ";")
		}
		rw.pairLoads(p, "kgen_j")
		rw.gatherLoads(p, "kgen_j", nil)
		body(false, false)
	})
}

// vectorLoops is the 16-byte vector path: an unrolled loop over the cache
// slots when the row fits the cache (filling the caches the pass reads
// first), else a strided loop that re-reads the row.
func vectorLoops(rw *rowWriter, p int, body elemBody) {
	strided := func() {
		rw.P("#pragma unroll 4")
		rw.Block("for (unsigned int kgen_j0 = kgen_lane * kV; kgen_j0 < kgen_cols; kgen_j0 += kgen_width * kV)", func() {
			vecElems(rw, p, false, body)
		})
	}
	if len(rw.r.Cached) == 0 {
		strided()
		return
	}
	rw.IfElse("kgen_vcached", func() {
		if fill := cacheFills(rw, p); len(fill) > 0 {
			rw.P("// Fill the cache first: independent guarded 16-byte loads, all in flight at once.")
			cacheSlots(rw, func() {
				for _, i := range fill {
					n := rw.inputName(i)
					rw.P("*reinterpret_cast<uint4*>(kgen_vc_", n, " + kgen_s * kV) = *reinterpret_cast<const uint4*>(", n, " + ", rw.vecAt(rw.k.SegmentBindings(0, ir.Input)[i]), ");")
				}
			})
		}
		cacheSlots(rw, func() { vecElems(rw, p, true, body) }) // the let-cached path
	}, strided)
}

// cacheSlots writes the unrolled loop over the vector cache slots, body
// running for the slots inside the row.
func cacheSlots(rw *rowWriter, body func()) {
	rw.P("#pragma unroll")
	rw.Block("for (unsigned int kgen_s = 0; kgen_s < kSlots; ++kgen_s)", func() {
		rw.P("const unsigned int kgen_j0 = (kgen_lane + kgen_s * kgen_width) * kV;")
		rw.Block("if (kgen_j0 < kgen_cols)", body)
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
	if fromCache {
		reads = rw.letCachedReads(p)
	}
	write := p == r.Passes+1 && !rw.rounds
	for _, i := range reads {
		n := rw.inputName(i)
		switch in := k.SegmentBindings(0, ir.Input)[i]; {
		case in.IsRowVector():
			vecLoad(rw, n, "__ldg(reinterpret_cast<const uint4*>("+n+" + "+rw.vecAt(in)+"))")
		case !fromCache || !r.IsCached(i):
			vecLoad(rw, n, rowLoad(rw, i, p, n+" + "+rw.vecAt(in)))
		}
	}
	vg := vecGathers(rw, p)
	if write {
		for _, o := range append(elemOutputs(k), vecScatters(rw)...) {
			rw.P("alignas(16) T kgen_y_", k.FormulaName(o), "[kV];")
		}
	}
	unrolledElems(rw, func() {
		for _, i := range reads {
			n := rw.inputName(i)
			if fromCache && !k.SegmentBindings(0, ir.Input)[i].IsRowVector() && r.IsCached(i) {
				rw.P("const C kgen_v_", n, " = kgen_cvt<C>(kgen_vc_", n, "[kgen_s * kV + kgen_e]);")
			} else {
				rw.P("const C kgen_v_", n, " = kgen_cvt<C>(kgen_w_", n, "[kgen_e]);")
			}
		}
		vecPairLoads(rw, p, fromCache)
		vecGatherElems(rw, vg)
		rw.gatherLoads(p, "kgen_j0 + kgen_e", vg)
		body(true, fromCache)
	})
	if write {
		for _, o := range elemOutputs(k) {
			n := k.FormulaName(o)
			rw.P("*reinterpret_cast<uint4*>(", n, " + ", rw.vecAt(o), ") = *reinterpret_cast<const uint4*>(kgen_y_", n, ");")
		}
		vecScatterStores(rw)
	}
}

// letCacheName is the let cache of the let named n: its floats for the
// lane's cache slots, kSlots * kV of them.
func letCacheName(n string) string { return "kgen_lc_" + n }

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
		if fromCache && !rw.k.SegmentBindings(0, ir.Input)[i].IsRowVector() && rw.r.IsCached(i) {
			rw.P("const C kgen_p_", n, " = kgen_cvt<C>(kgen_vc_", n, "[kgen_s * kV + (kgen_e ^ 1u)]);")
		} else {
			rw.P("const C kgen_p_", n, " = kgen_cvt<C>(kgen_w_", n, "[kgen_e ^ 1u]);")
		}
	}
}

// rowLoad spells the 16-byte load of input i at addr in pass p of the
// re-reading loop: a row read again by a later pass is kept in L2
// (kgen_ld_keep) on its first read and let go (__ldcs, evict first) on its
// last; a row read once takes a plain load.
func rowLoad(rw *rowWriter, i, p int, addr string) string {
	switch {
	case !rw.r.IsCached(i):
		return "*reinterpret_cast<const uint4*>(" + addr + ")"
	case rw.r.FirstRead(i, p):
		return "kgen_ld_keep(" + addr + ")"
	case lastRead(rw.r, i, p) && rw.r.TopK == nil: // a top-k selection walks pass P+1's rows once more
		return "__ldcs(reinterpret_cast<const uint4*>(" + addr + "))"
	}
	return "*reinterpret_cast<const uint4*>(" + addr + ")"
}

// lastRead reports whether pass p is the last to read input i.
func lastRead(r *ir.Rows, i, p int) bool {
	for q := p + 1; q <= r.Passes+1; q++ {
		if slices.Contains(r.Reads[q-1], i) {
			return false
		}
	}
	return true
}

// cudaInstances writes one extern "C" __global__ entry point per storage
// dtype, named by the variant's host name, calling the templated body.
func cudaInstances(w *Writer, v *view) {
	k, d := v.kernel, v.d
	bounds := fmt.Sprint(v.Threads)
	if v.MinBlocks > 0 {
		bounds += fmt.Sprint(", ", v.MinBlocks)
	}
	for _, variant := range k.Variants {
		t := d.Types[variant.DType]
		w.Func(`extern "C" __global__ void __launch_bounds__(`+bounds+") "+variant.HostName, kernelParams(k, d, t), func() {
			w.P(v.Kernel, "_body<", t, ">(", v.ParamNames, ");")
		})
		w.P()
	}
}
