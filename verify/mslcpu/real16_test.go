package mslcpu

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The first round's real MLX and candle kernels in f16 and bf16: inputs
// rounded to the type, references in float64 on the rounded inputs, errors
// in units of the type's epsilon (2^-10 half, 2^-7 bfloat) relative to the
// result (at least to floor, where results cancel or underflow).

func runReal16(t *testing.T, path, host string, bufs [][]byte, grid, tg uint32, inc ...string) [][]byte {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := Run(ctx, Launch{Source: src, SourceOptions: SourceOptions{Path: path, IncludeDirs: inc}, HostName: host,
		Buffers: bufs, Grid: [3]uint32{grid, 1, 1}, Threadgroup: [3]uint32{tg, 1, 1}, Order: Shuffled})
	if err != nil {
		t.Fatalf("%s: %v", host, err)
	}
	return out
}

// rows16 is the 8 × 512 row input rounded to s, and its float64 values.
func rows16(s storage) ([]byte, []float64, int) {
	x, _, cols := realRows()
	b, v := s.encode(x)
	return b, v, cols
}

func softmaxRef(v []float64, cols int) []float64 {
	out := make([]float64, len(v))
	for r := 0; r*cols < len(v); r++ {
		row := v[r*cols : (r+1)*cols]
		m, s := math.Inf(-1), 0.0
		for _, x := range row {
			m = math.Max(m, x)
		}
		for _, x := range row {
			s += math.Exp(x - m)
		}
		for i, x := range row {
			out[r*cols+i] = math.Exp(x-m) / s
		}
	}
	return out
}

func rmsRef(v, w []float64, cols int, eps float64) []float64 {
	out := make([]float64, len(v))
	for r := 0; r*cols < len(v); r++ {
		row := v[r*cols : (r+1)*cols]
		s := 0.0
		for _, x := range row {
			s += x * x
		}
		k := 1 / math.Sqrt(s/float64(cols)+eps)
		for i, x := range row {
			out[r*cols+i] = w[i] * x * k
		}
	}
	return out
}

// layerNormRef returns the layer norm and, per value, |w·(x−m)·r| + |b|: the
// kernels compute in the type, so their error is relative to the terms.
func layerNormRef(v, w, b []float64, cols int, eps float64) (out, scale []float64) {
	out, scale = make([]float64, len(v)), make([]float64, len(v))
	for r := 0; r*cols < len(v); r++ {
		row := v[r*cols : (r+1)*cols]
		m, v2 := 0.0, 0.0
		for _, x := range row {
			m += x
		}
		m /= float64(cols)
		for _, x := range row {
			v2 += (x - m) * (x - m)
		}
		k := 1 / math.Sqrt(v2/float64(cols)+eps)
		for i, x := range row {
			out[r*cols+i] = w[i]*(x-m)*k + b[i]
			scale[r*cols+i] = math.Abs(w[i]*(x-m)*k) + math.Abs(b[i])
		}
	}
	return out, scale
}

// relErrsScaled is relErrs with each value's error taken relative to
// max(|want|, scale[i]).
func relErrsScaled(t *testing.T, host string, s storage, got []float32, want, scale []float64, limit float64) {
	t.Helper()
	relErrsAt(t, host, s, got, want, func(i int) float64 { return math.Max(scale[i], 1e-30) }, limit)
}

// TestRealMLX16 runs MLX's unary, binary, softmax, rms_norm and layer_norm
// kernels in float16 and bfloat16.
func TestRealMLX16(t *testing.T) {
	root := filepath.Join(realDir(t), "mlx")
	dir := filepath.Join(root, "mlx", "backend", "metal", "kernels")
	for _, s := range []storage{stF16, stBF16} {
		name := map[storage]string{stF16: "float16", stBF16: "bfloat16"}[s]
		x := realInputs(-4)
		xb, xv := s.encode(x)
		yb, yv := s.encode(realInputs(0.5))
		n := uint32(len(x))
		// MLX's Sigmoid computes 1/(1+exp(-x)) in the type itself: three
		// roundings, so up to 1.5 eps; Exp and Tanh round once.
		for _, u := range []struct {
			op    string
			ref   func(float64) float64
			limit float64
		}{{"Exp", math.Exp, 1}, {"Tanh", math.Tanh, 1}, {"Sigmoid", func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }, 2}} {
			host := "v_" + u.op + name + name
			out := runReal16(t, filepath.Join(dir, "unary.metal"), host, [][]byte{xb, make([]byte, len(xb)), u32sBytes(n)}, n, 64, root)
			want := make([]float64, len(xv))
			for i, v := range xv {
				want[i] = u.ref(v)
			}
			relErrs(t, host, s, s.decode(out[1]), want, 1e-3, u.limit)
		}
		for _, o := range []struct {
			op  string
			ref func(a, b float64) float64
		}{{"Add", func(a, b float64) float64 { return a + b }}, {"Multiply", func(a, b float64) float64 { return a * b }}} {
			host := "vv_" + o.op + name
			out := runReal16(t, filepath.Join(dir, "binary.metal"), host, [][]byte{xb, yb, make([]byte, len(xb)), u32sBytes(n)}, n, 64, root)
			want := make([]float64, len(xv))
			for i := range xv {
				want[i] = o.ref(xv[i], yv[i])
			}
			relErrs(t, host, s, s.decode(out[2]), want, 1e-30, 0.5)
		}
		rb, rv, cols := rows16(s)
		rows := uint32(len(rv) / cols)
		host := "block_softmax_" + name
		out := runReal16(t, filepath.Join(dir, "softmax.metal"), host, [][]byte{rb, make([]byte, len(rb)), u32sBytes(uint32(cols))}, rows*128, 128, root)
		relErrs(t, host, s, s.decode(out[1]), softmaxRef(rv, cols), 1e-3, 4)
		wb, wv := s.encode(realInputs(0.5)[:cols])
		const eps = 1e-5
		host = "rms" + name
		out = runReal16(t, filepath.Join(dir, "rms_norm.metal"), host, [][]byte{rb, wb, make([]byte, len(rb)),
			f32Bytes([]float32{eps}), u32sBytes(uint32(cols)), u32sBytes(1)}, rows*128, 128, root)
		relErrs(t, host, s, s.decode(out[2]), rmsRef(rv, wv, cols, float64(float32(eps))), 1e-3, 2)
		bb, bv := s.encode(realInputs(-4)[:cols])
		host = "layer_norm" + name
		out = runReal16(t, filepath.Join(dir, "layer_norm.metal"), host, [][]byte{rb, wb, bb, make([]byte, len(rb)),
			f32Bytes([]float32{eps}), u32sBytes(uint32(cols)), u32sBytes(1), u32sBytes(1)}, rows*64, 64, root)
		want, scale := layerNormRef(rv, wv, bv, cols, float64(float32(eps)))
		relErrsScaled(t, host, s, s.decode(out[3]), want, scale, 2)
	}
}

// TestRealCandle16 runs candle's unary, binary, softmax, rmsnorm and
// layernorm kernels in f16 and bf16.
func TestRealCandle16(t *testing.T) {
	dir := filepath.Join(realDir(t), "candle", "candle-metal-kernels", "src", "metal_src")
	for _, s := range []storage{stF16, stBF16} {
		name := typeName(s)
		x := realInputs(-4)
		xb, xv := s.encode(x)
		yb, yv := s.encode(realInputs(0.5))
		size := (&kargs{}).u64(len(x)).done()
		for _, u := range []struct {
			op  string
			ref func(float64) float64
		}{{"exp", math.Exp}, {"tanh", math.Tanh}, {"neg", func(v float64) float64 { return -v }}} {
			host := u.op + "_" + name
			out := runReal16(t, filepath.Join(dir, "unary.metal"), host, [][]byte{size, xb, make([]byte, len(xb))}, uint32(len(x)/2), 64)
			want := make([]float64, len(xv))
			for i, v := range xv {
				want[i] = u.ref(v)
			}
			relErrs(t, host, s, s.decode(out[2]), want, 1e-3, 1)
		}
		for _, o := range []struct {
			op  string
			ref func(a, b float64) float64
		}{{"badd", func(a, b float64) float64 { return a + b }}, {"bmul", func(a, b float64) float64 { return a * b }}} {
			host := o.op + "_" + name
			out := runReal16(t, filepath.Join(dir, "binary.metal"), host, [][]byte{size, xb, yb, make([]byte, len(xb))}, uint32(len(x)/2), 64)
			want := make([]float64, len(xv))
			for i := range xv {
				want[i] = o.ref(xv[i], yv[i])
			}
			relErrs(t, host, s, s.decode(out[3]), want, 1e-30, 0.5)
		}
		rb, rv, cols := rows16(s)
		n := uint32(len(rv))
		rows := n / uint32(cols)
		path := filepath.Join(dir, "reduce.metal")
		host := "softmax_" + name
		out := runReal16(t, path, host, [][]byte{u32sBytes(n), u32sBytes(uint32(cols)), rb, make([]byte, len(rb))}, rows*128, 128)
		relErrs(t, host, s, s.decode(out[3]), softmaxRef(rv, cols), 1e-3, 4)
		wb, wv := s.encode(realInputs(0.5)[:cols])
		const eps = 1e-5
		host = "rmsnorm_" + name
		out = runReal16(t, path, host, [][]byte{u32sBytes(n), u32sBytes(uint32(cols)), rb, make([]byte, len(rb)), wb, f32Bytes([]float32{eps})}, rows*128, 128)
		relErrs(t, host, s, s.decode(out[3]), rmsRef(rv, wv, cols, float64(float32(eps))), 1e-3, 2)
		bb, bv := s.encode(realInputs(-4)[:cols])
		host = "layernorm_" + name
		out = runReal16(t, path, host, [][]byte{u32sBytes(n), u32sBytes(uint32(cols)), rb, make([]byte, len(rb)), wb, bb, f32Bytes([]float32{eps})}, rows*128, 128)
		want, scale := layerNormRef(rv, wv, bv, cols, float64(float32(eps)))
		relErrsScaled(t, host, s, s.decode(out[3]), want, scale, 2)
	}
}
