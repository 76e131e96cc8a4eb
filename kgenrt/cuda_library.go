package kgenrt

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
)

// CUDA matmul ports are not fatbins: their kernels are CUTLASS GEMMs whose
// launch (TMA descriptors, cluster shape, persistent grid) is prepared on
// the host by CUTLASS itself. `kgen cuda` builds such a kernel's .cu into a
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
	// Align is the multiple k and n must be (TMA's 16-byte row strides).
	Align int
	// DTypes are the storage dtypes with a host function; Why says why the
	// others have none.
	DTypes []DType
	Why    string
}

// libraryCheck refuses what the library's host functions cannot run: a
// storage dtype without a function, and k or n off the alignment (k = 0
// included: TMA has no empty box).
func (m *CUDAModule) libraryCheck(c *Call) error {
	lib := m.Library
	ok := false
	for _, t := range lib.DTypes {
		ok = ok || t == c.Variant.DType
	}
	if !ok {
		return fmt.Errorf("kgenrt: kernel %s: the CUDA port has no %s kernel: %s", m.Kernel.Name, c.Variant.DType, lib.Why)
	}
	if emptyOutput(c) {
		return nil // the host function returns at once (a row kernel's grid counts rows only)
	}
	for _, name := range []string{"k", "n"} {
		v, found := sizeField(c, name)
		if found && (v == 0 || v%uint32(lib.Align) != 0) {
			return fmt.Errorf("kgenrt: kernel %s: the CUDA port needs %s to be a positive multiple of %d (16-byte rows for TMA); got %s = %d", m.Kernel.Name, name, lib.Align, name, v)
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
func (m *CUDAModule) openLibrary() (cudaModuleHandle, error) {
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
