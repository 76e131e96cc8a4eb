package mslcpu

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// llama.cpp's Metal library, ggml-metal.metal (about 12,000 lines with
// ggml-common.h and ggml-metal-impl.h), compiled whole and unmodified;
// kernels launched as ggml-metal-ops.cpp launches them: the same args
// structs, buffer indices, threadgroup counts and sizes, threadgroup memory
// and function constants (ggml-metal-device.cpp), and compared with float64.
//
// $KGEN_REAL_MSL/ggml/src/ggml-metal/ggml-metal.metal (the ggml repository)
// or $KGEN_REAL_MSL/llama.cpp/ggml/src/ggml-metal/ggml-metal.metal.

func ggmlPath(t *testing.T) string {
	t.Helper()
	dir := realDir(t)
	for _, p := range []string{"ggml/src/ggml-metal/ggml-metal.metal", "llama.cpp/ggml/src/ggml-metal/ggml-metal.metal"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			return filepath.Join(dir, p)
		}
	}
	t.Skipf("no ggml-metal.metal under %s (docs/emu.md says how to fetch it)", dir)
	return ""
}

// ggml's function-constant indices (ggml-metal-impl.h).
const (
	fcMulMV = 600
	fcUnary = 1200
	fcBin   = 1300
)

// ggmlBuild is one set of function constants: each set is one compile of
// the whole file, which every kernel launched with it shares.
type ggmlBuild struct {
	unaryOp, binOp, mulMVNSG int
}

func (b ggmlBuild) constants() map[string]string {
	s := strconv.Itoa
	return map[string]string{
		s(fcUnary): s(b.unaryOp), s(fcUnary + 1): "false",
		s(fcBin): s(b.binOp), s(fcBin + 1): "1", s(fcBin + 2): "false", s(fcBin + 3): "false",
		// FC_MUL_MV + 1 (nxpsg) is left unset, as ggml-metal-device.cpp
		// leaves it for these kernels.
		s(fcMulMV): s(b.mulMVNSG), s(fcMulMV + 2): "1", s(fcMulMV + 3): "1", s(fcMulMV + 4): "1",
	}
}

// kargs packs a C struct of 4- and 8-byte fields with C's alignment.
type kargs struct{ b []byte }

func (k *kargs) align(n int) {
	for len(k.b)%n != 0 {
		k.b = append(k.b, 0)
	}
}
func (k *kargs) i32(v ...int) *kargs {
	k.align(4)
	for _, x := range v {
		k.b = binary.LittleEndian.AppendUint32(k.b, uint32(int32(x)))
	}
	return k
}
func (k *kargs) i16(v ...int) *kargs {
	k.align(2)
	for _, x := range v {
		k.b = binary.LittleEndian.AppendUint16(k.b, uint16(int16(x)))
	}
	return k
}
func (k *kargs) u64(v ...int) *kargs {
	k.align(8)
	for _, x := range v {
		k.b = binary.LittleEndian.AppendUint64(k.b, uint64(x))
	}
	return k
}
func (k *kargs) f32(v ...float32) *kargs {
	k.align(4)
	for _, x := range v {
		k.b = binary.LittleEndian.AppendUint32(k.b, math.Float32bits(x))
	}
	return k
}
func (k *kargs) done() []byte { k.align(8); return k.b }

type ggmlLaunch struct {
	host    string
	bufs    [][]byte
	groups  [3]uint32 // dispatchThreadgroups
	tg      [3]uint32
	tgmem   uint32
	aliases map[int]int
}

func runGGML(t *testing.T, path string, b ggmlBuild, l ggmlLaunch) [][]byte {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var grid [3]uint32
	for i := range grid {
		grid[i] = l.groups[i] * l.tg[i]
	}
	var mem []uint32
	if l.tgmem > 0 {
		mem = []uint32{l.tgmem}
	}
	// A compile of the whole file takes about a minute on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := Run(ctx, Launch{Source: src,
		SourceOptions: SourceOptions{Path: path, IncludeDirs: []string{filepath.Dir(filepath.Dir(path))},
			Defines: []string{"GGML_METAL_HAS_BF16"}, FunctionConstants: b.constants()},
		HostName: l.host, Buffers: l.bufs, Grid: grid, Threadgroup: l.tg, ThreadgroupMemory: mem, Aliases: l.aliases, Order: Shuffled})
	if err != nil {
		t.Fatalf("%s: %v", l.host, err)
	}
	return out
}

// storage is a kernel's element type in device memory.
type storage int

const (
	stF32 storage = iota
	stF16
	stBF16
)

func (s storage) size() int {
	if s == stF32 {
		return 4
	}
	return 2
}

// encode rounds x to s (nearest even) and returns the bytes and the
// rounded values, the inputs the float64 reference sees.
func (s storage) encode(x []float32) ([]byte, []float64) {
	b := make([]byte, 0, len(x)*s.size())
	v := make([]float64, len(x))
	for i, f := range x {
		switch s {
		case stF32:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
			v[i] = float64(f)
		case stF16:
			h := F32ToF16(f)
			b = binary.LittleEndian.AppendUint16(b, h)
			v[i] = float64(F16ToF32(h))
		default:
			h := F32ToBF16(f)
			b = binary.LittleEndian.AppendUint16(b, h)
			v[i] = float64(math.Float32frombits(uint32(h) << 16))
		}
	}
	return b, v
}

func (s storage) decode(b []byte) []float32 {
	out := make([]float32, len(b)/s.size())
	for i := range out {
		switch s {
		case stF32:
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		case stF16:
			out[i] = F16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
		default:
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
		}
	}
	return out
}

// relErrs compares got with want: |got - want| / max(|want|, floor), in
// units of the storage type's epsilon (2^-23 float, 2^-10 half, 2^-7
// bfloat); it fails beyond limit.
func relErrs(t *testing.T, host string, s storage, got []float32, want []float64, floor, limit float64) {
	t.Helper()
	relErrsAt(t, host, s, got, want, func(int) float64 { return floor }, limit)
}

// relErrsAt is relErrs with a floor per value.
func relErrsAt(t *testing.T, host string, s storage, got []float32, want []float64, floor func(i int) float64, limit float64) {
	t.Helper()
	eps := map[storage]float64{stF32: 0x1p-23, stF16: 0x1p-10, stBF16: 0x1p-7}[s]
	worst, fails := 0.0, 0
	for i := range want {
		d := math.Abs(float64(got[i])-want[i]) / math.Max(math.Abs(want[i]), floor(i)) / eps
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		worst = math.Max(worst, d)
		if d > limit {
			if fails < 3 {
				t.Logf("%s[%d] = %g, want %g", host, i, got[i], want[i])
			}
			fails++
		}
	}
	t.Logf("| %s | %d | %.2f eps | %d |", host, len(want), worst, fails)
	if fails > 0 {
		t.Errorf("%s: %d of %d values beyond %.1f eps", host, fails, len(want), limit)
	}
}

// ggml's quantized blocks (ggml-common.h): q4_0 is a half scale and 16
// bytes of nibbles (element j in the low nibble of byte j, j+16 in the
// high; value (q-8)·d); q8_0 a half scale and 32 int8 (q·d).
func quantQ4_0(w []float32) (blocks []byte, deq []float64) {
	for b := 0; b < len(w)/32; b++ {
		x := w[32*b : 32*b+32]
		amax, max := 0.0, 0.0
		for _, v := range x {
			if math.Abs(float64(v)) > amax {
				amax, max = math.Abs(float64(v)), float64(v)
			}
		}
		d := F32ToF16(float32(max / -8))
		df := float64(F16ToF32(d))
		id := 0.0
		if df != 0 {
			id = 1 / df
		}
		blocks = binary.LittleEndian.AppendUint16(blocks, d)
		q := make([]int, 32)
		for j, v := range x {
			q[j] = min(15, int(float64(v)*id+8.5))
		}
		for j := 0; j < 16; j++ {
			blocks = append(blocks, byte(q[j]|q[j+16]<<4))
		}
		for j := 0; j < 32; j++ {
			deq = append(deq, float64(q[j]-8)*df)
		}
	}
	return blocks, deq
}

func quantQ8_0(w []float32) (blocks []byte, deq []float64) {
	for b := 0; b < len(w)/32; b++ {
		x := w[32*b : 32*b+32]
		amax := 0.0
		for _, v := range x {
			amax = math.Max(amax, math.Abs(float64(v)))
		}
		d := F32ToF16(float32(amax / 127))
		df := float64(F16ToF32(d))
		blocks = binary.LittleEndian.AppendUint16(blocks, d)
		for _, v := range x {
			q := int8(math.Round(float64(v) / df))
			blocks = append(blocks, byte(q))
			deq = append(deq, float64(q)*df)
		}
	}
	return blocks, deq
}

// ggmlValues are n seeded values in [lo, hi).
func ggmlValues(n int, seed uint32, lo, hi float64) []float32 {
	v := make([]float32, n)
	s := seed
	for i := range v {
		s = s*1664525 + 1013904223
		v[i] = float32(lo + (hi-lo)*float64(s>>8)/float64(1<<24))
	}
	return v
}

// TestRealGGML compiles llama.cpp's ggml-metal.metal whole (two sets of
// function constants: two compiles) and runs 24 of its kernels against
// float64: unary (GELU, SiLU) and binary (add, mul) elementwise kernels in
// f32 and f16, scalar and _4; RMSNorm (plain, fused with mul, _4) and
// LayerNorm; softmax with an f32 and an f16 mask, scalar and _4; and the
// matrix-vector products of q4_0, q8_0, f16, bf16 and f32 weights.
func TestRealGGML(t *testing.T) {
	path := ggmlPath(t)
	a := ggmlBuild{unaryOp: 103, binOp: 0, mulMVNSG: 2} // GELU, add, nsg of q4_0
	b := ggmlBuild{unaryOp: 106, binOp: 2, mulMVNSG: 4} // SiLU, mul, nsg of q8_0 and f16
	gelu := func(x float64) float64 {
		return 0.5 * x * (1 + math.Tanh(0.7978845608028654*x*(1+0.044715*x*x)))
	}
	silu := func(x float64) float64 { return x / (1 + math.Exp(-x)) }
	t.Run("unary", func(t *testing.T) {
		for _, c := range []struct {
			build ggmlBuild
			ref   func(float64) float64
		}{{a, gelu}, {b, silu}} {
			for _, s := range []storage{stF32, stF16} {
				for _, c4 := range []bool{false, true} {
					ggmlUnary(t, path, c.build, s, c4, c.ref)
				}
			}
		}
	})
	t.Run("binary", func(t *testing.T) {
		for _, c := range []struct {
			build ggmlBuild
			ref   func(x, y float64) float64
		}{{a, func(x, y float64) float64 { return x + y }}, {b, func(x, y float64) float64 { return x * y }}} {
			for _, s := range []storage{stF32, stF16} {
				for _, c4 := range []bool{false, true} {
					ggmlBinary(t, path, c.build, s, c4, c.ref)
				}
			}
		}
	})
	t.Run("norm", func(t *testing.T) {
		ggmlNorm(t, path, a, "kernel_rms_norm_f32", 501)
		ggmlNorm(t, path, a, "kernel_rms_norm_f32_4", 512)
		ggmlNorm(t, path, a, "kernel_rms_norm_mul_f32_4", 512)
		ggmlNorm(t, path, a, "kernel_norm_f32_4", 512)
	})
	t.Run("softmax", func(t *testing.T) {
		for _, mask := range []storage{stF32, stF16} {
			ggmlSoftmax(t, path, a, mask, 301)
			ggmlSoftmax(t, path, a, mask, 512)
		}
	})
	t.Run("mul_mv", func(t *testing.T) {
		ggmlMulMV(t, path, a, "q4_0")
		ggmlMulMV(t, path, b, "q8_0")
		ggmlMulMV(t, path, b, "f16")
		ggmlMulMV(t, path, b, "bf16")
		ggmlMulMV(t, path, b, "f32")
	})
}

func typeName(s storage) string {
	return map[storage]string{stF32: "f32", stF16: "f16", stBF16: "bf16"}[s]
}

// contiguous returns a 4-D tensor's byte strides nb0..nb3.
func contiguous(elem int, ne ...int) []int {
	nb := []int{elem, elem * ne[0], elem * ne[0] * ne[1], elem * ne[0] * ne[1] * ne[2]}
	return nb
}

// ggmlUnary launches kernel_unary_<t>_<t>[_4] as ggml_metal_op_unary does,
// on 8 rows of 4097 (scalar) or 4096 (_4) elements: over 32768 elements,
// so not the contiguous-count variant (FC_UNARY + 1 = false).
func ggmlUnary(t *testing.T, path string, b ggmlBuild, s storage, c4 bool, ref func(float64) float64) {
	ne00, ne01 := 4097, 8
	host := "kernel_unary_" + typeName(s) + "_" + typeName(s)
	if c4 {
		ne00, host = 4096, host+"_4"
	}
	x := ggmlValues(ne00*ne01, 7, -6, 6)
	in, xv := s.encode(x)
	nb := contiguous(s.size(), ne00, ne01, 1, 1)
	n0 := ne00
	if c4 {
		n0 = ne00 / 4
	}
	args := (&kargs{}).i32(n0, ne01, 1, 1).u64(nb...).i32(n0, ne01, 1, 1).u64(nb...).f32(0, 0, 0, 0, 0, 0).done()
	nth := min(n0, 256)
	nk0 := (n0 + nth - 1) / nth
	out := runGGML(t, path, b, ggmlLaunch{host: host, bufs: [][]byte{args, in, make([]byte, len(in))},
		groups: [3]uint32{uint32(nk0 * ne01), 1, 1}, tg: [3]uint32{uint32(nth), 1, 1}})
	want := make([]float64, len(xv))
	for i, v := range xv {
		want[i] = ref(v)
	}
	limit := 8.0 // f32: a few roundings; f16: computed in float, rounded once
	if s != stF32 {
		limit = 0.51
	}
	relErrs(t, host+opName(b.unaryOp), s, s.decode(out[2]), want, 1, limit)
}

func opName(op int) string {
	return map[int]string{103: " gelu", 106: " silu", 0: " add", 2: " mul"}[op]
}

// ggmlBinary launches kernel_bin_fuse_<t>_<t>_<t>[_4] as ggml_metal_op_bin
// does (no fusion, same shapes: not a row broadcast).
func ggmlBinary(t *testing.T, path string, b ggmlBuild, s storage, c4 bool, ref func(x, y float64) float64) {
	ne00, ne01 := 1001, 6
	host := "kernel_bin_fuse_" + typeName(s) + "_" + typeName(s) + "_" + typeName(s)
	if c4 {
		ne00, host = 1000, host+"_4"
	}
	x, y := ggmlValues(ne00*ne01, 3, -4, 4), ggmlValues(ne00*ne01, 5, 0.25, 4)
	xb, xv := s.encode(x)
	yb, yv := s.encode(y)
	nb := contiguous(s.size(), ne00, ne01, 1, 1)
	n0 := ne00
	if c4 {
		n0 = ne00 / 4
	}
	args := (&kargs{}).i32(n0, ne01, 1, 1).u64(nb...).i32(n0, ne01, 1, 1).u64(nb...).i32(n0, ne01, 1, 1).u64(nb...).
		u64(0).u64(0, 0, 0, 0, 0, 0, 0, 0).done()
	nth := 1
	for 2*nth < n0 && nth < 256 {
		nth *= 2
	}
	out := runGGML(t, path, b, ggmlLaunch{host: host, bufs: [][]byte{args, xb, yb, make([]byte, len(xb))},
		groups: [3]uint32{uint32(ne01), 1, 1}, tg: [3]uint32{uint32(nth), 1, 1}})
	want := make([]float64, len(xv))
	for i := range xv {
		want[i] = ref(xv[i], yv[i])
	}
	relErrs(t, host+opName(b.binOp), s, s.decode(out[3]), want, 1e-30, 0.51)
}

// ggmlNorm launches kernel_rms_norm_*/kernel_norm_* as ggml_metal_op_norm
// does: 5 rows, eps 1e-6, fused mul (kernel_rms_norm_mul_*) by a weight row.
func ggmlNorm(t *testing.T, path string, b ggmlBuild, host string, ne00 int) {
	rows := 5
	x := ggmlValues(ne00*rows, 11, -3, 3)
	w := ggmlValues(ne00, 13, 0.5, 1.5)
	xb, xv := stF32.encode(x)
	wb, wv := stF32.encode(w)
	ne00t := ne00
	if ne00%4 == 0 {
		ne00t = ne00 / 4
	}
	nb := contiguous(4, ne00, rows, 1, 1)
	const eps = 1e-6
	args := (&kargs{}).i32(ne00, ne00t).u64(nb[1], nb[2], nb[3]).f32(eps).
		i32(rows, 1, 1).i32(1, 1, 1).i32(1, 1, 1).
		u64(nb[1], 4*ne00, 0).u64(nb[2], 4*ne00, 0).u64(nb[3], 4*ne00, 0).done()
	nth := 32
	for nth < ne00t && nth < 1024 {
		nth *= 2
	}
	nth = min(nth, (ne00t+31)/32*32)
	mul := host == "kernel_rms_norm_mul_f32_4"
	layer := host == "kernel_norm_f32_4"
	out := runGGML(t, path, b, ggmlLaunch{host: host, bufs: [][]byte{args, xb, wb, xb, make([]byte, len(xb))},
		groups: [3]uint32{uint32(rows), 1, 1}, tg: [3]uint32{uint32(nth), 1, 1}, tgmem: 32 * 4})
	want := make([]float64, len(xv))
	for r := 0; r < rows; r++ {
		row := xv[r*ne00 : (r+1)*ne00]
		mean, ss := 0.0, 0.0
		if layer {
			for _, v := range row {
				mean += v
			}
			mean /= float64(ne00)
		}
		for _, v := range row {
			ss += (v - mean) * (v - mean)
		}
		scale := 1 / math.Sqrt(ss/float64(ne00)+eps)
		for c, v := range row {
			want[r*ne00+c] = (v - mean) * scale
			if mul {
				want[r*ne00+c] *= wv[c]
			}
		}
	}
	relErrs(t, host, stF32, stF32.decode(out[4]), want, 0.1, 16)
}

// ggmlSoftmax launches kernel_soft_max_<mask>[_4] as ggml_metal_op_soft_max
// does: 4 rows, scale 0.5, a mask of the given type, no ALiBi, no sinks
// (src2 bound to src0's buffer, as ggml does when there are none).
func ggmlSoftmax(t *testing.T, path string, b ggmlBuild, mask storage, ne00 int) {
	ne01 := 4
	host := "kernel_soft_max_" + typeName(mask)
	if ne00%4 == 0 {
		host += "_4"
	}
	x := ggmlValues(ne00*ne01, 17, -8, 8)
	m := ggmlValues(ne00*ne01, 19, -2, 2)
	xb, xv := stF32.encode(x)
	mb, mv := mask.encode(m)
	nb := contiguous(4, ne00, ne01, 1, 1)
	nbm := contiguous(mask.size(), ne00, ne01, 1, 1)
	const scale = 0.5
	args := (&kargs{}).i32(ne00, ne01, 1).u64(nb[1], nb[2], nb[3]).i32(ne01, 1, 1).u64(nbm[1], nbm[2], nbm[3]).
		u64(nb[1], nb[2], nb[3]).f32(scale, 0, 1, 1).i32(1).done()
	nth, smem := 32, uint32(32*4)
	if ne00%4 == 0 {
		for nth < ne00/4 && nth*ne01 < 256 {
			nth *= 2
		}
		smem *= 4
	} else {
		for nth < ne00 && nth*ne01 < 256 {
			nth *= 2
		}
	}
	out := runGGML(t, path, b, ggmlLaunch{host: host, bufs: [][]byte{args, xb, mb, nil, make([]byte, len(xb))},
		groups: [3]uint32{uint32(ne01), 1, 1}, tg: [3]uint32{uint32(nth), 1, 1}, tgmem: smem, aliases: map[int]int{3: 1}})
	want := make([]float64, len(xv))
	for r := 0; r < ne01; r++ {
		mx, sum := math.Inf(-1), 0.0
		for c := 0; c < ne00; c++ {
			mx = math.Max(mx, xv[r*ne00+c]*scale+mv[r*ne00+c])
		}
		for c := 0; c < ne00; c++ {
			want[r*ne00+c] = math.Exp(xv[r*ne00+c]*scale + mv[r*ne00+c] - mx)
			sum += want[r*ne00+c]
		}
		for c := 0; c < ne00; c++ {
			want[r*ne00+c] /= sum
		}
	}
	relErrs(t, host+" ("+strconv.Itoa(ne00)+")", stF32, stF32.decode(out[4]), want, 0, 32)
}

// ggmlMulMV launches kernel_mul_mv_<w>_f32[_4] as ggml_metal_op_mul_mat
// does for one f32 vector (ne11 = 1): 16 rows of 512 weights.
func ggmlMulMV(t *testing.T, path string, b ggmlBuild, w string) {
	ne00, ne01 := 512, 16
	wf := ggmlValues(ne00*ne01, 23, -1, 1)
	y := ggmlValues(ne00, 29, -1, 1)
	var wb []byte
	var wv []float64
	host := "kernel_mul_mv_" + w + "_f32"
	var nr0, nsg, rowBytes, nb00 int
	var smem uint32
	perGroup := 0 // rows per threadgroup
	switch w {
	case "q4_0":
		wb, wv = quantQ4_0(wf)
		nr0, nsg, rowBytes, nb00 = 4, 2, ne00/32*18, 18
		perGroup = nr0 * nsg
	case "q8_0":
		wb, wv = quantQ8_0(wf)
		nr0, nsg, rowBytes, nb00, smem = 2, 4, ne00/32*34, 34, 32*4*2
		perGroup = nr0
	default:
		s := map[string]storage{"f16": stF16, "bf16": stBF16, "f32": stF32}[w]
		wb, wv = s.encode(wf)
		host += "_4"
		nr0, nsg, rowBytes, nb00, smem = 2, min(4, (ne00+127)/128), ne00*s.size(), s.size(), 32*4*2
		perGroup = nr0
	}
	if nsg != b.mulMVNSG {
		t.Fatalf("%s: built with FC_mul_mv_nsg %d, launched with %d", host, b.mulMVNSG, nsg)
	}
	yb, yv := stF32.encode(y)
	args := (&kargs{}).i32(ne00, ne01, 1).u64(nb00, rowBytes, rowBytes*ne01, rowBytes*ne01).
		i32(ne00, 1, 1).u64(4, 4*ne00, 4*ne00, 4*ne00).i32(ne01, 1, nr0).i16(1, 1).done()
	out := runGGML(t, path, b, ggmlLaunch{host: host, bufs: [][]byte{args, wb, yb, make([]byte, 4*ne01)},
		groups: [3]uint32{uint32((ne01 + perGroup - 1) / perGroup), 1, 1}, tg: [3]uint32{32, uint32(nsg), 1}, tgmem: smem})
	want, scale := make([]float64, ne01), make([]float64, ne01)
	for r := range want {
		for c := 0; c < ne00; c++ {
			want[r] += wv[r*ne00+c] * yv[c]
			scale[r] += math.Abs(wv[r*ne00+c] * yv[c])
		}
	}
	// A float sum's error is relative to its terms: compare at Σ|w·y|.
	got := bytesF32(out[3])
	worst := 0.0
	for r := range want {
		e := math.Abs(float64(got[r])-want[r]) / scale[r] / 0x1p-23
		worst = math.Max(worst, e)
	}
	t.Logf("| %s | %d | %.2f eps of Σ|w·y| | |", host, ne01, worst)
	if worst > 16 {
		t.Errorf("%s: %.1f eps of Σ|w·y| off float64 (limit 16)", host, worst)
	}
}
