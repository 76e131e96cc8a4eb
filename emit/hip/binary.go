package hip

import (
	"crypto/sha256"
	"encoding/hex"
)

// The ROCm port's build facts, in one place for the Go emitter (which names
// the binaries in the package), `kgen rocm` (which builds them) and kgenrt
// (which loads them): `kgen rocm` compiles each `rocm: generated` kernel's
// .hip source once per target of Archs into <kernel>-<hash>.<arch>.co inside
// the package's BinDir, which the package embeds. <hash> ties a code object
// to the exact source it came from; at run time the port loads the first of
// the kernel's code objects that the device accepts.

// BinDir is the generated package's subfolder holding the code objects.
const BinDir = "hipbin"

// Hash is the hash prefix naming a kernel's code objects: the first 16 hex
// digits of the sha256 of its .hip file.
func Hash(source []byte) string {
	sum := sha256.Sum256(source)
	return hex.EncodeToString(sum[:])[:16]
}

// CodeObject is a kernel's code object file name for arch inside BinDir.
func CodeObject(kernel string, source []byte, arch string) string {
	return kernel + "-" + Hash(source) + "." + arch + ".co"
}
