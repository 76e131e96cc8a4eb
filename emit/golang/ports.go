package golang

import (
	"slices"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/ir"
)

// port is what the Go package holds for one backend: the per-kernel file
// that carries its source or module, the kernel's port-table slot, the
// package-level names that file declares, and files written once per
// package when any kernel has the backend's source. The table below is the
// Go emitter's only knowledge of which backends exist.
type port struct {
	suffix string // the per-kernel file's name suffix
	file   func(k *ir.Kernel, n *names, src Source, opts Request) *jen.File
	slot   func(n *names) jen.Code // the port-table entry of a generated port
	// names are the package-level identifiers file declares.
	names func(n *names) []string
	// pkg writes the package's files of this backend (nil: none).
	pkg func(opts Request) ([]File, error)
}

// ports is the Go side of every backend with a generated port, in port-table
// order; TestEveryPortedBackendIsEmitted fails when a backend that a kernel
// can port has no row here or in cfam.Dialects.
var ports = [ir.NumBackends]*port{
	ir.Metal: {
		suffix: "_msl.go", file: sourceFile,
		slot:  func(n *names) jen.Code { return rt("MetalPort").Call(jen.Op("&").Id(n.desc)) },
		names: func(n *names) []string { return []string{n.source} },
	},
	ir.CUDA: {
		suffix: "_cuda.go", file: cudaFile, slot: cudaSlot,
		names: func(n *names) []string { return []string{n.cudaModule()} },
		pkg:   cudaPackageFiles,
	},
	ir.ROCm: {
		suffix: "_rocm.go", file: rocmFile, slot: rocmSlot,
		names: func(n *names) []string { return []string{n.rocmModule()} },
		pkg:   rocmPackageFiles,
	},
}

// hasSource reports whether any kernel has a source for backend b.
func hasSource(kernels []*ir.Kernel, b ir.Backend) bool {
	for _, k := range kernels {
		if slices.Contains(k.Sources(), b) {
			return true
		}
	}
	return false
}
