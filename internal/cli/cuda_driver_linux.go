//go:build linux && (amd64 || arm64)

package cli

import "github.com/ebitengine/purego"

// cudaDriverNote says whether this machine can run what `kgen cuda` built:
// the same dlopen kgenrt's CUDA port does (it also keeps purego, which the
// generated packages need through kgenrt, in the tool's requirements, so a
// `go get -tool` module builds its generated package without a tidy).
func cudaDriverNote() string {
	if _, err := purego.Dlopen("libcuda.so.1", purego.RTLD_NOW|purego.RTLD_GLOBAL); err != nil {
		return "no CUDA driver on this machine (libcuda.so.1): the CUDA ports will report unavailable here"
	}
	return "CUDA driver found (libcuda.so.1)"
}
