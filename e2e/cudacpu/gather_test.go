package cudacpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// TestGatherCUDAOnCPU runs the CUDA ports of the indexed-read and
// positioned-write built-ins (docs/indexing.md) on the CPU under the
// address sanitizer, with parity's index inputs (in range, negative, at
// and past the end, i32's extremes): widths 1 and 7 (scalar path), 64 and
// 1024 (16-byte vectors), 4099 (scalar, wide; a packed input's widths round
// up to whole groups); then compares every output bit with the MSL
// kernel's on the same inputs, since a gather is a copy.
func TestGatherCUDAOnCPU(t *testing.T) {
	tc := findToolchain(t)
	ks, files := loadKernels(t)
	for _, name := range gatherBuiltins {
		k := ks[name]
		if k == nil || files[name] == nil {
			t.Fatalf("no built-in %s with a CUDA source", name)
		}
		t.Run(name, func(t *testing.T) {
			b := buildRows(t, tc, k, files[name])
			b.rowParity(t, k, parity.Options{Seed: 21, Cols: []int{1, 7, 64, 1024, 4099}, Rows: []int{0, 1, 11}})
			sameBitsEverywhere(t, k, b)
		})
	}
}

// gatherBuiltins are the built-ins TestGatherCUDAOnCPU runs: a packed
// input's read is a gather too (ir/quant_rows.go), and its one f32 fma
// gives the same bits on both backends.
var gatherBuiltins = []string{"embedding", "kv_cache_append", "dequantize_mlx4"}

// sameBitsEverywhere runs k on the MSL harness and through the CUDA build
// on the same inputs and requires every output's bits to agree.
func sameBitsEverywhere(t *testing.T, k *ir.Kernel, b *cpuBuild) {
	t.Helper()
	collect := func(backend ir.Backend, src []byte, run func(context.Context, mslcpu.Launch) ([][]byte, error)) map[string]*parity.Sample {
		got := map[string]*parity.Sample{}
		opts := parity.Options{Seed: 23, Cols: []int{7, 64, 1024}, Rows: []int{11}, Backend: backend, Run: run,
			Sample: func(s *parity.Sample) { got[fmt.Sprintf("%s/%d", s.Variant.HostName, s.Sizes["cols"])] = s }}
		if _, err := parity.Check(context.Background(), k, src, opts); err != nil {
			t.Fatal(err)
		}
		return got
	}
	msl, cuda := collect(ir.Metal, mslSource(t, k), nil), collect(ir.CUDA, nil, b.rowRunner())
	if len(msl) == 0 || len(msl) != len(cuda) {
		t.Fatalf("%d MSL launches sampled, %d CUDA", len(msl), len(cuda))
	}
	for key, m := range msl {
		for _, o := range k.BindingsOf(ir.Output) {
			d := o.DType
			if d == dtype.Invalid {
				d = m.Variant.DType
			}
			if at := firstBitDiff(m.Got[o.Index], cuda[key].Got[o.Index], d); at >= 0 {
				t.Errorf("%s %s: the MSL and the CUDA kernels' bits differ, first at value %d", key, o.Name, at)
			}
		}
	}
	t.Logf("%d launches: the MSL and the CUDA kernels give the same bits", len(msl))
}

// firstBitDiff is the index of the first value of type d whose bits differ
// between x and y, or -1. Two NaNs are the same value: the MSL CPU
// harness's 16-bit types quiet a NaN's payload (0x7e00), where CUDA copies
// the bits; every other value must match bit for bit.
func firstBitDiff(x, y []byte, d dtype.DType) int {
	if len(x) != len(y) {
		return 0
	}
	size := d.Size()
	for i := 0; i+size <= len(x); i += size {
		a, b := x[i:i+size], y[i:i+size]
		if string(a) != string(b) && !(isNaN(a, d) && isNaN(b, d)) {
			return i / size
		}
	}
	return -1
}

// isNaN reports whether the little-endian bits v of type d are a NaN.
func isNaN(v []byte, d dtype.DType) bool {
	switch d {
	case dtype.F16:
		u := binary.LittleEndian.Uint16(v)
		return u&0x7c00 == 0x7c00 && u&0x3ff != 0
	case dtype.BF16:
		u := binary.LittleEndian.Uint16(v)
		return u&0x7f80 == 0x7f80 && u&0x7f != 0
	case dtype.F32:
		u := binary.LittleEndian.Uint32(v)
		return u&0x7f800000 == 0x7f800000 && u&0x7fffff != 0
	}
	return false
}

// TestPackedCUDACatchesMutations: the check TestGatherCUDAOnCPU runs on
// dequantize_mlx4 fails each of these bugs in its CUDA source (the packed
// input's reader, ir/quant_rows.go): codes read in swapped pairs, a group
// boundary off by one, the next group's scale.
func TestPackedCUDACatchesMutations(t *testing.T) {
	tc := findToolchain(t)
	ks, files := loadKernels(t)
	k, src := ks["dequantize_mlx4"], files["dequantize_mlx4"]
	if k == nil || src == nil {
		t.Fatal("no dequantize_mlx4 built-in with a CUDA source")
	}
	for _, m := range []struct{ name, old, new string }{
		{"codes swapped in pairs", "kgen_bit = kgen_j * kgen_bits", "kgen_bit = (kgen_j ^ 1u) * kgen_bits"},
		{"group boundary off by one", "(unsigned int)kgen_take0_1 / 64u])", "((unsigned int)kgen_take0_1 + 1u) / 64u])"},
		{"scale of the next group", "kgen_f(w_scales[(unsigned long long)kgen_take0_0 * (args.cols / 64u) + (unsigned int)kgen_take0_1 / 64u])",
			"kgen_f(w_scales[(unsigned long long)kgen_take0_0 * (args.cols / 64u) + (unsigned int)kgen_take0_1 / 64u + 1u])"},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			if !strings.Contains(string(src), m.old) {
				t.Fatalf("the text to mutate (%q) is not in the generated source", m.old)
			}
			b := buildRows(t, tc, k, []byte(strings.ReplaceAll(string(src), m.old, m.new)))
			results, err := parity.Check(context.Background(), k, nil, parity.Options{Seed: 21, Cols: []int{192}, Rows: []int{11}, Backend: ir.CUDA, Run: b.rowRunner()})
			if err != nil {
				if !strings.Contains(err.Error(), "ERROR: AddressSanitizer") {
					t.Fatal(err)
				}
				t.Logf("fails as it must, in the run (the address sanitizer)")
				return
			}
			for _, r := range parity.Summarize(results) {
				if r.OK() {
					t.Errorf("%s: parity passes a kernel with its %s: %s", r.HostName, m.name, r)
				}
			}
		})
	}
}
