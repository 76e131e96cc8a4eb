package cfam_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/emit/cfam"
	"github.com/kgen-dev/kgen/emit/cuda"
	"github.com/kgen-dev/kgen/ir"
)

// TestDenseLibraryEntries compiles the entry part of each quantized
// built-in with a dense form (where nvcc and nm exist; skips otherwise)
// and reads its symbols: every host name the Go port looks up in the
// library (the kernel's own and each CUDAForms phase's, per storage dtype:
// kgenrt's gpuEntries) must be a defined host function, each kernel must
// be there under its kgen_k_ name, and no kernel may keep a bare host name
// (it would be the launch stub, not the host function, that dlsym finds).
func TestDenseLibraryEntries(t *testing.T) {
	nvcc, err := cuda.NVCC()
	if err != nil {
		t.Skip(err)
	}
	nm, err := exec.LookPath("nm")
	if err != nil {
		t.Skip("no nm to read the object's symbols")
	}
	n := 0
	for _, k := range builtins(t) {
		mm := k.Matmul()
		if !k.Ports[ir.CUDA] || mm == nil || mm.QuantCUDA == nil || mm.QuantCUDA.Dense == nil {
			continue
		}
		n++
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			src, err := cfam.Emit(k, cfam.CUDA, cfam.Options{Header: header})
			if err != nil {
				t.Fatal(err)
			}
			obj := filepath.Join(t.TempDir(), "entry.o")
			if err := cuda.CompilePart(context.Background(), nvcc, k.Name, src, os.TempDir(), "entry", obj); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(nm, "--defined-only", obj).Output()
			if err != nil {
				t.Fatal(err)
			}
			defined := map[string]bool{}
			for _, l := range strings.Split(string(out), "\n") {
				if f := strings.Fields(l); len(f) == 3 && (f[1] == "T" || f[1] == "t") {
					defined[f[2]] = true
				}
			}
			var hosts []string
			for _, v := range k.Variants {
				hosts = append(hosts, v.HostName)
			}
			for _, f := range k.CUDAForms() {
				for _, v := range k.DescriptorPhases()[f.Phase].Variants {
					hosts = append(hosts, v.HostName)
				}
			}
			for _, h := range hosts {
				if !defined[h] {
					t.Errorf("%s: no host function %s in the entry part", k.Name, h)
				}
				if !defined["kgen_k_"+h] {
					t.Errorf("%s: no kernel kgen_k_%s in the entry part", k.Name, h)
				}
				if strings.Contains(string(out), "__device_stub__Z"+strconv.Itoa(len(h))+h) { // a kernel's launch stub, mangled
					t.Errorf("%s: a kernel keeps the host name %s", k.Name, h)
				}
			}
			for _, v := range mm.QuantCUDA.Dense.Dequant.Variants {
				if !defined["kgen_k_"+v.HostName] {
					t.Errorf("%s: no dequantization kernel kgen_k_%s", k.Name, v.HostName)
				}
			}
		})
	}
	if n == 0 {
		t.Error("no quantized built-in has a dense form")
	}
}
