package cudagpu

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgenrt"
	"github.com/kgen-dev/kgen/spec"
	"github.com/kgen-dev/kgen/verify/parity"
)

// rowCols and rowRows: the CPU row harness's widths (one column, odd below a
// warp, narrow rows several per block, a wide row, the widest row the
// register cache holds), plus 16, 24 and 128 (teams of one to 16 lanes,
// several rows per warp, with the vector path), 1024 and 2048 (teams of 64
// and 128 lanes under the CUDA geometry), 4099 (a wide row not a multiple
// of the 16-byte vector: the scalar path), 16384 and 16387 (wider than the
// vector cache: the re-reading loops, vector and scalar); rows none, one, a
// partial last block, and many blocks.
var (
	rowCols = append(append([]int(nil), parity.DefaultCols...), 16, 24, 128, 1024, 2048, 4099, 16384, 16387)
	rowRows = []int{0, 1, 11, 130}
)

// TestRowParity: every rowwise kernel with a CUDA port × dtype × width ×
// row count through the CUDA port (host tensors, outputs NaN-poisoned, so an
// unwritten element fails), judged by parity.Check against the float64 row
// evaluation with parity's rounding bound and tolerance rule. The launch is
// the kernel's CUDA launch description (ir.Kernel.Launch(ir.CUDA)) evaluated
// by parity over each shape, with the variant's element size.
func TestRowParity(t *testing.T) {
	_, ks := load(t)
	rows := make([]string, len(ks)) // each kernel's report lines, in kernel order
	// One parallel subtest per kernel (TestRowParity/kernels/<name>): the
	// float64 references dominate, and -test.run can pick kernels.
	t.Run("kernels", func(t *testing.T) {
		for i, k := range ks {
			if !k.Ports[spec.CUDA] || k.Kind != ir.Rowwise {
				continue
			}
			t.Run(k.Name, func(t *testing.T) {
				t.Parallel()
				rows[i] = rowParity(t, k)
			})
		}
	})
	var report strings.Builder
	fmt.Fprintf(&report, "| variant | shapes | elements checked | failed | max |got-ref| |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		report.WriteString(r)
	}
	t.Logf("CUDA row parity (cols %v × rows %v):\n%s", rowCols, rowRows, report.String())
	saveReport("parity_rows.md", report.String())
}

// rowParity checks one rowwise kernel's CUDA port and returns its report
// lines.
func rowParity(t *testing.T, k *ir.Kernel) string {
	d, port := readyPort(t, k.Name)
	results, err := parity.Check(context.Background(), k, nil, parity.Options{Seed: 7, Plain: true, Range: 8,
		Cols: rowCols, Rows: rowRows, Backend: ir.CUDA, Run: gpuRunner(d, port)})
	if err != nil {
		t.Fatalf("%s: %v", k.Name, err)
	}
	shapes := map[string]int{}
	for _, r := range results {
		shapes[r.HostName]++
		if r.Failed > 0 {
			t.Errorf("%s rows=%d cols=%d: %d of %d elements outside tolerance; first: %s", r.HostName, r.Rows, r.Cols, r.Failed, r.Checked, r.First)
		}
	}
	var report strings.Builder
	for _, r := range parity.Summarize(results) {
		fmt.Fprintf(&report, "| %s | %d | %d | %d | %.3g |\n", r.HostName, shapes[r.HostName], r.Lanes, r.Differ, r.MaxAbs)
	}
	return report.String()
}

// TestRowTypedLauncher goes through the generated API (RmsNorm.Run with
// 2-D tensors → CheckRows → rows_per_group → the CUDA port), in place too,
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
