package golang

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/emit/cuda"
	"github.com/kgen-dev/kgen/ir"
)

// The CUDA slot. A kernel whose spec says `cuda: generated` gets, beside
// its Metal files:
//
//   - <kernel>_cuda.go: a kgenrt.CUDAModule naming the .cu file, the
//     sha256 prefix of its bytes, and the folder of compiled binaries;
//     the port table's CUDA slot is kgenrt.CUDAPort over it;
//
// and the package gets, once, cudabin.go (//go:embed cudabin) and
// cudabin/README.md, so the embed always has a file to match. `kgen cuda`
// compiles each .cu with nvcc into cudabin/<kernel>-<hash>.fatbin; the hash
// in the name ties a binary to the exact source it came from, so a stale
// binary is never loaded, and without one the port reports how to build it.

// cudaBinaries is the package-level embed.FS of the binaries folder.
const cudaBinaries = "kgenCUDABinaries"

func (n *names) cudaModule() string { return n.lower + "CUDA" }

// cudaSlot is the port table entry of a generated CUDA port.
func cudaSlot(n *names) jen.Code {
	return rt("CUDAPort").Call(jen.Op("&").Id(n.desc), jen.Op("&").Id(n.cudaModule()))
}

// cudaFile writes the kernel's CUDA module descriptor.
func cudaFile(k *ir.Kernel, n *names, src Source, opts Request) *jen.File {
	f := newFile(opts, k.SpecPath)
	f.Add(comment(
		fmt.Sprintf("%s is the CUDA module of kernel %s: %s, compiled by `kgen cuda`", n.cudaModule(), k.Name, src.Path),
		fmt.Sprintf("(nvcc %s) into %s/%s and embedded. Its entry points are the", map[bool]string{false: "-fatbin", true: "-shared, CUTLASS"}[cuda.IsLibrary(k)], cuda.BinDir, cuda.BinaryOf(k, src.Data)),
		fmt.Sprintf("host names of %s's dtype-key table, parameters in its binding order; the", n.desc),
		"hash ties the binary to this exact source. Without the binary the CUDA port",
		"reports how to build it, and Select refuses it.",
	))
	f.Var().Id(n.cudaModule()).Op("=").Add(rt("CUDAModule")).Add(block(
		item(field("Kernel", jen.Op("&").Id(n.desc))),
		item(field("Source", jen.Lit(src.Path))),
		item(field("Hash", jen.Lit(cuda.Hash(src.Data)))),
		item(field("Binaries", jen.Op("&").Id(cudaBinaries))),
		item(field("Dir", jen.Lit(cuda.BinDir))),
		cudaLibrary(k),
	))
	return f
}

// cudaLibrary is a matmul's CUDALibrary field: its CUDA port is a shared
// library of CUTLASS host functions (kgenrt/cuda_library.go), nil otherwise.
func cudaLibrary(k *ir.Kernel) jen.Code {
	mm := k.Matmul()
	if mm == nil || mm.LibraryPlan() == nil {
		return jen.Null()
	}
	c := mm.LibraryPlan()
	var ts []jen.Code
	for _, t := range c.Entries() {
		ts = append(ts, item(jen.Values(
			jen.Id("DType").Op(":").Add(rt(strings.ToUpper(t.String()))),
			jen.Id("Align").Op(":").Lit(c.AlignOf(t)),
		)))
	}
	return item(field("Library", jen.Op("&").Add(rt("CUDALibrary")).Add(block(
		item(field("DTypes", jen.Index().Add(rt("CUDALibraryDType")).Add(block(ts...)))),
		item(field("Why", jen.Lit(c.Why))),
	))))
}

// cudaPackageFiles are the package's embed of cuda.BinDir and the README
// that keeps the folder non-empty.
func cudaPackageFiles(opts Request) ([]File, error) {
	f := newFile(opts, "kgen.yaml")
	f.Anon("embed")
	f.Add(comment(
		fmt.Sprintf("%s holds the CUDA binaries `kgen cuda` compiles into %s/ (one", cudaBinaries, cuda.BinDir),
		"<kernel>-<hash>.fatbin per kernel with a CUDA port); the folder's README keeps the",
		"embed valid when none has been built.",
	))
	f.Comment("//go:embed " + cuda.BinDir)
	f.Var().Id(cudaBinaries).Qual("embed", "FS")
	data, err := render(f)
	if err != nil {
		return nil, fmt.Errorf("go output cudabin.go: %w", err)
	}
	readme := opts.Header("kgen.yaml") + `

# CUDA binaries

kgen writes each ` + "`cuda: generated`" + ` kernel's CUDA source (.cu) with ` + "`kgen gen`" + `; it
does not compile it, so ` + "`kgen gen`" + ` and CI need no CUDA toolkit. Compiling is a
separate step that needs nvcc:

    kgen cuda            # or: make cuda

It writes one <kernel>-<hash>.fatbin per kernel into this folder (sm_80 and sm_90
machine code plus compute_90 PTX), and for a matmul a <kernel>-<hash>.so (CUTLASS
GEMMs for sm_90a; needs CUTLASS headers: --cutlass DIR or $KGEN_CUTLASS), where the
package embeds it (cudabin.go).
<hash> is the first 16 hex digits of the sha256 of the .cu file, so a binary
built from another version of the source is never loaded. Until the binary
exists, the kernel's CUDA port reports that it is not built and Select
refuses it; everything else works.
`
	return []File{{Name: "cudabin.go", Data: data}, {Name: cuda.BinDir + "/README.md", Data: []byte(readme)}}, nil
}
