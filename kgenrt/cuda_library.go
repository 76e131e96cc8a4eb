package kgenrt

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
)

// CUDA matmul ports are not fatbins: their kernels are CUTLASS GEMMs whose
// launch (TMA descriptors, cluster shape, persistent grid) is prepared on
// the host by CUTLASS itself, and for f32 storage kgen's SIMT GEMM, launched
// by its own host function in the same library. `kgen cuda` builds such a kernel's .cu into a
// shared library, <kernel>-<hash>.so, that exports one host function per
// storage dtype, named by the variant's host name:
//
//	int <host>(void* stream, void* const* ptrs, const void* args, char* err, int errlen)
//
// The port opens the library with purego (the CUDA runtime is linked into
// it statically, and uses the same primary context as the driver calls) and
// calls the host function with the stream, the device pointers in binding
// order and the args bytes: the same call, stream and pointers as a fatbin
// port's, and one Go call whatever the function launches.

// CUDALibrary marks a CUDAModule built as a shared library, with what its
// host functions require beyond the generated launcher's checks.
type CUDALibrary struct {
	// DTypes are the storage dtypes with a host function, each with its
	// alignment; Why says why the others have none.
	DTypes []CUDALibraryDType
	Why    string
}

// CUDALibraryDType is one storage dtype's host function and what it needs.
type CUDALibraryDType struct {
	DType DType
	// Align is the multiple k and n must be (k = 0 refused): 8 for a
	// CUTLASS GEMM without a fallback (TMA's 16-byte row strides, no empty
	// box), 1 where kgen's SIMT GEMM takes what TMA cannot load (any k and
	// n, 0 included) — every plan kgen writes today.
	Align int
}

// libraryCheck refuses what the library's host functions cannot run: a
// storage dtype without a function, and k or n off its alignment.
func (m *CUDAModule) libraryCheck(c *Call) error {
	lib := m.Library
	align := 0
	for _, t := range lib.DTypes {
		if t.DType == c.Variant.DType {
			align = t.Align
		}
	}
	if align == 0 {
		return fmt.Errorf("kgenrt: kernel %s: the CUDA port has no %s kernel: %s", m.Kernel.Name, c.Variant.DType, lib.Why)
	}
	if align == 1 || emptyOutput(c) {
		return nil // the SIMT GEMM takes any size; an empty output returns at once (a row kernel's grid counts rows only)
	}
	for _, name := range []string{"k", "n"} {
		v, found := sizeField(c, name)
		if found && (v == 0 || v%uint32(align) != 0) {
			return fmt.Errorf("kgenrt: kernel %s: the CUDA port's %s kernel needs %s to be a positive multiple of %d (16-byte rows for TMA); got %s = %d", m.Kernel.Name, c.Variant.DType, name, align, name, v)
		}
	}
	return nil
}

// emptyOutput reports whether the call's [m, n] output has no element.
func emptyOutput(c *Call) bool {
	m, okM := sizeField(c, "m")
	n, okN := sizeField(c, "n")
	return (okM && m == 0) || (okN && n == 0)
}

// sizeField reads a size field of the call's args struct by name.
func sizeField(c *Call, name string) (uint32, bool) {
	for _, f := range c.Kernel.ArgsBinding().Fields {
		if f.Size && f.Name == name {
			return binary.LittleEndian.Uint32(c.Args[f.Offset:]), true
		}
	}
	return 0, false
}

// openLibrary opens the library: the file in $KGEN_CUDA_FATBIN_DIR, else
// the embedded bytes written to a private temporary file (dlopen needs a
// path), removed once open.
func (m *CUDAModule) openLibrary() (gpuModule, error) {
	if dir := os.Getenv(CUDAFatbinDirEnv); dir != "" {
		p := filepath.Join(dir, m.BinaryName())
		if _, err := os.Stat(p); err == nil {
			return cudaOpenLibrary(p)
		}
	}
	b, err := m.binary()
	if err != nil {
		return 0, err
	}
	f, err := os.CreateTemp("", "kgen-"+m.BinaryName()+"-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	return cudaOpenLibrary(f.Name())
}
