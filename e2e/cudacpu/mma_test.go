package cudacpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/e2e/internal/buildcache"
	"github.com/kgen-dev/kgen/emit/cfam"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
	"github.com/kgen-dev/kgen/verify/parity"
)

// The generated tensor-core kernels (fatbins: the quantized matmul's tiled
// and skinny kernels, the attention chain) on the CPU: their mma.sync,
// ldmatrix and cp.async through testdata/shim_mma.h, which computes every
// lane's result from the PTX ISA's fragment layouts. The chain, which
// passes on the H200 (docs/cuda.md), checks the emulation itself.

// quantShapes cross the CUDA kernels of a quantized matmul at their edges:
// the skinny kernel's m ≤ 16 (one token, one tile of 8 and its edge 9,
// two tiles at 16), the mid tile's 17 … 64 (ir.DenseAbove; 17 … 256 for
// the gated form, which has no dense form: partial, whole and several
// 64-row tiles), the large tile's above (the kernel's own entry point here:
// the dense form's CUTLASS GEMM does not run on the CPU, its
// dequantization does in dequant_test.go, and the tiled kernel is its
// fallback), n off the 16 columns and the tiles'
// 64 and 128 (7, 17, 130), k of one group, a partial 128-value step and the tiled
// kernel's 64-deep steps with a tail (g, 3g, 5g at g = 32 or 64), and
// empty outputs. g is the kernel's group.
func quantShapes(g int) []parity.MatmulShape {
	return []parity.MatmulShape{
		{M: 1, N: 7, K: g}, {M: 1, N: 40, K: 5 * g}, {M: 8, N: 17, K: 3 * g}, {M: 9, N: 33, K: 2 * g}, {M: 16, N: 130, K: 3 * g},
		{M: 17, N: 40, K: 3 * g}, {M: 33, N: 130, K: 5 * g}, {M: 64, N: 130, K: 3 * g}, {M: 129, N: 17, K: g}, {M: 257, N: 130, K: 3 * g},
		{M: 0, N: 7, K: g}, {M: 7, N: 0, K: g},
	}
}

// kernelBuild is a fatbin source compiled for the CPU: its binary and the
// kernel it runs.
type kernelBuild struct {
	bin string
	k   *ir.Kernel
}

// buildKernels compiles the generated .cu of kernel k (mutate, when
// non-nil, rewrites it first) for the CPU with every __global__ entry
// point — the kernel's own and its phases' — callable by host name.
func buildKernels(t *testing.T, tc toolchain, k *ir.Kernel, src []byte, mutate func(string) string) *kernelBuild {
	t.Helper()
	text := string(src)
	if mutate != nil {
		text = mutate(text)
	}
	var table strings.Builder
	entry := func(host string, bs []ir.Binding, dt dtype.DType) {
		if !strings.Contains(text, `extern "C" __global__ void __launch_bounds__`) || !strings.Contains(text, " "+host+"(") {
			t.Fatalf("%s: no entry point %s in the generated source", k.Name, host)
		}
		var args []string
		for i, b := range bs {
			ty := cfam.CUDA.TypeName(b.DType)
			if b.DType == dtype.Invalid {
				ty = cfam.CUDA.Types[dt]
			}
			switch b.Role {
			case ir.Input:
				args = append(args, fmt.Sprintf("static_cast<const %s*>(p[%d])", ty, i))
			case ir.Output:
				args = append(args, fmt.Sprintf("static_cast<%s*>(p[%d])", ty, i))
			case ir.Args:
				args = append(args, fmt.Sprintf("*static_cast<const %s_args*>(a)", k.Name))
			}
		}
		fmt.Fprintf(&table, "    if (n == %q) return [](dim3 g, dim3 b, void* const* p, const void* a) { kgen_cpu_launch(g, b)(%s, %s); };\n", host, host, strings.Join(args, ", "))
	}
	for _, v := range k.Variants {
		entry(v.HostName, k.Bindings, v.DType)
	}
	for _, f := range k.CUDAForms() {
		p := k.DescriptorPhases()[f.Phase]
		for _, v := range p.Variants {
			entry(v.HostName, p.Bindings, v.DType)
		}
	}
	for _, p := range cudaSplitPhases(k) {
		for _, v := range p.Variants {
			entry(v.HostName, p.Bindings, v.DType)
		}
	}
	if q := k.Matmul().QuantCUDA; q != nil && q.Dense != nil { // the dense form's dequantization (dequant_test.go)
		for _, v := range q.Dense.Dequant.Variants {
			entry(v.HostName, q.Dense.Dequant.Bindings, v.DType)
		}
	}
	dir := t.TempDir()
	main := "#include \"shim.h\"\n#include \"shim_mma.h\"\n#include \"kernel.cu\"\n#include \"kernel_harness.h\"\n\n" +
		"kgen_cpu_kernel kgen_cpu_find_kernel(const std::string& n) {\n" + table.String() + "    return nullptr;\n}\n"
	for name, data := range map[string]string{"kernel.cu": text, "main.cpp": main} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	flags := []string{"-std=c++20", "-O2", "-pthread", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-DKGEN_HOST_MMA"}
	bin := compileCached(t, tc, k.Name, dir, flags, text, main)
	return &kernelBuild{bin: bin, k: k}
}

// launchOf is the entry point and the grid the CUDA port launches for l:
// the first of the kernel's CUDA forms whose size field is at most its
// bound (kgenrt's cudaPort.form), else the kernel's own entry point.
func (b *kernelBuild) launchOf(l mslcpu.Launch) (host string, grid [3]int, threads int, err error) {
	k := b.k
	sizes := map[string]int{}
	args := l.Buffers[len(l.Buffers)-1]
	for _, f := range k.ArgsBinding().Fields {
		if f.Size {
			sizes[f.Name] = int(binary.LittleEndian.Uint32(args[f.Offset:]))
		}
	}
	host, lc := l.HostName, k.Launch(ir.CUDA)
	for _, p := range cudaSplitPhases(k) {
		if phaseHost(p, host) {
			lc = p.LaunchOn(ir.CUDA) // parity launches the flash-decoding phases one by one
		}
	}
	for _, f := range k.CUDAForms() {
		if sizes[f.Field] <= f.AtMost {
			p := k.DescriptorPhases()[f.Phase]
			lc = p.LaunchOn(ir.CUDA)
			for _, v := range p.Variants {
				if strings.HasSuffix(l.HostName, "_"+v.DType.String()) {
					host = v.HostName
				}
			}
			break
		}
	}
	if len(lc.Derived) > 0 { // the chain's derived fields: parity filled them into args
		for _, d := range lc.Derived {
			for _, f := range k.ArgsBinding().Fields {
				if f.Name == d.Field {
					sizes[f.Name] = int(binary.LittleEndian.Uint32(args[f.Offset:]))
				}
			}
		}
	}
	g, err := lc.GridSize(sizes)
	return host, g, lc.Threadgroup[0], err
}

// cudaSplitPhases are the phases the CUDA port launches for a split call
// (a batched chain's flash decoding, ir.Kernel.CUDASplit), or nil.
func cudaSplitPhases(k *ir.Kernel) []*ir.Phase {
	if !k.CUDASplit() {
		return nil
	}
	return k.Phases()
}

// phaseHost reports whether host is one of phase p's host names.
func phaseHost(p *ir.Phase, host string) bool {
	for _, v := range p.Variants {
		if v.HostName == host {
			return true
		}
	}
	return false
}

// runner runs one parity launch through the build.
func (b *kernelBuild) runner() func(context.Context, mslcpu.Launch) ([][]byte, error) {
	return func(ctx context.Context, l mslcpu.Launch) ([][]byte, error) {
		host, grid, threads, err := b.launchOf(l)
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", "kgen-cudacpu-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		for i, buf := range l.Buffers {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("b%d", i)), buf, 0o644); err != nil {
				return nil, err
			}
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		blocks := fmt.Sprint(grid[0] / threads)
		out, err := exec.CommandContext(ctx, b.bin, host, blocks, fmt.Sprint(grid[2]), fmt.Sprint(threads), dir).CombinedOutput()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: no end in 5 minutes (a thread stuck at a barrier?): %s", host, buildcache.FirstLines(string(out), 20))
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v: %s", host, err, buildcache.FirstLines(string(out), 30))
		}
		res := make([][]byte, len(l.Buffers))
		for i := range l.Buffers {
			if res[i], err = os.ReadFile(filepath.Join(dir, fmt.Sprintf("o%d", i))); err != nil {
				return nil, err
			}
		}
		return res, nil
	}
}

// checkKernels runs every variant of k at shapes (matmul) or chain shapes
// through build b, judged by parity as the GPU test judges the port.
func checkKernels(t *testing.T, b *kernelBuild, opts parity.Options) []parity.Result {
	t.Helper()
	opts.Backend, opts.Run = ir.CUDA, b.runner()
	results, err := parity.Check(context.Background(), b.k, nil, opts)
	if err != nil {
		t.Fatalf("%s: %v", b.k.Name, err)
	}
	return results
}

// TestMMAOnCPU: the five quantized built-ins' CUDA kernels, both forms,
// every storage type, at quantShapes, parity's adversarial groups and rows
// included; and the chain's kernel (the golden cuda_attention project's
// attention) at a few shapes, which checks the emulation against code the
// GPU passed.
func TestMMAOnCPU(t *testing.T) {
	tc := findToolchain(t)
	ks, files := loadKernels(t)
	for _, name := range []string{"qmatmul_mlx4", "qmatmul_mlx4_bias", "qmatmul_mlx4_silu_mul", "qmatmul_q4_0", "qmatmul_q8_0"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			k := ks[name]
			if k == nil || k.Matmul().QuantCUDA == nil {
				t.Fatalf("%s has no CUDA plan", name)
			}
			b := buildKernels(t, tc, k, files[name], nil)
			g := 0
			for _, op := range k.Matmul().B {
				g = max(g, op.Quant.Group)
			}
			judge(t, checkKernels(t, b, parity.Options{Seed: 7, Matmul: quantShapes(g)}))
		})
	}
	t.Run("attention", func(t *testing.T) {
		t.Parallel()
		k, src := goldenKernel(t, "cuda_attention", "attention")
		b := buildKernels(t, tc, k, src, nil)
		judge(t, checkKernels(t, b, parity.Options{Seed: 7, Chain: []parity.ChainShape{{M: 7, N: 8, K: 33, P: 7}, {M: 65, N: 70, K: 24, P: 16}, {M: 5, N: 40, K: 0, P: 9}}}))
	})
}

// judge fails every result with elements outside the bound.
func judge(t *testing.T, results []parity.Result) {
	t.Helper()
	for _, r := range results {
		if r.Failed > 0 {
			t.Errorf("%s %dx%d: %d of %d elements outside tolerance; first: %s", r.HostName, r.Rows, r.Cols, r.Failed, r.Checked, r.First)
		}
	}
	for _, r := range parity.Summarize(results) {
		if !r.OK() {
			t.Errorf("%s", r)
		}
		t.Logf("%s: %d elements, %d failed, max |got-ref| %.3g", r.HostName, r.Lanes, r.Differ, r.MaxAbs)
	}
}

// goldenKernel is kernel name of golden project dir, with its .cu.
func goldenKernel(t *testing.T, dir, name string) (*ir.Kernel, []byte) {
	t.Helper()
	cfg, err := config.Load(filepath.Join("..", "..", "testdata", "golden", dir, config.FileName))
	if err != nil {
		t.Fatal(err)
	}
	res, err := generate.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range res.Kernels {
		if k.Name != name {
			continue
		}
		for _, f := range res.Files {
			if strings.HasSuffix(f.Path, "/"+name+".cu") {
				return k, f.Data
			}
		}
	}
	t.Fatalf("no kernel %s with a .cu in golden project %s", name, dir)
	return nil, nil
}

// TestMMACatchesMutations: the CPU run of the tensor-core kernels fails
// each planted bug — every rewrite must apply, and every variant it
// touches must fail at the shape of the form it breaks (m = 9: skinny; m
// = 33: tiled).
func TestMMACatchesMutations(t *testing.T) {
	tc := findToolchain(t)
	ks, files := loadKernels(t)
	skinny, tiled := parity.MatmulShape{M: 9, N: 33, K: 192}, parity.MatmulShape{M: 33, N: 40, K: 192}
	for _, m := range []struct {
		kernel, name string
		shape        parity.MatmulShape
		from, to     string
	}{
		{"qmatmul_mlx4", "x's pair order off (skinny)", skinny, "kgen_p[4 * kgen_j + 1] = __byte_perm(kgen_x[4 * kgen_j], kgen_x[4 * kgen_j + 2], 0x7632);", "kgen_p[4 * kgen_j + 1] = __byte_perm(kgen_x[4 * kgen_j], kgen_x[4 * kgen_j + 2], 0x5410);"},
		{"qmatmul_mlx4", "natural order off (tiled)", tiled, "kgen_n[4 * kgen_j + 2] = __byte_perm(kgen_p[4 * kgen_j], kgen_p[4 * kgen_j + 1], 0x7632);", "kgen_n[4 * kgen_j + 2] = __byte_perm(kgen_p[4 * kgen_j], kgen_p[4 * kgen_j + 1], 0x5410);"},
		{"qmatmul_mlx4", "warp 0's partial sums dropped (skinny)", skinny, "for (unsigned kgen_w = 0; kgen_w < WARPS; ++kgen_w)", "for (unsigned kgen_w = 1; kgen_w < WARPS; ++kgen_w)"},
		{"qmatmul_mlx4", "B fragment's k halves swapped (tiled)", tiled, "kgen_ks * 16 + (kgen_lane / 8) % 2 * 8)", "kgen_ks * 16 + (1 - (kgen_lane / 8) % 2) * 8)"},
		{"qmatmul_q4_0", "nibbles swapped", tiled, "0x4B000000u | (kgen_x & 15u)", "0x4B000000u | ((kgen_x >> 4) & 15u)"},
		{"qmatmul_q4_0", "odd blocks read as even (skinny)", skinny, "kgen_r.kgen_odd = (reinterpret_cast<unsigned long long>(kgen_block) & 2u) != 0;", "kgen_r.kgen_odd = false;"},
	} {
		t.Run(m.kernel+"/"+m.name, func(t *testing.T) {
			k := ks[m.kernel]
			src := string(files[m.kernel])
			if !strings.Contains(src, m.from) {
				t.Fatalf("the rewrite %q does not apply", m.from)
			}
			b := buildKernels(t, tc, k, files[m.kernel], func(s string) string { return strings.ReplaceAll(s, m.from, m.to) })
			results, err := parity.Check(context.Background(), k, nil, parity.Options{Seed: 5, Matmul: []parity.MatmulShape{m.shape}, Backend: ir.CUDA, Run: b.runner()})
			if err != nil {
				t.Logf("fails as it must: the run stops: %v", buildcache.FirstLines(err.Error(), 2))
				return
			}
			for _, r := range results {
				if r.Failed == 0 {
					t.Errorf("%s: %v passes with its %s", r.HostName, m.shape, m.name)
				} else {
					t.Logf("%s fails as it must: %d of %d elements", r.HostName, r.Failed, r.Checked)
				}
			}
		})
	}
}
