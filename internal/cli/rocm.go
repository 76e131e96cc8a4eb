package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2"
	"github.com/spf13/cobra"

	"github.com/kgen-dev/kgen/emit/hip"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/internal/output"
	"github.com/kgen-dev/kgen/internal/par"
	"github.com/kgen-dev/kgen/ir"
)

func rocmCmd(o *options) *cobra.Command {
	var outDir string
	cmd := &cobra.Command{
		Use:   "rocm",
		Short: "Compile the generated HIP kernels with clang into the AMDGPU code objects the Go package embeds",
		Long: `rocm compiles the HIP source of every kernel whose spec says rocm: generated
(the .hip files kgen gen writes into out.hip) with clang and lld (19 or newer;
no ROCm installation, headers or device libraries) into one code object per
target, <out.go>/hipbin/<kernel>-<hash>.<arch>.co, for gfx942 (MI300, 64-lane
wavefronts) and gfx1100 (RDNA 3, 32-lane). <hash> names the exact source, so
the generated package loads only code objects built from its own .hip. Older
objects of the same kernel are removed when the folder's manifest
(.kgen-rocm.sum) proves kgen rocm wrote them; any other file is kept, and
kgen rocm names it. clang comes from $KGEN_HIP_CLANG or clang-19 on PATH;
builds are cached in $KGEN_HIP_CACHE (default: the user cache folder's kgen/hip).`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error { return o.rocmBuild(outDir) },
	}
	cmd.Flags().StringVar(&outDir, "out", "", "write the code objects here instead of <out.go>/hipbin (e.g. for $KGEN_ROCM_CODE_OBJECT_DIR)")
	return cmd
}

func (o *options) rocmBuild(outDir string) error {
	start := time.Now()
	cfg, res, err := o.generate()
	if err != nil {
		return err
	}
	clang, err := hip.Clang()
	if err != nil {
		return fmt.Errorf("kgen rocm: %w", err)
	}
	shown := outDir
	if outDir == "" {
		rel := path.Join(cfg.OutGo, hip.BinDir)
		if err := output.CheckReal(cfg.Dir, rel); err != nil {
			return fmt.Errorf("kgen rocm: %w", err)
		}
		outDir, shown = filepath.Join(cfg.Dir, filepath.FromSlash(rel)), rel
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	manifest, err := readManifest(outDir, shown, rocmManifestName)
	if err != nil {
		return fmt.Errorf("kgen rocm: %w", err)
	}
	type job struct {
		k    *ir.Kernel
		src  []byte
		arch string
	}
	var jobs []job
	for _, k := range res.Kernels {
		if !k.Ports[ir.ROCm] {
			continue
		}
		src := res.File(generate.SourcePath(cfg, k, ir.ROCm))
		for _, a := range hip.Archs {
			jobs = append(jobs, job{k, src, a})
		}
	}
	written := make([]string, len(jobs))
	err = par.Do(len(jobs), 0, func(i int) error {
		j := jobs[i]
		co, err := hip.Compile(context.Background(), clang, j.k.Name, j.src, j.arch)
		if err == nil {
			err = hip.CheckObject(co, j.arch, hip.Entries(j.k))
		}
		if err != nil {
			return fmt.Errorf("kernel %s, %s: %w", j.k.Name, j.arch, err)
		}
		name := hip.CodeObject(j.k.Name, j.src, j.arch)
		if err := renameio.WriteFile(filepath.Join(outDir, name), co, 0o644); err != nil {
			return err
		}
		written[i] = name
		return nil
	})
	var done []string
	for _, w := range written {
		if w != "" {
			done = append(done, w)
		}
	}
	if err != nil {
		return errors.Join(err, manifest.update(done, nil))
	}
	var order []string
	current := map[string][]string{}
	for i := 0; i < len(jobs); i += len(hip.Archs) {
		order = append(order, jobs[i].k.Name)
		current[jobs[i].k.Name] = written[i : i+len(hip.Archs)]
	}
	kept, err := manifest.settle(done, order, current)
	if err != nil {
		return fmt.Errorf("kgen rocm: %w", err)
	}
	manifest.reportKept(o.stderr, "kgen rocm", "code object", shown, kept)
	fmt.Fprintf(o.stdout, "kgen rocm: %d kernel(s) compiled for %v with %s into %s in %s\n",
		len(jobs)/len(hip.Archs), hip.Archs, clang, outDir, time.Since(start).Round(100*time.Millisecond))
	return nil
}
