package e2e

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/gen/kernels"
	"github.com/kgen-dev/kgen/kgenrt"
	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// An outside referee for ggml's block formats: gguf-py (pip install gguf,
// llama.cpp's own Python package) quantizes weights to Q4_0 and Q8_0 with
// quants.quantize (bit-exact with ggml-quants.c's reference quantizers),
// dequantizes them with quants.dequantize, and writes GGUF files with
// GGUFWriter. kgen must read those bytes as they are: kgenrt's
// dequantization exactly, the qmatmul_q4_0 and qmatmul_q8_0 kernels (the Go
// reference and the Metal port on the MSL-on-CPU harness, at m = 1, the
// matrix-vector phase, and m = 33, the tiled kernel) within the f32
// accumulation bound, and kgenrt's GGUF reader the file's tensors.

// needGGUF skips, saying why, where python3 cannot import gguf-py.
func needGGUF(t *testing.T) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3: the GGUF referee (gguf-py) cannot run")
	}
	if out, err := exec.Command(py, "-c", "import gguf, numpy").CombinedOutput(); err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		t.Skipf("gguf-py is not importable (%s); pip could not install it here (scripts/test-deps tries: pip install --user gguf)", lines[len(lines)-1])
	}
}

// runPy runs script with python3 (arguments args) in a fresh folder holding
// the files in, and returns the folder, where the script leaves its output.
func runPy(t *testing.T, script string, in map[string][]byte, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range in {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("python3", append([]string{"-c", script}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	return dir
}

func readOut(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// f32Bytes and f32Values are float32 values as little-endian bytes and back
// (as float64s).
func f32Bytes(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, f := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

func f32Values(b []byte) []float64 {
	out := make([]float64, len(b)/4)
	for i := range out {
		out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return out
}

// randomTensor is a tensor of dt whose values are uniform in [-scale,
// scale), rounded to dt.
func randomTensor(t *testing.T, r *rand.Rand, dt kgenrt.DType, scale float64, shape ...int) *kgenrt.Tensor {
	t.Helper()
	count := 1
	for _, d := range shape {
		count *= d
	}
	v := make([]float32, count)
	for i := range v {
		v[i] = float32((r.Float64()*2 - 1) * scale)
	}
	x, err := kgenrt.FromFloat32(dt, v, shape...)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// ggufQuantScript quantizes w.f32 ([n, k], argv) to Q4_0 and Q8_0
// (q4_0.bin, q8_0.bin) and dequantizes those bytes (q4_0.deq, q8_0.deq).
const ggufQuantScript = `
import sys, numpy as np
from gguf import quants, GGMLQuantizationType as Q
n, k = int(sys.argv[1]), int(sys.argv[2])
w = np.fromfile("w.f32", dtype="<f4").reshape(n, k)
for name, qt in (("q4_0", Q.Q4_0), ("q8_0", Q.Q8_0)):
    q = quants.quantize(w, qt)
    assert q.dtype == np.uint8 and q.shape == (n, k // 32 * (18 if qt == Q.Q4_0 else 34)), q.shape
    q.tofile(name + ".bin")
    quants.dequantize(q, qt).astype("<f4").tofile(name + ".deq")
`

// ggufWeights are n·k normal weights; row 0's first block is 127 then
// halves (−14.5 … 15.5): Q8_0's d is 1 there, so every code is a tie that
// ggml rounds away from zero (roundf), not to even.
func ggufWeights(n, k int) []float32 {
	r := rand.New(rand.NewPCG(24, 6))
	w := make([]float32, n*k)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	w[0] = 127
	for j := 1; j < 32; j++ {
		w[j] = float32(j-16) + 0.5
	}
	return w
}

// ggufQuants runs ggufQuantScript on w: each format's blocks and their
// dequantization by gguf-py.
func ggufQuants(t *testing.T, w []float32, n, k int) (blocks map[kgenrt.QuantFormat][]byte, deq map[kgenrt.QuantFormat][]float64) {
	dir := runPy(t, ggufQuantScript, map[string][]byte{"w.f32": f32Bytes(w)}, fmt.Sprint(n), fmt.Sprint(k))
	blocks, deq = map[kgenrt.QuantFormat][]byte{}, map[kgenrt.QuantFormat][]float64{}
	for _, f := range []kgenrt.QuantFormat{kgenrt.Q4_0, kgenrt.Q8_0} {
		blocks[f] = readOut(t, dir, f.String()+".bin")
		deq[f] = f32Values(readOut(t, dir, f.String()+".deq"))
	}
	return blocks, deq
}

// swapNibbles is a Q4_0 tensor with each byte's nibbles swapped (values j
// and j + 16 of every block traded): the reader that gets the order wrong.
func swapNibbles(blocks []byte) []byte {
	out := bytes.Clone(blocks)
	for i := range out {
		if i%18 >= 2 {
			out[i] = out[i]<<4 | out[i]>>4
		}
	}
	return out
}

// shiftD gives every block the next block's d (the last keeps its own): a
// reader that strides the blocks wrong.
func shiftD(blocks []byte, blockBytes int) []byte {
	out := bytes.Clone(blocks)
	for at := 0; at+2*blockBytes <= len(out); at += blockBytes {
		copy(out[at:at+2], blocks[at+blockBytes:at+blockBytes+2])
	}
	return out
}

// exactMismatches counts the values of kgenrt's Dequantize64 of blocks
// that differ from gguf-py's dequantization, and logs the first.
func exactMismatches(t *testing.T, q kgenrt.Quant, blocks []byte, want []float64, n, k int) int {
	got := q.Dequantize64(blocks, nil, nil, n, k)
	bad := 0
	for i, w := range want {
		if got[i] != w && !(math.IsNaN(got[i]) && math.IsNaN(w)) {
			if bad++; bad == 1 {
				t.Logf("%s: weight [%d, %d] = %g, gguf-py %g", q, i/k, i%k, got[i], w)
			}
		}
	}
	return bad
}

// TestGGUFQuantsDequantizeExactly: kgenrt reads gguf-py's Q4_0 and Q8_0
// blocks as gguf-py dequantizes them, exactly (ggml's d·q is exact in f32:
// an 11-bit d times a code of at most 8 bits), through Dequantize64 and the
// kernels' f32 Dequantize; kgenrt's quantizer writes the same bytes as
// gguf-py's (ties away from zero, as ggml's roundf). A reader with swapped
// nibbles or misplaced block scales must fail the comparison.
func TestGGUFQuantsDequantizeExactly(t *testing.T) {
	needGGUF(t)
	const n, k = 40, 2112
	w := ggufWeights(n, k)
	blocks, deq := ggufQuants(t, w, n, k)
	for _, f := range []kgenrt.QuantFormat{kgenrt.Q4_0, kgenrt.Q8_0} {
		q := kgenrt.GGMLQuant(f)
		t.Run(f.String(), func(t *testing.T) {
			if bad := exactMismatches(t, q, blocks[f], deq[f], n, k); bad != 0 {
				t.Errorf("%s: %d of %d weights differ from gguf-py's dequantization", f, bad, n*k)
			}
			packed, err := kgenrt.FromBytes(kgenrt.U8, blocks[f], n, q.Width(k))
			if err != nil {
				t.Fatal(err)
			}
			f32, _, _, err := kgenrt.Dequantize(q, packed, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range f32 {
				if float64(v) != deq[f][i] {
					t.Fatalf("%s: Dequantize [%d, %d] = %g, gguf-py %g", f, i/k, i%k, v, deq[f][i])
				}
			}
			mine, _, _, err := kgenrt.Quantize(q, w, n, k, kgenrt.F32)
			if err != nil {
				t.Fatal(err)
			}
			differ := 0
			for b := 0; b < len(blocks[f]); b += q.BlockBytes() {
				if !bytes.Equal(mine.Bytes()[b:b+q.BlockBytes()], blocks[f][b:b+q.BlockBytes()]) {
					if differ++; differ == 1 {
						t.Errorf("%s: kgenrt.Quantize's block %d (row %d) is % x, gguf-py's % x", f, b/q.BlockBytes(), b/(q.Width(k)), mine.Bytes()[b:b+q.BlockBytes()], blocks[f][b:b+q.BlockBytes()])
					}
				}
			}
			if differ > 0 {
				t.Errorf("%s: %d of %d blocks of kgenrt.Quantize differ from gguf-py's", f, differ, len(blocks[f])/q.BlockBytes())
			}
			t.Run("corrupted copies fail", func(t *testing.T) {
				if f == kgenrt.Q4_0 {
					if exactMismatches(t, q, swapNibbles(blocks[f]), deq[f], n, k) == 0 {
						t.Error("swapped nibbles passed the comparison")
					}
				}
				if exactMismatches(t, q, shiftD(blocks[f], q.BlockBytes()), deq[f], n, k) == 0 {
					t.Error("misplaced block scales passed the comparison")
				}
			})
		})
	}
}

// ggmlKernel runs qmatmul_q4_0 or qmatmul_q8_0 through the Go reference or
// the Metal port (emulated).
func ggmlKernel(f kgenrt.QuantFormat, metal bool, x, w, y *kgenrt.Tensor) error {
	switch {
	case f == kgenrt.Q4_0 && metal:
		return kernels.QmatmulQ40.Run(kgenrt.Metal, x, w, y)
	case f == kgenrt.Q4_0:
		return kernels.QmatmulQ40.Reference(x, w, y)
	case metal:
		return kernels.QmatmulQ80.Run(kgenrt.Metal, x, w, y)
	}
	return kernels.QmatmulQ80.Reference(x, w, y)
}

// unitOf is the unit roundoff of storage dtype dt.
func unitOf(dt kgenrt.DType) float64 {
	return map[kgenrt.DType]float64{kgenrt.F32: 0x1p-24, kgenrt.F16: 0x1p-11, kgenrt.BF16: 0x1p-8}[dt]
}

// gamma is γ_n = n·u / (1 − n·u) for f32's u: the bound on the relative
// error of n rounded operations in a row (Higham, §3.1).
func gamma(n int) float64 {
	nu := float64(n) * 0x1p-24
	return nu / (1 - nu)
}

// boundCheck compares got with want element by element within bound and
// returns how many are outside, the largest |got − want| and the largest
// |got − want| / bound.
func boundCheck(got, want, bound []float64) (bad int, worst, ratio float64) {
	for i := range want {
		d := math.Abs(got[i] - want[i])
		if !(d <= bound[i]) {
			bad++
		}
		worst, ratio = max(worst, d), max(ratio, d/bound[i])
	}
	return bad, worst, ratio
}

// ulpsFromRounded says how close got is to want rounded to dt: how many
// outputs are exactly fl_dt(want), and the largest distance of the others
// in units in the last place of dt there. (The bounds are worst cases over
// k; this is what the results show.)
func ulpsFromRounded(got, want []float64, dt kgenrt.DType) (same int, ulps float64) {
	bits := map[kgenrt.DType]int{kgenrt.F16: 11, kgenrt.BF16: 8, kgenrt.F32: 24}[dt]
	for i := range want {
		r := roundDT(dt, want[i])
		if got[i] == r {
			same++
			continue
		}
		_, e := math.Frexp(r)
		ulps = max(ulps, math.Abs(got[i]-r)/math.Ldexp(1, e-bits))
	}
	return same, ulps
}

// ggmlWant is y = x·wᵀ in float64 with w gguf-py's dequantized weights, and
// the bound kgen's f32 result rounded to dt must keep to: each product x·w
// is rounded once in f32 (or fused) and k − 1 additions follow, so |acc −
// y| ≤ γ_k·Σ|x||w| in any order; storing acc in dt adds u_dt·|acc| ≤
// u_dt·(|y| + γ_k·Σ|x||w|); float64's own sum is within another γ_k of
// float64's unit (2^−53).
func ggmlWant(x, deq []float64, m, n, k int, dt kgenrt.DType) (want, bound []float64) {
	want, bound = make([]float64, m*n), make([]float64, m*n)
	g := gamma(k)
	g64 := float64(k) * 0x1p-53 * 1.01
	for i := range m {
		for j := range n {
			s, a := 0.0, 0.0
			for c := range k {
				s += x[i*k+c] * deq[j*k+c]
				a += math.Abs(x[i*k+c] * deq[j*k+c])
			}
			want[i*n+j] = s
			bound[i*n+j] = g*a + unitOf(dt)*(math.Abs(s)+g*a) + g64*a
		}
	}
	return want, bound
}

// TestGGUFQmatmulMatchesQuants: gguf-py's Q4_0 and Q8_0 blocks, bound as
// they are to qmatmul_q4_0 and qmatmul_q8_0 (the Go reference, and the
// Metal port on the CPU harness where clang++ exists), give x·wᵀ with w
// gguf-py's dequantization, within ggmlWant's bound, at m = 1 (the
// matrix-vector phase on Metal) and m = 33 (the tiled kernel), f16 and bf16
// activations. The same run on swapped nibbles or misplaced scales must
// fall outside the bound.
func TestGGUFQmatmulMatchesQuants(t *testing.T) {
	needGGUF(t)
	const n, k = 40, 2112
	blocks, deq := ggufQuants(t, ggufWeights(n, k), n, k)
	_, noMSL := mslcpu.Compiler()
	if noMSL != nil {
		t.Logf("no C++ compiler for the MSL harness (%v): the Go reference alone is compared", noMSL)
	}
	r := rand.New(rand.NewPCG(9, 9))
	for _, f := range []kgenrt.QuantFormat{kgenrt.Q4_0, kgenrt.Q8_0} {
		q := kgenrt.GGMLQuant(f)
		w, err := kgenrt.FromBytes(kgenrt.U8, blocks[f], n, q.Width(k))
		if err != nil {
			t.Fatal(err)
		}
		for _, dt := range []kgenrt.DType{kgenrt.F16, kgenrt.BF16} {
			for _, m := range []int{1, 33} {
				x := randomTensor(t, r, dt, 2, m, k)
				want, bound := ggmlWant(x.Float64s(), deq[f], m, n, k, dt)
				run := func(t *testing.T, metal bool, w *kgenrt.Tensor) []float64 {
					y, _ := kgenrt.New(dt, m, n)
					if err := ggmlKernel(f, metal, x, w, y); err != nil {
						t.Fatal(err)
					}
					return y.Float64s()
				}
				name := fmt.Sprintf("%s_%s_m%d", f, dt, m)
				t.Run(name+"/reference", func(t *testing.T) {
					got := run(t, false, w)
					bad, worst, ratio := boundCheck(got, want, bound)
					if bad > 0 {
						t.Errorf("%d of %d outputs outside the bound", bad, m*n)
					}
					same, ulps := ulpsFromRounded(got, want, dt)
					t.Logf("max |kgen − gguf-py float64| %.3g (%.2f of the bound); %d of %d outputs are the float64 result rounded to %s (the others within %.2g ulp)", worst, ratio, same, m*n, dt, ulps)
					for what, c := range map[string][]byte{"swapped nibbles": swapNibbles(blocks[f]), "misplaced scales": shiftD(blocks[f], q.BlockBytes())} {
						if f == kgenrt.Q8_0 && what == "swapped nibbles" {
							continue
						}
						cw, _ := kgenrt.FromBytes(kgenrt.U8, c, n, q.Width(k))
						if bad, _, _ := boundCheck(run(t, false, cw), want, bound); bad == 0 {
							t.Errorf("%s passed the comparison", what)
						}
					}
				})
				t.Run(name+"/metal", func(t *testing.T) {
					if noMSL != nil {
						t.Skip(noMSL)
					}
					emulateMetal(t)
					got := run(t, true, w)
					bad, worst, ratio := boundCheck(got, want, bound)
					if bad > 0 {
						t.Errorf("%d of %d outputs outside the bound", bad, m*n)
					}
					same, ulps := ulpsFromRounded(got, want, dt)
					t.Logf("max |kgen − gguf-py float64| %.3g (%.2f of the bound); %d of %d outputs are the float64 result rounded to %s (the others within %.2g ulp)", worst, ratio, same, m*n, dt, ulps)
				})
			}
		}
	}
}

// ggufWriteScript writes model.gguf with GGUFWriter: q4_0.bin and q8_0.bin
// (gguf-py's blocks of [n, k] weights) as a Q4_0 and a Q8_0 tensor, an F32
// norm and a string array.
const ggufWriteScript = `
import sys, numpy as np, gguf
from gguf import GGMLQuantizationType as Q
n, k = int(sys.argv[1]), int(sys.argv[2])
w = gguf.GGUFWriter("model.gguf", "llama")
w.add_uint32("llama.embedding_length", k)
w.add_array("tokenizer.ggml.tokens", ["<s>", "</s>", "hello"])
w.add_tensor("blk.0.attn_q.weight", np.fromfile("q4_0.bin", dtype=np.uint8).reshape(n, -1), raw_dtype=Q.Q4_0)
w.add_tensor("output_norm.weight", np.arange(k, dtype=np.float32))
w.add_tensor("blk.0.ffn_down.weight", np.fromfile("q8_0.bin", dtype=np.uint8).reshape(n, -1), raw_dtype=Q.Q8_0)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
`

// TestGGUFFileThroughQmatmul: a real .gguf written by gguf-py's GGUFWriter
// reads back through kgenrt.OpenGGUF with its names, ggml types and kgen
// shapes ([n, k/32·18] and [n, k/32·34] for ggml dims [k, n]), the blocks
// byte for byte, and qmatmul_q4_0 and qmatmul_q8_0 on the file's tensors
// give exactly what they give on the in-memory blocks.
func TestGGUFFileThroughQmatmul(t *testing.T) {
	needGGUF(t)
	const n, k, m = 40, 2112, 3
	blocks, _ := ggufQuants(t, ggufWeights(n, k), n, k)
	dir := runPy(t, ggufWriteScript, map[string][]byte{"q4_0.bin": blocks[kgenrt.Q4_0], "q8_0.bin": blocks[kgenrt.Q8_0]}, fmt.Sprint(n), fmt.Sprint(k))
	g, err := kgenrt.OpenGGUF(filepath.Join(dir, "model.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if v := g.Metadata["llama.embedding_length"].Value; v != uint32(k) {
		t.Errorf("llama.embedding_length = %v", v)
	}
	if a, ok := g.Metadata["tokenizer.ggml.tokens"].Value.(kgenrt.GGUFArray); !ok || a.Len != 3 || a.Elem != kgenrt.GGUFString {
		t.Errorf("tokenizer.ggml.tokens = %#v", g.Metadata["tokenizer.ggml.tokens"].Value)
	}
	var names []string
	for _, ti := range g.Tensors() {
		names = append(names, ti.Name)
	}
	if !slices.Equal(names, []string{"blk.0.attn_q.weight", "output_norm.weight", "blk.0.ffn_down.weight"}) {
		t.Errorf("tensors %v", names)
	}
	x := randomTensor(t, rand.New(rand.NewPCG(1, 1)), kgenrt.F16, 2, m, k)
	for name, f := range map[string]kgenrt.QuantFormat{"blk.0.attn_q.weight": kgenrt.Q4_0, "blk.0.ffn_down.weight": kgenrt.Q8_0} {
		q := kgenrt.GGMLQuant(f)
		info, _ := g.Lookup(name)
		if got, ok := info.Type.Quant(); !ok || got != q || !slices.Equal(info.Dims, []int{k, n}) {
			t.Errorf("%s: %s dims %v, want %s [%d %d]", name, info.Type, info.Dims, f, k, n)
		}
		w, err := g.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		if w.DType() != kgenrt.U8 || !slices.Equal(w.Shape(), []int{n, q.Width(k)}) || !bytes.Equal(w.Bytes(), blocks[f]) {
			t.Fatalf("%s: %s %v (bytes equal: %v), want u8 [%d %d] and gguf-py's blocks", name, w.DType(), w.Shape(), bytes.Equal(w.Bytes(), blocks[f]), n, q.Width(k))
		}
		mem, _ := kgenrt.FromBytes(kgenrt.U8, blocks[f], n, q.Width(k))
		yFile, _ := kgenrt.New(kgenrt.F16, m, n)
		yMem, _ := kgenrt.New(kgenrt.F16, m, n)
		if err := ggmlKernel(f, false, x, w, yFile); err != nil {
			t.Fatal(err)
		}
		if err := ggmlKernel(f, false, x, mem, yMem); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(yFile.Bytes(), yMem.Bytes()) {
			t.Errorf("%s: qmatmul on the file's tensor differs from the in-memory blocks", name)
		}
	}
	if _, err := g.Tensor("output_norm.weight"); err != nil {
		t.Errorf("the F32 tensor: %v", err)
	}
}
