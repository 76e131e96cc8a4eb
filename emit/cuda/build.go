package cuda

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// The CUDA port's build facts, in one place for every reader: the C-family
// emitter names its compile parts with them, the Go emitter writes the
// binary names into the package, `kgen cuda` builds those binaries and
// `kgen verify` checks them. A kernel whose spec says `cuda: generated` is
// built by `kgen cuda` from its .cu into the package's BinDir:
//
//   - a fatbin, <kernel>-<hash>.fatbin, for every kernel whose launch kgen
//     computes (launch.Launch);
//   - a shared library, <kernel>-<hash>.so, for a matmul whose CUDA port is
//     host code kgen writes around CUTLASS (IsLibrary): its entry points
//     launch the GEMMs themselves, one compile part per dtype and problem
//     class so the parts build in parallel.
//
// <hash> ties a binary to the exact source it came from, so a stale binary
// is never loaded.

// BinDir is the generated package's subfolder holding the compiled CUDA
// binaries.
const BinDir = "cudabin"

// Hash is the hash prefix naming a kernel's compiled binary: the first 16
// hex digits of the sha256 of its .cu file.
func Hash(source []byte) string {
	sum := sha256.Sum256(source)
	return hex.EncodeToString(sum[:])[:16]
}

// Fatbin is a kernel's fatbin file name inside BinDir.
func Fatbin(kernel string, source []byte) string {
	return kernel + "-" + Hash(source) + ".fatbin"
}

// IsLibrary reports whether a kernel's CUDA port is a shared library of
// CUTLASS host functions (a matmul, or a quantized one with a dense
// form) rather than a fatbin.
func IsLibrary(k *ir.Kernel) bool {
	mm := k.Matmul()
	return mm != nil && mm.LibraryPlan() != nil
}

// BinaryOf is a kernel's binary file name inside BinDir: the fatbin, or
// for a CUTLASS matmul the shared library <kernel>-<hash>.so.
func BinaryOf(k *ir.Kernel, source []byte) string {
	if IsLibrary(k) {
		return k.Name + "-" + Hash(source) + ".so"
	}
	return Fatbin(k.Name, source)
}

// Parts are the compile parts of a CUDA library matmul: one per 16-bit
// storage dtype and problem class (CUTLASS GEMMs), then PlainParts. The .cu
// file compiles one part under -DKGEN_PART_<part>.
func Parts(k *ir.Kernel) []string {
	c := k.Matmul().LibraryPlan()
	var out []string
	for _, t := range c.DTypes {
		for _, g := range c.Configs {
			out = append(out, GemmPart(t, g))
		}
	}
	return append(out, PlainParts(k)...)
}

// PlainParts are the parts that include none of CUTLASS's headers: the
// SIMT GEMMs and the entry points (Parts' last ones).
func PlainParts(k *ir.Kernel) []string {
	var out []string
	for _, t := range k.Matmul().LibraryPlan().SIMTParts() {
		out = append(out, SIMTPart(t))
	}
	return append(out, "entry")
}

// GemmPart names the part of problem class g's CUTLASS GEMM for storage t
// (its function is kgen_<kernel>_<part>).
func GemmPart(t dtype.DType, g ir.GemmConfig) string { return t.String() + "_" + g.Name }

// SIMTPart names the SIMT GEMM's compile part of storage t.
func SIMTPart(t dtype.DType) string { return t.String() + "_simt" }
