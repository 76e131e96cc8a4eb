package cfam

import "fmt"

// metalRowLoops is Metal's pass loop: one strided loop over the row; a
// cached input is loaded from device memory by the pass that reads it
// first, which fills the lane's cache when the row fits it, and read from
// the cache by later passes.
func metalRowLoops(rw *rowWriter, p int, body elemBody) {
	rw.Block("for (uint kgen_i = 0, kgen_j = kgen_lane; kgen_j < kgen_cols; ++kgen_i, kgen_j += kgen_width)", func() {
		for _, i := range rw.r.Reads[p-1] {
			n := rw.inputName(i)
			switch {
			case rw.r.IsCached(i) && rw.r.FirstRead(i, p):
				rw.P("const ", rw.valType(i), " kgen_v_", n, " = ", rw.deviceLoad(i), ";")
				rw.Block("if (kgen_cached)", func() { rw.P("kgen_c_", n, "[kgen_i] = kgen_v_", n, ";") })
			case rw.r.IsCached(i):
				rw.P("const ", rw.valType(i), " kgen_v_", n, " = kgen_cached ? kgen_c_", n, "[kgen_i] : ", rw.deviceLoad(i), ";")
			default:
				rw.P("const ", rw.valType(i), " kgen_v_", n, " = ", rw.deviceLoad(i), ";")
			}
		}
		rw.pairLoads(p, "kgen_j")
		rw.gatherLoads(p, "kgen_j", nil)
		body(false, false)
	})
}

// metalInstances names one instantiation of the kernel template per storage
// dtype with [[host_name]], the name the host looks the function up by.
func metalInstances(w *Writer, v *view) {
	for _, variant := range v.kernel.Variants {
		t := v.d.Types[variant.DType]
		w.P(fmt.Sprintf("template [[host_name(%q)]] [[kernel]] decltype(%s<%s>) %s<%s>;", variant.HostName, v.Kernel, t, v.Kernel, t))
	}
}
