package hip_test

import (
	"testing"

	"github.com/kgen-dev/kgen/emit/hip"
	"github.com/kgen-dev/kgen/kgenrt"
)

// TestCodeObjectNamesMirrorKgenrt: the code object names kgenrt's ROCm
// module looks for are the ones `kgen rocm` writes, for every target.
func TestCodeObjectNamesMirrorKgenrt(t *testing.T) {
	src := []byte("// a .hip source")
	m := &kgenrt.ROCmModule{Kernel: &kgenrt.Kernel{Name: "k"}, Hash: hip.Hash(src), Archs: hip.Archs}
	for i, a := range hip.Archs {
		if got, want := m.CodeObjects()[i], hip.CodeObject("k", src, a); got != want {
			t.Errorf("%s: kgenrt looks for %s, kgen rocm writes %s", a, got, want)
		}
	}
}
