package cudagpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgenrt"
	"github.com/kgen-dev/kgen/spec"
	"github.com/kgen-dev/kgen/verify/parity"
)

// rowCols and rowRows: the CPU row harness's widths (one column, odd below a
// warp, narrow rows several per block, a wide row, the widest row the
// register cache holds), plus 1024 and 2048 (teams of 64 and 128 lanes
// under the CUDA geometry), 4099 (a wide row not a multiple of the 16-byte
// vector: the scalar cached path), 16384 and 16387 (wider than the cache:
// the re-reading loops, vector and scalar); rows none, one, a partial last
// block, and many blocks.
var (
	rowCols = append(append([]int(nil), parity.DefaultCols...), 1024, 2048, 4099, 16384, 16387)
	rowRows = []int{0, 1, 11, 130}
)

// TestRowParity: every rowwise kernel with a CUDA port × dtype × width ×
// row count through the CUDA port (host tensors, outputs NaN-poisoned, so an
// unwritten element fails), judged against the float64 row evaluation with
// parity's rounding bound and tolerance rule.
func TestRowParity(t *testing.T) {
	_, ks := load(t)
	var report strings.Builder
	fmt.Fprintf(&report, "| variant | shapes | elements checked | failed | max |got-ref| |\n|---|---|---|---|---|\n")
	for _, k := range ks {
		if !k.Ports[spec.CUDA] || k.Kind != ir.Rowwise {
			continue
		}
		d := descriptor(t, k.Name)
		port, err := kgenrt.CUDAPortOf(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := port.Ready(); err != nil {
			t.Skipf("CUDA port of %s cannot run here: %v", k.Name, err)
		}
		for _, v := range k.Variants {
			var checked, failed, shapes int
			maxAbs := 0.0
			for _, cols := range rowCols {
				for _, rows := range rowRows {
					c, f, m, first, err := checkRowsGPU(k, d, port, v, rows, cols)
					if err != nil {
						t.Fatalf("%s rows=%d cols=%d: %v", v.HostName, rows, cols, err)
					}
					if f > 0 {
						t.Errorf("%s rows=%d cols=%d: %d of %d elements outside tolerance; first: %s", v.HostName, rows, cols, f, c, first)
					}
					checked, failed, shapes = checked+c, failed+f, shapes+1
					maxAbs = math.Max(maxAbs, m)
				}
			}
			fmt.Fprintf(&report, "| %s | %d | %d | %d | %.3g |\n", v.HostName, shapes, checked, failed, maxAbs)
		}
	}
	t.Logf("CUDA row parity (cols %v × rows %v):\n%s", rowCols, rowRows, report.String())
	if dir := os.Getenv("KGEN_PARITY_OUT"); dir != "" {
		os.WriteFile(filepath.Join(dir, "parity_rows.md"), []byte(report.String()), 0o644)
	}
}

func rowElem(b ir.Binding, v ir.Variant) dtype.DType {
	if b.DType != dtype.Invalid {
		return b.DType
	}
	return v.DType
}

func checkRowsGPU(k *ir.Kernel, d *kgenrt.Kernel, port kgenrt.Port, v ir.Variant, rows, cols int) (checked, failed int, maxAbs float64, first string, err error) {
	rng := rand.New(rand.NewPCG(7, uint64(rows)<<32|uint64(cols)))
	nseg := k.NumSegments()
	segRows := make([]int, nseg)
	for s := range segRows {
		segRows[s] = parity.SegmentRows(rows, s)
	}
	var kv *kgenrt.Variant
	for i := range d.Variants {
		if d.Variants[i].HostName == v.HostName {
			kv = &d.Variants[i]
		}
	}
	if kv == nil {
		return 0, 0, 0, "", fmt.Errorf("no variant %s", v.HostName)
	}
	vals := make([][]float64, len(k.Bindings))
	tensors := make([]*kgenrt.Tensor, len(k.Bindings))
	for _, b := range k.Bindings {
		if b.Role == ir.Args {
			continue
		}
		et := rowElem(b, v)
		n := cols
		if !b.IsRowVector() {
			n = segRows[b.Segment] * cols
		}
		f32 := make([]float32, n)
		vals[b.Index] = make([]float64, n)
		for j := range f32 {
			x := math.NaN() // outputs: every element must be overwritten
			if b.Role == ir.Input {
				x = dtype.Round((rng.Float64()*2-1)*8, et)
				vals[b.Index][j] = x
			}
			f32[j] = float32(x)
		}
		kt, err := kgenrt.FromFloat32(kgenrt.DType(et), f32)
		if err != nil {
			return 0, 0, 0, "", err
		}
		tensors[b.Index] = kt
	}
	var params []float64
	for i, p := range k.Params() {
		switch {
		case p.Type == dtype.F32 && i == 0:
			params = append(params, float64(float32(1e-5)))
		case p.Type == dtype.F32:
			params = append(params, float64(i))
		default:
			params = append(params, float64(3+i))
		}
	}
	// The Metal launcher's geometry, evaluated from the descriptor as the
	// generated launcher does; the CUDA port replaces rows_per_group and the
	// grid with its own launch's (the descriptor's Launch[CUDA]).
	ab := k.ArgsBinding()
	given := map[string]int{"cols": cols}
	si := 0
	for _, f := range ab.Fields {
		if f.Size && f.Name != "cols" && f.Derived == "" {
			given[f.Name] = segRows[si]
			si++
		}
	}
	ml := d.Launch[kgenrt.Metal]
	sizes, err := ml.Sizes(given)
	if err != nil {
		return 0, 0, 0, "", err
	}
	grid, err := ml.GridSize(sizes)
	if err != nil {
		return 0, 0, 0, "", err
	}
	args := make([]byte, 4*len(ab.Fields))
	pi := 0
	for _, f := range ab.Fields {
		var word uint32
		switch {
		case f.Size:
			word = uint32(sizes[f.Name])
		case f.Type == dtype.F32:
			word = math.Float32bits(float32(params[pi]))
			pi++
		default:
			word = uint32(int32(params[pi]))
			pi++
		}
		binary.LittleEndian.PutUint32(args[f.Offset:], word)
	}
	var ts []*kgenrt.Tensor
	for _, b := range d.Tensors() {
		ts = append(ts, tensors[b.Index])
	}
	call := &kgenrt.Call{Kernel: d, Variant: kv, Tensors: ts, Args: args,
		Grid: grid, Threadgroup: ml.Threadgroup}
	if err := port.Run(call); err != nil {
		return 0, 0, 0, "", err
	}
	rounding := parity.RoundingFor(k, v)
	for s := 0; s < nseg; s++ {
		ins, outs := k.SegmentBindings(s, ir.Input), k.SegmentBindings(s, ir.Output)
		row := make([][]float64, len(ins))
		for r := 0; r < segRows[s]; r++ {
			for i, b := range ins {
				if b.IsRowVector() {
					row[i] = vals[b.Index]
				} else {
					row[i] = vals[b.Index][r*cols : (r+1)*cols]
				}
			}
			want, bound := k.EvalRowsBound(row, params, rounding)
			for o, b := range outs {
				out := tensors[b.Index]
				for j := 0; j < cols; j++ {
					g := float64(out.Float32At(r*cols + j))
					checked++
					dd, ok := parity.Within(g, want[o][j], bound[o][j], rowElem(b, v), v.Tolerance)
					maxAbs = math.Max(maxAbs, dd)
					if !ok {
						failed++
						if first == "" {
							first = fmt.Sprintf("%s[%d, %d] = %g, want %g ± %.3g", b.Name, r, j, g, want[o][j], bound[o][j])
						}
					}
				}
			}
		}
	}
	return checked, failed, maxAbs, first, nil
}

// TestRowTypedLauncher goes through the generated API (RmsNorm.Run with
// 2-D tensors → Check → rows_per_group → the CUDA port), in place too,
// against the CPU reference.
func TestRowTypedLauncher(t *testing.T) {
	if _, err := kernels.RmsNorm.Select(kgenrt.CUDA); err != nil {
		t.Skipf("no CUDA here: %v", err)
	}
	for _, cols := range []int{7, 128, 4096, 16384} {
		rows := 37
		xs := make([]float32, rows*cols)
		for i := range xs {
			xs[i] = float32(i%97)/8 - 6
		}
		ws := make([]float32, cols)
		for i := range ws {
			ws[i] = 1 + float32(i%5)/4
		}
		for _, dt := range []kgenrt.DType{kgenrt.F32, kgenrt.F16, kgenrt.BF16} {
			x, _ := kgenrt.FromFloat32(dt, xs, rows, cols)
			w, _ := kgenrt.FromFloat32(dt, ws, cols)
			y, _ := kgenrt.New(dt, rows, cols)
			ref, _ := kgenrt.New(dt, rows, cols)
			if err := kernels.RmsNorm.Run(kgenrt.CUDA, x, w, y, 1e-5); err != nil {
				t.Fatal(err)
			}
			if err := kernels.RmsNorm.Reference(x, w, ref, 1e-5); err != nil {
				t.Fatal(err)
			}
			tol := map[kgenrt.DType]float64{kgenrt.F32: 1e-5, kgenrt.F16: 2e-3, kgenrt.BF16: 2e-2}[dt]
			for i := 0; i < rows*cols; i++ {
				g, r := y.Float32At(i), ref.Float32At(i)
				if d := math.Abs(float64(g - r)); d > tol*(1+math.Abs(float64(r))) {
					t.Fatalf("cols %d %v: y[%d] = %g, reference %g", cols, dt, i, g, r)
				}
			}
			if err := kernels.RmsNorm.Run(kgenrt.CUDA, x, w, x, 1e-5); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < rows*cols; i++ {
				if x.Float32At(i) != y.Float32At(i) {
					t.Fatalf("cols %d %v in place: x[%d] = %g, want %g", cols, dt, i, x.Float32At(i), y.Float32At(i))
				}
			}
		}
	}
}
