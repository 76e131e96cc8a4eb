package golang

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/emit/hip"
	"github.com/kgen-dev/kgen/ir"
)

// The ROCm slot. A kernel whose spec says `rocm: generated` gets
// <kernel>_rocm.go: a kgenrt.ROCmModule naming the .hip file, the sha256
// prefix of its bytes, the targets and the folder of code objects; the port
// table's ROCm slot is kgenrt.ROCmPort over it. The package gets, once,
// hipbin.go (//go:embed hipbin) and hipbin/README.md. `kgen rocm` compiles
// each .hip into hipbin/<kernel>-<hash>.<arch>.co (emit/hip).

// rocmBinaries is the package-level embed.FS of the code objects.
const rocmBinaries = "kgenROCmBinaries"

func (n *names) rocmModule() string { return n.lower + "ROCm" }

// rocmSlot is the port table entry of a generated ROCm port.
func rocmSlot(n *names) jen.Code {
	return rt("ROCmPort").Call(jen.Op("&").Id(n.desc), jen.Op("&").Id(n.rocmModule()))
}

// rocmFile writes the kernel's ROCm module descriptor.
func rocmFile(k *ir.Kernel, n *names, src Source, opts Request) *jen.File {
	f := newFile(opts, k.SpecPath)
	var objects []string
	for _, a := range hip.Archs {
		objects = append(objects, hip.CodeObject(k.Name, src.Data, a))
	}
	f.Add(comment(
		fmt.Sprintf("%s is the ROCm module of kernel %s: %s, compiled by `kgen rocm`", n.rocmModule(), k.Name, src.Path),
		fmt.Sprintf("(clang, no ROCm headers or device libraries) into %s/{%s} and", hip.BinDir, strings.Join(objects, ",")),
		fmt.Sprintf("embedded. Its entry points are the host names of %s's dtype-key table,", n.desc),
		"parameters in its binding order; the hash ties the code objects to this exact",
		"source. Without one the device accepts, the ROCm port says so and Select refuses it.",
	))
	var archs []jen.Code
	for _, a := range hip.Archs {
		archs = append(archs, jen.Lit(a))
	}
	f.Var().Id(n.rocmModule()).Op("=").Add(rt("ROCmModule")).Add(block(
		item(field("Kernel", jen.Op("&").Id(n.desc))),
		item(field("Source", jen.Lit(src.Path))),
		item(field("Hash", jen.Lit(hip.Hash(src.Data)))),
		item(field("Archs", jen.Index().String().Values(archs...))),
		item(field("Binaries", jen.Op("&").Id(rocmBinaries))),
		item(field("Dir", jen.Lit(hip.BinDir))),
	))
	return f
}

// rocmPackageFiles are the package's embed of the code objects folder and
// the README that keeps the folder non-empty.
func rocmPackageFiles(opts Request) ([]File, error) {
	f := newFile(opts, "kgen.yaml")
	f.Anon("embed")
	f.Add(comment(
		fmt.Sprintf("%s holds the AMDGPU code objects `kgen rocm` compiles into %s/ (one", rocmBinaries, hip.BinDir),
		"<kernel>-<hash>.<arch>.co per kernel with a ROCm port and target); the folder's README",
		"keeps the embed valid when none has been built.",
	))
	f.Comment("//go:embed " + hip.BinDir)
	f.Var().Id(rocmBinaries).Qual("embed", "FS")
	data, err := render(f)
	if err != nil {
		return nil, fmt.Errorf("go output hipbin.go: %w", err)
	}
	readme := opts.Header("kgen.yaml") + `

# ROCm code objects

kgen writes each ` + "`rocm: generated`" + ` kernel's HIP source (.hip) with ` + "`kgen gen`" + `; it
does not compile it, so ` + "`kgen gen`" + ` needs no compiler. Compiling is a separate step
that needs clang and lld (19 or newer; no ROCm installation):

    kgen rocm

It writes one <kernel>-<hash>.<arch>.co per kernel and target (` + strings.Join(hip.Archs, ", ") + `) into
this folder, where the package embeds it (hipbin.go). <hash> is the first 16 hex
digits of the sha256 of the .hip file, so a code object built from another version
of the source is never loaded. Until one exists that the device accepts, the
kernel's ROCm port reports it and Select refuses it; everything else works.
`
	return []File{{Name: "hipbin.go", Data: data}, {Name: hip.BinDir + "/README.md", Data: []byte(readme)}}, nil
}
