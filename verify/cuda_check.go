package verify

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"sync"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/emit/cuda"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/ir"
)

// cudaPorts checks every `cuda: generated` kernel: its .cu source and its Go
// module descriptor are both generated and name the same source hash (drift
// has already compared both with the disk), and, where nvcc exists, the
// source compiles for sm_90 (a source this nvcc compiled before is not
// compiled again: cuda.Check, cuda.CheckPart).
func (r *Report) cudaPorts(ctx context.Context, cfg *config.Config, res *generate.Result) {
	files := map[string][]byte{}
	for _, f := range res.Files {
		files[f.Path] = f.Data
	}
	var todo []int
	for i, k := range res.Kernels {
		if !k.Ports[ir.CUDA] {
			continue
		}
		cu := files[generate.CUDAPath(cfg, k)]
		goFile := files[path.Join(cfg.OutGo, k.Name+"_cuda.go")]
		pos := diag.Pos{Path: k.SpecPath, Line: 1, Col: 1}
		switch {
		case cu == nil || goFile == nil:
			r.Findings = append(r.Findings, Finding{Check: "cuda", Pos: pos, Msg: "cuda: generated, but the .cu source or its Go module is missing"})
		case !bytes.Contains(goFile, []byte(`"`+cuda.Hash(cu)+`"`)):
			r.Findings = append(r.Findings, Finding{Check: "cuda", Pos: pos, Msg: "the Go CUDA module does not name the hash of " + generate.CUDAPath(cfg, k)})
		default:
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return
	}
	r.Checks = append(r.Checks, "cuda")
	nvcc, err := cuda.NVCC()
	if err != nil {
		r.Notes = append(r.Notes, "cuda compile skipped: no nvcc")
		return
	}
	todo = r.cutlassTodo(res.Kernels, todo)
	include, _ := cuda.CUTLASSInclude(os.Getenv(cuda.CUTLASSEnv))
	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for j, i := range todo {
		wg.Add(1)
		go func(j, i int, src []byte) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			k := res.Kernels[i]
			if !cuda.IsLibrary(k) {
				errs[j] = cuda.Check(ctx, nvcc, k.Name, src)
				return
			}
			// A CUTLASS matmul: its first part (one dtype, one problem
			// class) holds all of its CUTLASS code; the other CUTLASS
			// parts differ only in template arguments. The SIMT GEMMs'
			// parts (plain CUDA, seconds each) are their own code. `kgen
			// cuda` compiles them all.
			for _, part := range verifyParts(k) {
				if errs[j] = cuda.CheckPart(ctx, nvcc, k.Name, src, include, part); errs[j] != nil {
					return
				}
			}
		}(j, i, files[generate.CUDAPath(cfg, res.Kernels[i])])
	}
	wg.Wait()
	failed := 0
	for j, i := range todo {
		if errs[j] != nil {
			failed++
			pos := diag.Pos{Path: generate.CUDAPath(cfg, res.Kernels[i]), Line: 1, Col: 1}
			r.Findings = append(r.Findings, Finding{Check: "cuda", Pos: pos, Msg: fmt.Sprint(errs[j])})
		}
	}
	if failed == 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("cuda compile: %d kernel(s) ok", len(todo)))
	}
}

// verifyParts are the parts of a CUDA matmul `kgen verify` compiles: the
// first CUTLASS part (the others differ only in template arguments) and
// every plain part (the SIMT GEMMs; the entry points and a split's second
// phase).
func verifyParts(k *ir.Kernel) []string {
	parts, plain := cuda.Parts(k), cuda.PlainParts(k)
	if len(parts) == len(plain) { // f32 only: no CUTLASS part
		return plain
	}
	return append([]string{parts[0]}, plain...)
}

// cutlassTodo drops the CUTLASS matmuls from the compile check when no
// CUTLASS headers are configured ($KGEN_CUTLASS), saying so in a note.
func (r *Report) cutlassTodo(ks []*ir.Kernel, todo []int) []int {
	if _, err := cuda.CUTLASSInclude(os.Getenv(cuda.CUTLASSEnv)); err == nil {
		return todo
	}
	var out []int
	skipped := 0
	for _, i := range todo {
		if cuda.IsLibrary(ks[i]) {
			skipped++
			continue
		}
		out = append(out, i)
	}
	if skipped > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("cuda compile of %d CUTLASS matmul(s) skipped: no CUTLASS headers ($%s)", skipped, cuda.CUTLASSEnv))
	}
	return out
}
