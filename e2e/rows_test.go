package e2e

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgenrt"
)

// rowShapes are the (rows, cols) the rowwise CPU references are checked at.
var rowShapes = [][2]int{{0, 7}, {1, 1}, {1, 7}, {3, 64}, {2, 300}, {2, 1100}}

// rowTensors makes random tensors for a rowwise kernel: [rows+3s, cols]
// for segment s's tensors, [rows+3s] for its per-row ones, [cols] for row
// vectors, each after a batched kernel's batch dims of size 1.
func rowTensors(t *testing.T, k *kgenrt.Kernel, dt kgenrt.DType, rows, cols int, rng *rand.Rand) []*kgenrt.Tensor {
	t.Helper()
	var out []*kgenrt.Tensor
	seg := map[string]int{} // a segment's rows field → the segment's index
	for _, b := range k.Tensors() {
		d := b.DType
		if d == kgenrt.T {
			d = dt
		}
		shape := []int{cols}
		if n, err := strconv.Atoi(b.Shape[0]); err == nil && len(b.Shape) == 1 { // a total_sum's [1]
			shape = []int{n}
		} else if b.Shape[0] != "cols" {
			if _, ok := seg[b.Shape[0]]; !ok {
				seg[b.Shape[0]] = len(seg)
			}
			shape = []int{rows + 3*seg[b.Shape[0]]}
			if len(b.Shape) == 2 {
				last := cols
				if k, err := strconv.Atoi(b.Shape[1]); err == nil { // a top-k output's [rows, k]
					last = k
				}
				shape = append(shape, last)
			}
		}
		n := shape[0]
		if len(shape) == 2 {
			n *= shape[1]
		}
		for range b.Batch { // a batched kernel's (docs/rowwise.md): one batch element
			shape = append([]int{1}, shape...)
		}
		vals := make([]float32, n)
		if b.Role == kgenrt.Input {
			for i := range vals {
				vals[i] = float32(rng.Float64()*8 - 4)
			}
		}
		tn, err := kgenrt.FromFloat32(d, vals, shape...)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tn)
	}
	return out
}

// For every rowwise kernel × dtype × shape: Reference64 equals ir.EvalRows,
// and Reference lands within the tolerance (widened by the rounding bound)
// of the float64 evaluation of the values it was given.
func TestRowReferences(t *testing.T) {
	irk := repoKernels(t)
	found := 0
	for _, k := range kernels.Kernels() {
		if k.Kind != "rowwise" {
			continue
		}
		found++
		ik := irk[k.Name]
		if r := ik.Rows(); len(r.Gathers)+len(r.Scatters) > 0 {
			// Tensors of their own shapes, read or written at computed
			// coordinates (docs/indexing.md): this test draws whole rows
			// only. Their references are checked bit for bit against the
			// MSL (kgen verify's differential) and MLX (TestGatherMatchesMLX).
			continue
		}
		for _, v := range ik.Variants {
			for _, sh := range rowShapes {
				if paired(k) && sh[1]%2 != 0 {
					sh[1]++ // a kernel that pairs a row's elements takes even rows only
				}
				rng := rand.New(rand.NewPCG(uint64(sh[0]), uint64(sh[1])))
				ts := rowTensors(t, k, kgenrt.DType(v.DType), sh[0], sh[1], rng)
				params := make([]float64, len(k.Params()))
				for i := range params {
					params[i] = float64(float32(1e-5))
				}
				if err := k.RunCPU(ts, params...); err != nil {
					t.Fatalf("%s %v: %v", v.HostName, sh, err)
				}
				var ins [][]float64
				for i, b := range k.Tensors() {
					if b.Role == kgenrt.Input {
						ins = append(ins, ts[i].Float64s())
					}
				}
				want, err := k.RunCPU64(kgenrt.Sizes{"cols": sh[1]}, ins, params...)
				if err != nil {
					t.Fatal(err)
				}
				checkRows(t, ik, v, ts[len(ins):], ins, want, params, sh[1])
			}
		}
	}
	if found < 7 {
		t.Errorf("found %d rowwise kernels, want the 7 built-ins", found)
	}
}

func checkRows(t *testing.T, ik *ir.Kernel, v ir.Variant, outs []*kgenrt.Tensor, ins, want [][]float64, params []float64, cols int) {
	t.Helper()
	r := ir.Rounding{Unit: 0x1p-24, FuncUlps: 4}
	for s := 0; s < ik.NumSegments(); s++ {
		segIns := ik.SegmentBindings(s, ir.Input)
		segOuts := ik.SegmentBindings(s, ir.Output)
		rows := 0
		if cols > 0 {
			for _, b := range segIns {
				if len(b.Shape) == 2 {
					rows = len(ins[b.Index]) / cols
				}
			}
		}
		folds := ik.NewColFolds(cols) // the [cols] outputs, in ir.Cols.Outputs order
		for row := 0; row < rows; row++ {
			in := make([][]float64, len(segIns))
			for i, b := range segIns {
				switch {
				case b.IsRowVector():
					in[i] = ins[b.Index]
				case b.IsPerRow():
					in[i] = ins[b.Index][row : row+1]
				default:
					in[i] = ins[b.Index][row*cols : (row+1)*cols]
				}
			}
			ref, bound := ik.EvalRowsBoundAt(row, rows, in, params, r)
			f := 0
			for o, b := range segOuts {
				oi := b.Index - len(ins)
				if b.IsColOutput() { // judged once every row is folded, below
					folds[f].Add(ref[o], bound[o])
					f++
					continue
				}
				lo, hi := row*cols, (row+1)*cols
				switch {
				case b.IsPerRow():
					lo, hi = row, row+1
				case b.IsTopKOutput():
					k := ik.TopKSelection().K
					lo, hi = row*k, (row+1)*k
				}
				got := outs[oi].Float64s()[lo:hi]
				w64 := want[oi][lo:hi]
				for j := range ref[o] {
					if d := math.Abs(w64[j] - ref[o][j]); d > 1e-12*math.Abs(ref[o][j])+1e-300 {
						t.Fatalf("%s %s[%d,%d]: Reference64 %g, ir.EvalRows %g", v.HostName, b.Name, row, j, w64[j], ref[o][j])
					}
					lim := v.Tolerance.Abs + v.Tolerance.Rel*math.Abs(ref[o][j]) + bound[o][j]
					if d := math.Abs(got[j] - ref[o][j]); !(d <= lim) && got[j] != ref[o][j] { // equal: a top-k slot's -inf past a short row
						t.Fatalf("%s %s[%d,%d] cols=%d: Reference %g, want %g ± %g", v.HostName, b.Name, row, j, cols, got[j], ref[o][j], lim)
					}
				}
			}
		}
		f := 0
		for _, b := range segOuts {
			if !b.IsColOutput() {
				continue
			}
			oi := b.Index - len(ins)
			ref, bound := folds[f].Result(r)
			if folds[f].Whole() { // a total_sum: one value over every element
				v, e := folds[f].Total(r)
				ref, bound = []float64{v}, []float64{e}
			}
			f++
			got := outs[oi].Float64s()
			for j := range ref {
				if d := math.Abs(want[oi][j] - ref[j]); d > 1e-12*math.Abs(ref[j])+1e-300 && !(math.IsNaN(ref[j]) && math.IsNaN(want[oi][j])) {
					t.Fatalf("%s %s[%d] rows=%d: Reference64 %g, the fold of ir.EvalRows %g", v.HostName, b.Name, j, rows, want[oi][j], ref[j])
				}
				lim := v.Tolerance.Abs + v.Tolerance.Rel*math.Abs(ref[j]) + bound[j]
				if d := math.Abs(got[j] - ref[j]); !(d <= lim) && !(math.IsNaN(ref[j]) && math.IsNaN(got[j])) {
					t.Fatalf("%s %s[%d] rows=%d cols=%d: Reference %g, want %g ± %g", v.HostName, b.Name, j, rows, cols, got[j], ref[j], lim)
				}
			}
		}
	}
}

// paired reports whether a kernel reads paired elements (its row length
// must be even).
func paired(k *kgenrt.Kernel) bool {
	for _, b := range k.Bindings {
		if b.Paired {
			return true
		}
	}
	return false
}

// The rowwise launchers check shapes before anything runs.
func TestRowShapeErrors(t *testing.T) {
	x, _ := kgenrt.New(kgenrt.F32, 4, 8)
	y, _ := kgenrt.New(kgenrt.F32, 4, 8)
	w, _ := kgenrt.New(kgenrt.F32, 8)
	badW, _ := kgenrt.New(kgenrt.F32, 7)
	badY, _ := kgenrt.New(kgenrt.F32, 4, 7)
	if err := kernels.RmsNorm.Reference(x, w, y, 1e-5); err != nil {
		t.Fatal(err)
	}
	var te *kgenrt.TensorError
	if err := kernels.RmsNorm.Reference(x, badW, y, 1e-5); !errors.As(err, &te) || te.Tensor != "w" {
		t.Errorf("w of 7 columns for x of 8: %v, want a TensorError about w", err)
	}
	if err := kernels.RmsNorm.Reference(x, w, badY, 1e-5); !errors.As(err, &te) || te.Tensor != "y" {
		t.Errorf("y of another shape: %v, want a TensorError about y", err)
	}
	if err := kernels.RmsNorm.Reference(x, w, x, 1e-5); err != nil {
		t.Errorf("in place y = x: %v", err)
	}
	q, _ := kgenrt.New(kgenrt.F32, 2, 3, 8) // leading dims multiply into rows
	qy, _ := kgenrt.New(kgenrt.F32, 2, 3, 8)
	k, _ := kgenrt.New(kgenrt.F32, 1, 8)
	ky, _ := kgenrt.New(kgenrt.F32, 1, 8)
	if err := kernels.DualHeadNorm.Reference(q, w, k, w, qy, ky); err != nil {
		t.Errorf("dual head norm with 6 query rows and 1 key row: %v", err)
	}
	k7, _ := kgenrt.New(kgenrt.F32, 1, 7)
	ky7, _ := kgenrt.New(kgenrt.F32, 1, 7)
	if err := kernels.DualHeadNorm.Reference(q, w, k7, badW, qy, ky7); !errors.As(err, &te) {
		t.Errorf("segments with different cols: %v, want a TensorError", err)
	}
}

// TestDescriptorLaunchIsTheIRs checks that every generated descriptor
// carries the IR's launch of each port, and that its derived fields
// evaluate as the IR's team-width rule says.
func TestDescriptorLaunchIsTheIRs(t *testing.T) {
	irk := repoKernels(t)
	for _, k := range kernels.Kernels() {
		ik := irk[k.Name]
		for b := ir.Backend(0); b < ir.NumBackends; b++ {
			if !ik.Ports[b] {
				continue
			}
			want, got := ik.Launch(b), k.Launch[b]
			if want.GridStrings() != got.GridStrings() || want.Threadgroup != got.Threadgroup || len(want.Derived) != len(got.Derived) {
				t.Errorf("%s %s: descriptor launch %v %v, IR %v %v", k.Name, b, got.GridStrings(), got.Threadgroup, want.GridStrings(), want.Threadgroup)
			}
		}
		l := k.Launch[kgenrt.Metal]
		teams := len(l.Derived) > 0 && l.Derived[0].Field == "rows_per_group" // rowwise; a chain's derived fields are its decode split's
		for cols := 0; cols < 20000 && teams; cols += 7 {
			tg := l.Threadgroup[0]
			sizes, err := l.Sizes(map[string]int{"cols": cols, "rows": 1}) // rows: a column reduction's kgen_chunks
			if err != nil || sizes["rows_per_group"] != tg/ir.LanesPerRow(cols, tg) {
				t.Fatalf("%s cols %d: rows_per_group %v (%v), want %d", k.Name, cols, sizes["rows_per_group"], err, tg/ir.LanesPerRow(cols, tg))
			}
		}
	}
}
