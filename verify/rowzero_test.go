package verify_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRowwiseSignedZero: the generated Go reference of a rowwise kernel
// keeps the sign of zero of its row max and min as the kernel does, so
// the differential check (Go reference vs MSL, bit for bit) passes on
// issue 27's two examples, which it failed on 4,125 and 6,313 lanes.
func TestRowwiseSignedZero(t *testing.T) {
	if _, err := exec.LookPath("clang++-19"); err != nil {
		t.Skip("needs clang++-19 (apt-get install clang-19): the differential check runs on parity's launches")
	}
	t.Setenv("KGEN_MSLCPU_CXX", "clang++-19")
	dir := filepath.Join(t.TempDir(), "m")
	writeFile(t, filepath.Join(dir, "kgen.yaml"), "version: 1\nspecs: specs\nout:\n  msl: gen/msl\n  go: gen/kernels\nverify:\n  parity: required\n")
	writeFile(t, filepath.Join(dir, "specs/inf.yaml"), "kernel: inf\nkind: rowwise\ndtypes: [f32]\ninputs: [x, z]\noutputs:\n  - y: 1 / (x * -0 + row_max(z) * 0)\n")
	writeFile(t, filepath.Join(dir, "specs/sel.yaml"), "kernel: sel\nkind: rowwise\ndtypes: [f32]\ninputs: [x]\noutputs:\n"+
		"  - y: \"select(row_max(x) > 0, x / row_max(abs(x) + 1), x - row_min(x))\"\n")
	writeModule(t, dir)
	if out, code := kgen(dir, "gen"); code != 0 {
		t.Fatalf("kgen gen: exit %d\n%s", code, out)
	}
	out, code := kgen(dir, "verify")
	if code != 0 || !strings.Contains(out, "differential: Go reference vs MSL on") {
		t.Errorf("verify: exit %d\n%s", code, out)
	}
}

// TestMatmulRowSumOrder: a matmul epilogue's row_sum and row_mean (issue
// 27's L1 row norm, y = acc * row_sum(acc)) are summed by the generated Go
// reference in the kernel's order, the xor butterfly of its row passes, so
// the differential check passes bit for bit; the lane-order fold it used
// before disagreed on 33,089 of 55,704 lanes.
func TestMatmulRowSumOrder(t *testing.T) {
	if _, err := exec.LookPath("clang++-19"); err != nil {
		t.Skip("needs clang++-19 (apt-get install clang-19): the differential check runs on parity's launches")
	}
	t.Setenv("KGEN_MSLCPU_CXX", "clang++-19")
	dir := filepath.Join(t.TempDir(), "m")
	writeFile(t, filepath.Join(dir, "kgen.yaml"), "version: 1\nspecs: specs\nout:\n  msl: gen/msl\n  go: gen/kernels\nverify:\n  parity: required\n")
	writeFile(t, filepath.Join(dir, "specs/l1.yaml"), "kernel: l1\nkind: matmul\ndtypes: [f32]\nmatmul: {a: x, b: w}\noutputs:\n"+
		"  - y: acc * row_sum(acc) - row_mean(acc * acc)\nports: {metal: generated, cuda: null, rocm: null}\n")
	writeModule(t, dir)
	if out, code := kgen(dir, "gen"); code != 0 {
		t.Fatalf("kgen gen: exit %d\n%s", code, out)
	}
	out, code := kgen(dir, "verify")
	if code != 0 || !strings.Contains(out, "differential: Go reference vs MSL on") {
		t.Errorf("verify: exit %d\n%s", code, out)
	}
}
