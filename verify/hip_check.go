package verify

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/emit/hip"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/ir"
)

// hipPorts checks every `rocm: generated` kernel: its .hip source is
// generated and, where clang-19 and lld exist, compiles for every target
// of hip.Archs into an AMDGPU code object with one kernel and descriptor
// per entry point (hip.CheckObject). Builds are cached (hip.Compile), so
// an unchanged source costs nothing the second time.
func (r *Report) hipPorts(ctx context.Context, res *generate.Result) {
	srcs, goFiles := map[string]generate.File{}, map[string][]byte{}
	for _, f := range res.Files {
		if path.Dir(f.Path) == res.Config.OutGo {
			goFiles[path.Base(f.Path)] = f.Data
		}
		if strings.HasSuffix(f.Path, ".hip") {
			srcs[strings.TrimSuffix(path.Base(f.Path), ".hip")] = f
		}
	}
	var todo []*ir.Kernel
	for _, k := range res.Kernels {
		if !k.Ports[ir.ROCm] {
			continue
		}
		if _, ok := srcs[k.Name]; !ok {
			r.Findings = append(r.Findings, Finding{Check: "rocm", Pos: diag.Pos{Path: k.SpecPath, Line: 1, Col: 1}, Msg: "rocm: generated, but no .hip source was generated"})
			continue
		}
		if !bytes.Contains(goFiles[k.Name+"_rocm.go"], []byte(`"`+hip.Hash(srcs[k.Name].Data)+`"`)) {
			r.Findings = append(r.Findings, Finding{Check: "rocm", Pos: diag.Pos{Path: k.SpecPath, Line: 1, Col: 1}, Msg: "the Go ROCm module does not name the hash of " + srcs[k.Name].Path})
			continue
		}
		todo = append(todo, k)
	}
	if len(todo) == 0 {
		return
	}
	r.Checks = append(r.Checks, "rocm")
	clang, err := hip.Clang()
	if err != nil {
		r.Notes = append(r.Notes, "rocm compile skipped: "+err.Error())
		return
	}
	errs := make([]error, len(todo)*len(hip.Archs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, k := range todo {
		for j, arch := range hip.Archs {
			wg.Add(1)
			go func(at int, k *ir.Kernel, arch string) {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				co, err := hip.Compile(ctx, clang, k.Name, srcs[k.Name].Data, arch)
				if err == nil {
					err = hip.CheckObject(co, arch, hip.Entries(k))
				}
				if err != nil {
					errs[at] = fmt.Errorf("%s: %w", arch, err)
				}
			}(i*len(hip.Archs)+j, k, arch)
		}
	}
	wg.Wait()
	failed := 0
	for i, k := range todo {
		for j := range hip.Archs {
			if err := errs[i*len(hip.Archs)+j]; err != nil {
				failed++
				r.Findings = append(r.Findings, Finding{Check: "rocm", Pos: diag.Pos{Path: srcs[k.Name].Path, Line: 1, Col: 1}, Msg: err.Error()})
			}
		}
	}
	if failed == 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("rocm compile: %d kernel(s) ok for %s", len(todo), strings.Join(hip.Archs, ", ")))
	}
}
