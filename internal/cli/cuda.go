package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/kgen-dev/kgen/emit/cuda"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/internal/output"
	"github.com/kgen-dev/kgen/internal/par"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/spec"
)

func cudaCmd(o *options) *cobra.Command {
	var outDir, cutlassDir string
	var skipCUTLASS bool
	cmd := &cobra.Command{
		Use:   "cuda",
		Short: "Compile the generated CUDA kernels with nvcc into the fatbins the Go package embeds",
		Long: `cuda compiles the CUDA source of every kernel whose spec says cuda: generated
(the .cu files kgen gen writes into out.cuda) with nvcc into
<out.go>/cudabin/<kernel>-<hash>.fatbin: sm_80 and sm_90 machine code plus
compute_90 PTX. <hash> names the exact source, so the generated package loads
only a binary built from its own .cu; older binaries of the same kernel are
removed when the folder's manifest (.kgen-cuda.sum, the sha256 of every
binary kgen cuda wrote there) proves kgen cuda wrote them and nobody changed
them since; any other file is kept, and kgen cuda names it. It is the one
step that needs the CUDA toolkit: kgen gen, kgen verify and CI do not. nvcc comes from $KGEN_NVCC, PATH or /usr/local/cuda/bin.

Matmul kernels are CUTLASS GEMMs: each is built into <kernel>-<hash>.so (host
functions plus sm_90a code), which needs CUTLASS's headers (--cutlass DIR or
$KGEN_CUTLASS); f32 storage is kgen's SIMT GEMM, one more part of the same
library. Their parts (storage dtype x problem class, f32_simt, entry) compile in
parallel into objects cached by source hash in $KGEN_CUDA_CACHE (default: the
user cache folder's kgen/cuda); a library already in the out folder is kept.`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error { return o.cudaBuild(outDir, cutlassDir, skipCUTLASS) },
	}
	cmd.Flags().StringVar(&outDir, "out", "", "write the fatbins here instead of <out.go>/cudabin (e.g. for $KGEN_CUDA_FATBIN_DIR)")
	cmd.Flags().StringVar(&cutlassDir, "cutlass", "", "CUTLASS folder (its include/ holds cutlass/ and cute/); default $KGEN_CUTLASS")
	cmd.Flags().BoolVar(&skipCUTLASS, "skip-cutlass", false, "build only the kernels that need no CUTLASS (the matmuls are named and skipped)")
	return cmd
}

func (o *options) cudaBuild(outDir, cutlassDir string, skipCUTLASS bool) error {
	start := time.Now()
	cfg, res, err := o.generate()
	if err != nil {
		return err
	}
	nvcc, err := cuda.NVCC()
	if err != nil {
		return fmt.Errorf("kgen cuda: %w", err)
	}
	shown := outDir // the folder as the user knows it, for messages
	if outDir == "" {
		// The default folder is one of kgen's out folders: like gen, write
		// (and remove old fatbins) only if no symlink on the way sends the
		// writes elsewhere.
		rel := path.Join(cfg.OutGo, cuda.BinDir)
		if err := output.CheckReal(cfg.Dir, rel); err != nil {
			return fmt.Errorf("kgen cuda: %w", err)
		}
		outDir = filepath.Join(cfg.Dir, filepath.FromSlash(rel))
		shown = rel
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	manifest, err := readCUDAManifest(outDir, shown)
	if err != nil {
		return fmt.Errorf("kgen cuda: %w", err)
	}
	sources := map[string][]byte{}
	for _, f := range res.Files {
		sources[f.Path] = f.Data
	}
	var names []string
	var srcs [][]byte
	var libs []*ir.Kernel
	for _, k := range res.Kernels {
		switch {
		case !k.Ports[spec.CUDA]:
		case cuda.IsLibrary(k):
			libs = append(libs, k)
		default:
			names = append(names, k.Name)
			srcs = append(srcs, sources[generate.CUDAPath(cfg, k)])
		}
	}
	built, cached := 0, 0
	var written []string
	if len(libs) > 0 && skipCUTLASS {
		fmt.Fprintf(o.stderr, "kgen cuda: skipped (--skip-cutlass): %s\n", kernelNames(libs))
		libs = nil
	}
	if len(libs) > 0 {
		if cutlassDir == "" {
			cutlassDir = os.Getenv(cuda.CUTLASSEnv)
		}
		include, err := cuda.CUTLASSInclude(cutlassDir)
		if err != nil {
			return fmt.Errorf("kgen cuda: %s: %w", kernelNames(libs), err)
		}
		lb := &libBuild{nvcc: nvcc, include: include, outDir: outDir}
		var linked []string
		built, cached, linked, err = lb.build(libs, sources, func(k *ir.Kernel) string { return generate.CUDAPath(cfg, k) })
		written = append(written, linked...)
		if err != nil {
			return errors.Join(err, manifest.update(written, nil))
		}
	}
	fatbins := make([]string, len(names))
	err = par.Do(len(names), 0, func(i int) error {
		bin := cuda.Fatbin(names[i], srcs[i])
		if err := cuda.Compile(context.Background(), nvcc, names[i], srcs[i], "fatbin", filepath.Join(outDir, bin)); err != nil {
			return fmt.Errorf("kernel %s: %w", names[i], err)
		}
		fatbins[i] = bin
		return nil
	})
	for _, bin := range fatbins {
		if bin != "" {
			written = append(written, bin)
		}
	}
	if err != nil {
		return errors.Join(err, manifest.update(written, nil))
	}
	keep := map[string][]string{} // kernel → its binary now
	for i, name := range names {
		keep[name] = []string{fatbins[i]}
	}
	for _, k := range libs {
		keep[k.Name] = []string{cuda.BinaryOf(k, sources[generate.CUDAPath(cfg, k)])}
	}
	var order []string
	for _, k := range res.Kernels {
		order = append(order, k.Name)
	}
	kept, err := manifest.settle(written, order, keep)
	if err != nil {
		return fmt.Errorf("kgen cuda: %w", err)
	}
	manifest.reportKept(o.stderr, "kgen cuda", "binary", shown, kept)
	fmt.Fprintf(o.stdout, "kgen cuda: %d kernel(s) compiled with %s into %s", len(names), nvcc, outDir)
	if len(libs) > 0 {
		fmt.Fprintf(o.stdout, ", %d CUTLASS matmul(s) (%d part(s) compiled, %d cached)", len(libs), built, cached)
	}
	fmt.Fprintf(o.stdout, " in %s; %s\n", time.Since(start).Round(100*time.Millisecond), cudaDriverNote())
	return nil
}
