package cudacpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgenrt"
)

// The dense form's dequantization kernel (ir.QuantDense) on the CPU: every
// value it writes must be bit for bit the format's exact value rounded once
// to the storage type (ties to even) — scale·q + bias for MLX affine (the
// 4-bit reader's one fma in the storage type), d·(q − 8) and d·q for ggml
// (exact in f32, then rounded) — which is what the CUTLASS GEMM then
// multiplies. The scales, biases and ggml d take adversarial values (0,
// ±Inf, NaN, subnormals, the largest finite, values whose sum lands on or
// next to a tie of the storage type).

// dequantKernels are the built-ins whose dense form the test runs: every
// format of the built-ins (qmatmul_mlx4_bias reads the same w as
// qmatmul_mlx4).
var dequantKernels = []string{"qmatmul_mlx4", "qmatmul_q4_0", "qmatmul_q8_0"}

func TestDequantOnCPU(t *testing.T) {
	tc := findToolchain(t)
	ks, files := loadKernels(t)
	for _, name := range dequantKernels {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := buildKernels(t, tc, denseKernel(t, ks, name), files[name], nil)
			for _, v := range b.k.Variants {
				if bad := checkDequant(t, b, v.DType, 7); bad > 0 {
					t.Errorf("%s: %d values differ from the format's, rounded once", v.HostName, bad)
				}
			}
		})
	}
}

// TestDequantCatchesMutations: the same check fails the kernel with the
// nibbles of a Q4_0 byte swapped, the nibbles of an affine word read in
// reverse order, an affine chunk reading the next group's scale, and a
// block's staged run stored one chunk off (but the first block's).
func TestDequantCatchesMutations(t *testing.T) {
	tc := findToolchain(t)
	ks, files := loadKernels(t)
	for _, c := range []struct {
		name, kernel string
		swaps        []string // old, new, … replaced at once (strings.Replacer)
	}{
		{"Q4_0 nibbles swapped", "qmatmul_q4_0", []string{"(kgen_x & 15u)", "((kgen_x >> 4) & 15u)", "((kgen_x >> 4) & 15u)", "(kgen_x & 15u)",
			"((kgen_x >> 16) & 15u)", "((kgen_x >> 20) & 15u)", "((kgen_x >> 20) & 15u)", "((kgen_x >> 16) & 15u)"}},
		{"affine nibble order reversed", "qmatmul_mlx4", []string{"(kgen_w[kgen_p / 4] >> (4 * (kgen_p % 4)))", "(kgen_w[kgen_p / 4] >> (4 * (3 - kgen_p % 4)))"}},
		{"block's run one chunk off", "qmatmul_q8_0", []string{"reinterpret_cast<uint4*>(kgen_wq0) + kgen_c0 * 4u;", "reinterpret_cast<uint4*>(kgen_wq0) + kgen_c0 * 4u + 4u * (kgen_c0 > 0);"}},
		{"next group's scale", "qmatmul_mlx4", []string{"kgen_raw0_s = __ldg(&w_scales[(unsigned long long)kgen_row * (args.k / 64u) + (kgen_kc) / 64u]);",
			"kgen_raw0_s = __ldg(&w_scales[(unsigned long long)kgen_row * (args.k / 64u) + ((kgen_kc) / 64u + 1u) % (args.k / 64u)]);"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			src := string(files[c.kernel])
			for i := 0; i < len(c.swaps); i += 2 {
				if !strings.Contains(src, c.swaps[i]) {
					t.Fatalf("%s: the source has no %q to mutate", c.kernel, c.swaps[i])
				}
			}
			mutate := strings.NewReplacer(c.swaps...).Replace
			b := buildKernels(t, tc, denseKernel(t, ks, c.kernel), files[c.kernel], mutate)
			for _, v := range b.k.Variants {
				if bad := checkDequant(t, b, v.DType, 7); bad == 0 {
					t.Errorf("%s: passes with %s", v.HostName, c.name)
				} else {
					t.Logf("%s fails as it must: %d values", v.HostName, bad)
				}
			}
		})
	}
}

func denseKernel(t *testing.T, ks map[string]*ir.Kernel, name string) *ir.Kernel {
	k := ks[name]
	if k == nil || k.Matmul().QuantCUDA == nil || k.Matmul().QuantCUDA.Dense == nil {
		t.Fatalf("%s has no dense CUDA form", name)
	}
	return k
}

// checkDequant runs b's dequantization kernel for storage dt on random
// packed weights (three groups or blocks a row; 37 rows: part of one
// block of threads, 300: seven blocks and a part) with adversarial tables
// and returns how many values differ from the reference.
func checkDequant(t *testing.T, b *kernelBuild, dt dtype.DType, seed uint64) int {
	t.Helper()
	bad := 0
	for _, n := range []int{37, 300} {
		bad += checkDequantRows(t, b, dt, seed, n)
	}
	return bad
}

func checkDequantRows(t *testing.T, b *kernelBuild, dt dtype.DType, seed uint64, n int) int {
	t.Helper()
	k := b.k
	op := k.Matmul().B[0]
	q := *op.Quant
	rng := rand.New(rand.NewPCG(seed, uint64(dt)))
	kk := 3 * max(q.Group, 32)
	rowBytes := q.Width(kk) * q.Storage().Size()
	packed := make([]byte, n*rowBytes)
	for i := range packed {
		packed[i] = byte(rng.Uint32())
	}
	groups := n * kk / q.Group
	var scales, biases []uint16
	if q.HasTables() {
		scales, biases = make([]uint16, groups), make([]uint16, groups)
		for g := range groups {
			scales[g], biases[g] = oddValue(rng, dt, g), oddValue(rng, dt, g+3)
		}
	} else {
		for r := range n {
			for blk := range kk / 32 {
				binary.LittleEndian.PutUint16(packed[r*rowBytes+blk*q.BlockBytes():], oddValue(rng, dtype.F16, r*7+blk))
			}
		}
	}
	args := make([]byte, 4*len(k.ArgsBinding().Fields))
	for _, f := range k.ArgsBinding().Fields {
		switch f.Name {
		case "m":
			binary.LittleEndian.PutUint32(args[f.Offset:], 1)
		case "n":
			binary.LittleEndian.PutUint32(args[f.Offset:], uint32(n))
		case "k":
			binary.LittleEndian.PutUint32(args[f.Offset:], uint32(kk))
		}
	}
	out := make([]byte, 2*n*kk)
	for i := range out {
		out[i] = 0xA5 // poison: a value the kernel must overwrite
	}
	bufs := [][]byte{packed}
	if q.HasTables() {
		bufs = append(bufs, u16Bytes(scales), u16Bytes(biases))
	}
	bufs = append(bufs, out, args)
	p := k.Matmul().QuantCUDA.Dense.Dequant
	host := ""
	for _, v := range p.Variants {
		if v.DType == dt {
			host = v.HostName
		}
	}
	grid, err := p.LaunchOn(ir.CUDA).GridSize(map[string]int{"m": 1, "n": n, "k": kk})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runEntry(b, host, bufs, grid[0]/ir.DequantThreads+min(1, grid[0]%ir.DequantThreads), ir.DequantThreads)
	if err != nil { // the sanitizers stopped it: every value counts as wrong
		t.Logf("%s: the run stopped: %s", host, firstLine(err.Error()))
		return n * kk
	}
	got := res[len(bufs)-2]
	bad := 0
	for r := range n {
		row := packed[r*rowBytes : (r+1)*rowBytes]
		for j := range kk {
			want := refDequant(q, dt, row, j, r*(kk/q.Group)+j/q.Group, scales, biases)
			g := binary.LittleEndian.Uint16(got[2*(r*kk+j):])
			if g != want && !(isNaN16(dt, g) && isNaN16(dt, want)) {
				if bad < 5 {
					t.Logf("%s: row %d value %d: got %#04x (%g), want %#04x (%g)", host, r, j, g, value16(dt, g), want, value16(dt, want))
				}
				bad++
			}
		}
	}
	return bad
}

// refDequant is value j of a packed row as the format defines it, rounded
// once to dt: affine's scale·q + bias exactly (big.Float) then rounded;
// ggml's d·(q − 8) or d·q (exact in f32) rounded.
func refDequant(q kgenrt.Quant, dt dtype.DType, row []byte, j, g int, scales, biases []uint16) uint16 {
	c := float64(q.Code(row, j))
	switch q.Format {
	case kgenrt.Q4_0, kgenrt.Q8_0:
		d := float64(kgenrt.F16Value(binary.LittleEndian.Uint16(row[j/32*q.BlockBytes():])))
		if q.Format == kgenrt.Q4_0 {
			c -= 8
		}
		return bits16(dt, float32(d*c)) // exact in f32: an 11-bit d times a code of at most 8 bits
	}
	s, bias := value16(dt, scales[g]), value16(dt, biases[g])
	if math.IsInf(s, 0) || math.IsNaN(s) || math.IsInf(bias, 0) || math.IsNaN(bias) {
		return bits16(dt, float32(s*c+bias)) // IEEE's special values: NaN or the infinity
	}
	exact := new(big.Float).SetPrec(2048).SetFloat64(s)
	exact.Mul(exact, big.NewFloat(c))
	exact.Add(exact, new(big.Float).SetFloat64(bias))
	return roundOnce(dt, exact)
}

// roundOnce rounds exact to dt, ties to even: the nearest of the dt values
// next to the correctly rounded f32 (which is within one dt step of the
// answer), compared exactly; the overflow neighbour of the largest finite
// value counts as one step past it, as IEEE rounding does.
func roundOnce(dt dtype.DType, exact *big.Float) uint16 {
	f, _ := exact.Float32()
	if math.IsInf(float64(f), 0) {
		return bits16(dt, f)
	}
	b := bits16(dt, f)
	sign := b & 0x8000
	best, bestDist := b, (*big.Float)(nil)
	for _, c := range []int{int(b&0x7FFF) - 1, int(b & 0x7FFF), int(b&0x7FFF) + 1} {
		if c < 0 || c > int(infBits(dt)) { // below zero, or a NaN past the infinity
			continue
		}
		cb := sign | uint16(c)
		v := stepValue(dt, uint16(c))
		if sign != 0 {
			v = -v
		}
		d := new(big.Float).SetPrec(2048).Sub(exact, new(big.Float).SetFloat64(v))
		d.Abs(d)
		if bestDist == nil || d.Cmp(bestDist) < 0 || (d.Cmp(bestDist) == 0 && cb&1 == 0) {
			best, bestDist = cb, d
		}
	}
	return best
}

// stepValue is the magnitude of dt bits m (sign clear), the infinity's
// taken one step past the largest finite value.
func stepValue(dt dtype.DType, m uint16) float64 {
	if inf := infBits(dt); m >= inf {
		return 2 * value16(dt, inf-1) / (2 - math.Ldexp(1, -mantissaBits(dt)))
	}
	return value16(dt, m)
}

// infBits is dt's +Inf.
func infBits(dt dtype.DType) uint16 {
	if dt == dtype.BF16 {
		return 0x7F80
	}
	return 0x7C00
}

func mantissaBits(dt dtype.DType) int {
	if dt == dtype.BF16 {
		return 7
	}
	return 10
}

// oddValue is a storage value of dt: mostly ordinary, every few an edge
// (0, −0, ±Inf, NaN, the smallest and largest subnormal, the largest
// finite, a value with every mantissa bit set).
func oddValue(rng *rand.Rand, dt dtype.DType, i int) uint16 {
	edges := map[dtype.DType][]uint16{
		dtype.F16:  {0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x0001, 0x03FF, 0x7BFF, 0x3BFF, 0x8401},
		dtype.BF16: {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x0001, 0x007F, 0x7F7F, 0x3F7F, 0x8081},
	}[dt]
	if i%3 == 0 {
		return edges[(i/3)%len(edges)]
	}
	return bits16(dt, float32(rng.NormFloat64()*math.Ldexp(1, rng.IntN(40)-20)))
}

func bits16(dt dtype.DType, f float32) uint16 {
	if dt == dtype.BF16 {
		return kgenrt.BF16Bits(f)
	}
	return kgenrt.F16Bits(f)
}

func value16(dt dtype.DType, b uint16) float64 {
	if dt == dtype.BF16 {
		return float64(kgenrt.BF16Value(b))
	}
	return float64(kgenrt.F16Value(b))
}

func isNaN16(dt dtype.DType, b uint16) bool { return math.IsNaN(value16(dt, b)) }

func u16Bytes(v []uint16) []byte {
	out := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(out[2*i:], x)
	}
	return out
}

// runEntry runs entry host of build b over blocks blocks of threads with
// buffers bufs and returns the buffers afterwards, or why the run failed.
func runEntry(b *kernelBuild, host string, bufs [][]byte, blocks, threads int) ([][]byte, error) {
	dir, err := os.MkdirTemp("", "kgen-dequant-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for i, buf := range bufs {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("b%d", i)), buf, 0o644); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, b.bin, host, fmt.Sprint(blocks), "1", fmt.Sprint(threads), dir).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %s", host, err, out)
	}
	res := make([][]byte, len(bufs))
	for i := range bufs {
		if res[i], err = os.ReadFile(filepath.Join(dir, fmt.Sprintf("o%d", i))); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
