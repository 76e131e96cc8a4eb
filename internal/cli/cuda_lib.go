package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kgen-dev/kgen/emit/cuda"
	"github.com/kgen-dev/kgen/internal/par"
	"github.com/kgen-dev/kgen/ir"
)

// CUDACacheEnv names the folder of cached CUTLASS part objects (and of
// the compile checks' outputs, see cuda.CacheEnv).
const CUDACacheEnv = cuda.CacheEnv

// libBuild builds CUTLASS matmuls into shared libraries: every part of
// every library that is not already built compiles in one parallel pool
// (a part's object is cached by the hash of its source, part and flags),
// then each library links.
type libBuild struct {
	nvcc, include, outDir string
}

type libPart struct {
	k    *ir.Kernel
	src  []byte
	part string
	obj  string
}

// build returns the parts compiled and found cached, and the file names of
// the libraries it linked into the out folder.
func (lb *libBuild) build(libs []*ir.Kernel, sources map[string][]byte, cuPath func(*ir.Kernel) string) (built, cached int, linked []string, err error) {
	cache := os.Getenv(CUDACacheEnv)
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return 0, 0, nil, fmt.Errorf("kgen cuda: no cache folder for the CUTLASS objects (set $%s): %w", CUDACacheEnv, err)
		}
		cache = filepath.Join(dir, "kgen", "cuda")
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return 0, 0, nil, err
	}
	flags := cuda.PartFlags(lb.include)
	var todo []libPart
	objs := map[*ir.Kernel][]string{}
	var link []*ir.Kernel
	for _, k := range libs {
		src := sources[cuPath(k)]
		if _, err := os.Stat(filepath.Join(lb.outDir, cuda.BinaryOf(k, src))); err == nil {
			continue // this exact source is built
		}
		link = append(link, k)
		for _, part := range cuda.Parts(k) {
			sum := sha256.Sum256([]byte(string(src) + "\x00" + part + "\x00" + flags))
			obj := filepath.Join(cache, k.Name+"-"+part+"-"+hex.EncodeToString(sum[:8])+".o")
			objs[k] = append(objs[k], obj)
			if _, err := os.Stat(obj); err == nil {
				cached++
				continue
			}
			todo = append(todo, libPart{k: k, src: src, part: part, obj: obj})
		}
	}
	err = par.Do(len(todo), 0, func(i int) error {
		p := todo[i]
		tmp := p.obj + ".tmp" + fmt.Sprint(os.Getpid())
		if err := cuda.CompilePart(context.Background(), lb.nvcc, p.k.Name, p.src, lb.include, p.part, tmp); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("kernel %s, part %s: %w", p.k.Name, p.part, err)
		}
		return os.Rename(tmp, p.obj)
	})
	if err != nil {
		return 0, 0, nil, err
	}
	err = par.Do(len(link), 0, func(i int) error {
		k := link[i]
		bin := cuda.BinaryOf(k, sources[cuPath(k)])
		tmp := filepath.Join(lb.outDir, bin+".tmp")
		if err := cuda.LinkLibrary(context.Background(), lb.nvcc, objs[k], tmp); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("kernel %s: %w", k.Name, err)
		}
		return os.Rename(tmp, filepath.Join(lb.outDir, bin))
	})
	for _, k := range link {
		linked = append(linked, cuda.BinaryOf(k, sources[cuPath(k)]))
	}
	return len(todo), cached, linked, err
}

func kernelNames(ks []*ir.Kernel) string {
	var out []string
	for _, k := range ks {
		out = append(out, k.Name)
	}
	return "kernel(s) " + strings.Join(out, ", ")
}
