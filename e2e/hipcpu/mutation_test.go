package hipcpu

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/e2e/internal/buildcache"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// waveMutations are bugs only a 64-lane wavefront exposes: each rewrites
// the HIP source as a port written for 32-lane warps would read.
var waveMutations = []struct {
	name, from, to string
}{
	// The butterfly starts at CUDA's 16: a 64-lane team never adds the
	// other half of its wavefront.
	{"butterfly from 16", "o = KGEN_WAVE / 2;", "o = 16;"},
	// The lane index counts only the low 32 bits of the exec mask
	// (mbcnt_lo without mbcnt_hi): lanes 32-63 take the indices of 0-31,
	// and their ds_bpermute reads the lower half's values.
	{"lane index from 32 mask bits", "__builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u))", "__builtin_amdgcn_mbcnt_lo(~0u, 0u)"},
	// The team's partials are counted per 32 lanes: a team of one or more
	// 64-lane wavefronts reads twice as many partials as were written.
	{"partials per 32 lanes", "width / KGEN_WAVE;", "width / 32u;"},
}

// TestWave64CatchesMutations: each wave mutation fails parity (or aborts)
// on the 64-lane run of a sum (rms_norm), a max-and-sum (softmax) and a
// top-k butterfly (topk_logits), while the 32-lane run of the same
// mutated source passes: a CPU or GPU run with 32-lane warps would not
// have seen these bugs.
func TestWave64CatchesMutations(t *testing.T) {
	byName := map[string]*ir.Kernel{}
	for _, k := range builtins(t) {
		byName[k.Name] = k
	}
	for _, name := range []string{"rms_norm", "softmax", "topk_logits"} {
		k := byName[name]
		if k == nil {
			t.Fatalf("no built-in %s", name)
		}
		src := source(t, k)
		for _, m := range waveMutations {
			if !strings.Contains(src, m.from) {
				t.Fatalf("%s: %q is not in the source", name, m.from)
			}
			mutated := strings.ReplaceAll(src, m.from, m.to)
			for _, wave := range []int{64, 32} {
				t.Run(fmt.Sprintf("%s/%s/wave%d", name, m.name, wave), func(t *testing.T) {
					t.Parallel()
					b := build(t, k, mutated, wave, "")
					failed, why := fails(k, b)
					switch {
					case wave == 64 && !failed:
						t.Errorf("the mutation %q passed the 64-lane run", m.name)
					case wave == 32 && failed:
						t.Errorf("the mutation %q failed the 32-lane run, where it should be harmless: %s", m.name, why)
					default:
						t.Logf("wave %d: caught %v (%s)", wave, failed, why)
					}
				})
			}
		}
	}
}

// fails runs parity on k through b at rows that take teams of 64, 128 and
// 256 lanes, and reports whether any variant fails (or the run aborts).
func fails(k *ir.Kernel, b *cpuBuild) (bool, string) {
	results, err := parity.Check(context.Background(), k, nil, parity.Options{Seed: 29, Backend: ir.ROCm, Run: b.runner(),
		Cols: []int{1000, 2048, 4099}, Rows: []int{11}})
	if err != nil {
		return true, buildcache.FirstLines(err.Error(), 3)
	}
	for _, r := range parity.Summarize(results) {
		if !r.OK() {
			return true, r.String()
		}
	}
	return false, "every variant within bounds"
}

// TestMissingBarrierIsCaught: without the team reduction's barrier between
// the wavefronts' partials and their reading, rms_norm at 4099 columns
// (teams of four 64-lane wavefronts) reads partials not yet written: the
// fibers really do stop at barriers and interleave there. (Each of the
// three schedules TestHIPOnCPUOrders uses catches this one on its own.)
func TestMissingBarrierIsCaught(t *testing.T) {
	var k *ir.Kernel
	for _, c := range builtins(t) {
		if c.Name == "rms_norm" {
			k = c
		}
	}
	const from = "        part[2 * simd + slot] = v;\n    }\n    kgen_barrier();\n"
	src := source(t, k)
	if !strings.Contains(src, from) {
		t.Fatalf("rms_norm: no barrier after the partials' stores in the source")
	}
	b := build(t, k, strings.Replace(src, from, "        part[2 * simd + slot] = v;\n    }\n", 1), 64, "")
	for _, order := range []mslcpu.LaneOrder{mslcpu.Forward, mslcpu.Reverse, mslcpu.Shuffled} {
		results, err := parity.Check(context.Background(), k, nil, parity.Options{Seed: 29, Backend: ir.ROCm, Run: b.runner(),
			Cols: []int{4099}, Rows: []int{11}, Orders: []mslcpu.LaneOrder{order}})
		caught := err != nil
		for _, r := range parity.Summarize(results) {
			caught = caught || !r.OK()
		}
		if !caught {
			t.Errorf("rms_norm without its barrier passed the schedule %v", order)
		}
	}
}

// TestPackedHIPCatchesMutations: parity on the 64-lane run fails
// dequantize_mlx4's HIP source with its packed input read wrong
// (ir/quant_rows.go): codes in swapped pairs, the bias alone (scale·q
// dropped).
func TestPackedHIPCatchesMutations(t *testing.T) {
	var k *ir.Kernel
	for _, b := range builtins(t) {
		if b.Name == "dequantize_mlx4" {
			k = b
		}
	}
	if k == nil {
		t.Fatal("no built-in dequantize_mlx4")
	}
	src := source(t, k)
	for _, m := range []struct{ name, from, to string }{
		{"codes swapped in pairs", "const unsigned int bit = j * bits", "const unsigned int bit = (j ^ 1u) * bits"},
		{"scale·q dropped", "__builtin_fmaf(kgen_f(w_scales", "(kgen_f(w_scales"}, // a comma expression: the bias alone
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			if !strings.Contains(src, m.from) {
				t.Fatalf("%q is not in the source", m.from)
			}
			b := build(t, k, strings.ReplaceAll(src, m.from, m.to), 64, "address,undefined")
			if failed, why := fails(k, b); !failed {
				t.Errorf("the mutation %q passed: %s", m.name, why)
			}
		})
	}
}
