package e2e

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
)

// distinctRows are rows×cols values with no tie inside a row (MLX leaves
// the order of equal keys to its partition, kgen gives the lower column:
// distinct keys make both selections one set), every one exact in f32,
// f16 and bf16 for cols ≤ 256: row r holds (perm(j) − cols/2)/16 with
// perm(j) = (37j + 11r) mod cols, a permutation when cols is odd or
// coprime with 37. Wider f32 rows (a vocabulary) stay exact below 2^24.
func distinctRows(rows, cols int) []float32 {
	out := make([]float32, rows*cols)
	for r := range rows {
		for j := range cols {
			out[r*cols+j] = float32((37*j+11*r)%cols-cols/2) / 16
		}
	}
	return out
}

// TestTopKMatchesMLX holds kgen's top-k built-ins, their Metal kernels
// through the generated launchers (the MSL on the CPU harness), to MLX:
//
//   - topk_softmax (the MoE router) against mlx-lm's SwitchGLU gate:
//     s = mx.softmax(x), inds = mx.argpartition(-s, k-1)[:, :k],
//     w = take_along_axis(s, inds) / its sum: the same expert set per row
//     (MLX's order within the k is its partition's), each expert's weight
//     within 1e-6 relative (both f32; kgen divides exp(x − max) by the
//     selected sum, MLX the softmax by its sum);
//   - topk_logits (k = 50) against mx.topk (the values, sorted: exactly
//     the stored elements) and mx.argpartition (the same id set), at a
//     vocabulary-sized f32 row of 32000 too.
func TestTopKMatchesMLX(t *testing.T) {
	needMLX(t)
	emulateMetal(t)
	type shape struct{ rows, cols int }
	t.Run("nan", func(t *testing.T) { nanMatchesMLX(t) })
	for _, dt := range []kgenrt.DType{kgenrt.F32, kgenrt.F16, kgenrt.BF16} {
		shapes := []shape{{33, 64}, {5, 255}, {3, 9}}
		if dt == kgenrt.F32 {
			shapes = append(shapes, shape{2, 32001})
		}
		for _, sh := range shapes {
			t.Run(fmt.Sprintf("%s_%dx%d", dt, sh.rows, sh.cols), func(t *testing.T) {
				x, _ := kgenrt.FromFloat32(dt, distinctRows(sh.rows, sh.cols), sh.rows, sh.cols)
				if sh.cols <= 256 {
					routerMatchesMLX(t, x, sh.rows, sh.cols)
				}
				logitsMatchMLX(t, x, sh.rows, sh.cols)
			})
		}
	}
}

// routerMatchesMLX runs topk_softmax (k = 8) on x and MLX's router.
func routerMatchesMLX(t *testing.T, x *kgenrt.Tensor, rows, cols int) {
	t.Helper()
	const k = 8
	w, _ := kgenrt.New(kgenrt.F32, rows, k)
	ids, _ := kgenrt.New(kgenrt.I32, rows, k)
	if err := kernels.TopkSoftmax.Run(kgenrt.Metal, x, w, ids); err != nil {
		t.Fatal(err)
	}
	n := min(k, cols)
	want := runMLX(t, fmt.Sprintf(`
x = load('x', %d, %d)
s = mx.softmax(x, axis=-1)
inds = mx.argpartition(-s, kth=%d, axis=-1)[:, :%d]
w = mx.take_along_axis(s, inds, axis=-1)
save('w', w / w.sum(axis=-1, keepdims=True))
save('ids', inds)
`, rows, cols, n-1, n), map[string]*kgenrt.Tensor{"x": x}, rows*n, "w", "ids")
	worst := 0.0
	for r := range rows {
		mlxW := map[int]float64{}
		for s := range n {
			mlxW[int(want["ids"][r*n+s])] = want["w"][r*n+s]
		}
		for s := range k {
			id := int(ids.Int32At(r*k + s))
			if s >= n {
				if id != -1 || w.Float32At(r*k+s) != 0 {
					t.Errorf("row %d slot %d past %d columns: id %d weight %g; want -1 and 0", r, s, cols, id, w.Float32At(r*k+s))
				}
				continue
			}
			mw, ok := mlxW[id]
			if !ok {
				t.Errorf("row %d: kgen selects expert %d, MLX's %d experts do not include it", r, id, n)
				continue
			}
			got := float64(w.Float32At(r*k + s))
			d := math.Abs(got-mw) / math.Max(mw, 1e-30)
			worst = max(worst, d)
			if d > 1e-6 {
				t.Errorf("row %d expert %d: weight %g, MLX %g", r, id, got, mw)
			}
		}
	}
	t.Logf("topk_softmax: %d rows, the same experts as MLX's argpartition; weights within %.3g relative", rows, worst)
}

// logitsMatchMLX runs topk_logits (k = 50) on x, mx.topk and mx.argpartition.
func logitsMatchMLX(t *testing.T, x *kgenrt.Tensor, rows, cols int) {
	t.Helper()
	const k = 50
	vals, _ := kgenrt.New(x.DType(), rows, k)
	ids, _ := kgenrt.New(kgenrt.I32, rows, k)
	if err := kernels.TopkLogits.Run(kgenrt.Metal, x, vals, ids); err != nil {
		t.Fatal(err)
	}
	n := min(k, cols)
	want := runMLX(t, fmt.Sprintf(`
x = load('x', %d, %d)
save('vals', mx.topk(x, %d, axis=-1))
save('ids', mx.argpartition(-x, kth=%d, axis=-1)[:, :%[3]d])
`, rows, cols, n, n-1), map[string]*kgenrt.Tensor{"x": x}, rows*n, "vals", "ids")
	for r := range rows {
		mv, mi := want["vals"][r*n:(r+1)*n], want["ids"][r*n:(r+1)*n]
		slices.SortFunc(mv, func(a, b float64) int { return -cmpF(a, b) })
		var gv, gi, wi []float64
		for s := range n {
			gv = append(gv, float64(vals.Float32At(r*k+s)))
			gi = append(gi, float64(ids.Int32At(r*k+s)))
			wi = append(wi, mi[s])
		}
		slices.Sort(gi)
		slices.Sort(wi)
		if !slices.Equal(gv, mv) || !slices.Equal(gi, wi) {
			t.Errorf("row %d: kgen's values %v ids %v; MLX's %v and %v", r, gv[:min(n, 6)], gi[:min(n, 6)], mv[:min(n, 6)], wi[:min(n, 6)])
		}
		for s := n; s < k; s++ {
			if v, id := vals.Float32At(r*k+s), ids.Int32At(r*k+s); !math.IsInf(float64(v), -1) || id != -1 {
				t.Errorf("row %d slot %d past %d columns: %g, id %d; want -inf and -1", r, s, cols, v, id)
			}
		}
	}
	t.Logf("topk_logits: %d rows of %d, the values of mx.topk exactly and the ids of mx.argpartition", rows, cols)
}

// nanMatchesMLX: mx.topk ranks NaN above +inf (mx.sort puts it last), as
// kgen does: a row with a NaN and a +Inf gives both first, NaN first.
func nanMatchesMLX(t *testing.T) {
	const rows, cols, k = 2, 64, 50
	v := distinctRows(rows, cols)
	v[5], v[9], v[cols+3] = float32(math.NaN()), float32(math.Inf(1)), float32(math.NaN())
	x, _ := kgenrt.FromFloat32(kgenrt.F32, v, rows, cols)
	vals, _ := kgenrt.New(kgenrt.F32, rows, k)
	ids, _ := kgenrt.New(kgenrt.I32, rows, k)
	if err := kernels.TopkLogits.Run(kgenrt.Metal, x, vals, ids); err != nil {
		t.Fatal(err)
	}
	want := runMLX(t, fmt.Sprintf("x = load('x', %d, %d)\nsave('vals', mx.topk(x, %d, axis=-1))\n", rows, cols, k),
		map[string]*kgenrt.Tensor{"x": x}, rows*k, "vals")
	for r := range rows {
		mv := want["vals"][r*k : (r+1)*k]
		slices.SortFunc(mv, func(a, b float64) int { return -cmpF(a, b) })
		for s := range k {
			g := float64(vals.Float32At(r*k + s))
			if g != mv[s] && !(math.IsNaN(g) && math.IsNaN(mv[s])) {
				t.Errorf("row %d slot %d: kgen %g, MLX's topk sorted %g", r, s, g, mv[s])
			}
		}
	}
	if ids.Int32At(0) != 5 || ids.Int32At(1) != 9 || ids.Int32At(k) != 3 {
		t.Errorf("ids %d %d, %d: want the NaN (5), then +Inf (9); row 1's NaN (3)", ids.Int32At(0), ids.Int32At(1), ids.Int32At(k))
	}
}

// cmpF orders NaN above everything, as mx.sort does.
func cmpF(a, b float64) int {
	switch an, bn := math.IsNaN(a), math.IsNaN(b); {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
