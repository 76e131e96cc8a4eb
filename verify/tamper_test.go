package verify_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// Issue 27: `kgen verify` compiles and runs only what kgen generated. A
// generated file with a payload appended (a static initializer calling
// system(), the reproducer) is reported as drift, verify fails, and the
// payload never reaches a compiler, so it never runs. Each case plants the
// payload in one kernel of two and checks that the other kernel is still
// compiled, so that the test cannot pass by compiling nothing.

// tamperProject writes a project of two kernels, both with a CUDA port,
// runs `kgen gen`, and appends to tampered's generated file ext (".metal"
// or ".cu") a payload that creates the returned marker file when run.
func tamperProject(t *testing.T, ext string) (dir, marker string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "m")
	marker = filepath.Join(t.TempDir(), "pwned")
	writeFile(t, filepath.Join(dir, "kgen.yaml"), "version: 1\nspecs: specs\nout:\n  msl: gen/msl\n  cuda: gen/cuda\n  go: gen/kernels\nverify:\n  parity: required\n")
	for _, name := range []string{"clean", "tampered"} {
		writeFile(t, filepath.Join(dir, "specs", name+".yaml"), "kernel: "+name+"\ndtypes: [f32]\ninputs: [x]\noutputs:\n  - y: x * 2 + 1\n"+
			"ports: {metal: generated, cuda: generated, rocm: null}\n")
	}
	if out, code := kgen(dir, "gen"); code != 0 {
		t.Fatalf("kgen gen: exit %d\n%s", code, out)
	}
	p := filepath.Join(dir, "gen", map[string]string{".metal": "msl", ".cu": "cuda"}[ext], "tampered"+ext)
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("extern \"C\" int system(const char*); static int p = system(\"touch " + marker + "\");\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir, marker
}

// fakeTool writes an executable script that stands in for a compiler: it
// answers --version like clang, creates every -o output (empty), logs the
// kernels it was given, and, where a source it was given (a file argument,
// or stdin for "-") holds marker's path, creates marker, as running the
// payload would.
func fakeTool(t *testing.T, marker string) (tool, log string) {
	t.Helper()
	dir := t.TempDir()
	tool, log = filepath.Join(dir, "fake-cc"), filepath.Join(dir, "log")
	script := `#!/bin/sh
case "$1" in --version) echo "clang version 19.1.0 (fake)"; exit 0;; esac
prev=
for a; do
  src=
  if [ "$a" = - ]; then cat > "` + dir + `/stdin"; src="` + dir + `/stdin"
  elif [ -f "$a" ]; then src=$a; fi
  if [ -n "$src" ]; then
    grep -q '` + marker + `' "$src" && : > '` + marker + `'
    grep -o -w 'clean\|tampered' "$src" | sort -u >> "` + log + `"
  fi
  [ "$prev" = -o ] && : > "$a"
  prev=$a
done
exit 0
`
	if err := os.WriteFile(tool, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return tool, log
}

// checkTampered asserts verify's outcome on a project whose path was
// tampered with: it fails with a hand-edited finding at that path, and
// the marker does not exist.
func checkTampered(t *testing.T, out string, code int, path, marker string) {
	t.Helper()
	if code == 0 {
		t.Errorf("verify passed over a tampered %s:\n%s", path, out)
	}
	if !strings.Contains(out, path+":1:1: hand-edited:") {
		t.Errorf("no hand-edited finding at %s:\n%s", path, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("verify compiled and ran the tampered %s: the payload created %s\n%s", path, marker, out)
	}
}

// TestVerifyNeverRunsTamperedMetal: the strict check and parity (host C++
// compiled from the .metal and run) never see a drifted .metal. With a
// fake compiler it runs everywhere; with clang-19 it also runs the real
// harness, where the payload would execute.
func TestVerifyNeverRunsTamperedMetal(t *testing.T) {
	t.Run("fake-compiler", func(t *testing.T) {
		dir, marker := tamperProject(t, ".metal")
		cc, log := fakeTool(t, marker)
		t.Setenv("KGEN_MSLCPU_CXX", cc)
		t.Setenv("KGEN_MSLCPU_CACHE", t.TempDir())
		t.Setenv("KGEN_NVCC", "/nonexistent/nvcc") // the CUDA check is the other test's
		out, code := kgen(dir, "verify")
		checkTampered(t, out, code, "gen/msl/tampered.metal", marker)
		raw, _ := os.ReadFile(log)
		if !strings.Contains(string(raw), "clean") {
			t.Errorf("the untouched kernel was not compiled either (compiler log %q):\n%s", raw, out)
		}
		if strings.Contains(string(raw), "tampered") {
			t.Errorf("the tampered kernel reached the compiler (compiler log %q)", raw)
		}
		if !strings.Contains(out, "1 .metal file not compiled or run: drifted on disk") {
			t.Errorf("no note that parity skipped the drifted file:\n%s", out)
		}
	})
	t.Run("clang", func(t *testing.T) {
		if _, err := exec.LookPath("clang++-19"); err != nil {
			t.Skip("needs clang++-19 (apt-get install clang-19)")
		}
		t.Setenv("KGEN_MSLCPU_CXX", "clang++-19")
		if _, err := mslcpu.Compiler(); err != nil {
			t.Skip(err)
		}
		t.Setenv("KGEN_NVCC", "/nonexistent/nvcc")
		dir, marker := tamperProject(t, ".metal")
		out, code := kgen(dir, "verify")
		checkTampered(t, out, code, "gen/msl/tampered.metal", marker)
		if !strings.Contains(out, "parity clean_f32: 0/") {
			t.Errorf("the untouched kernel's parity did not run:\n%s", out)
		}
	})
}

// TestVerifyNeverCompilesTamperedCUDA: the CUDA compile check gives nvcc
// the .cu bytes kgen regenerates, never the drifted file on disk.
func TestVerifyNeverCompilesTamperedCUDA(t *testing.T) {
	dir, marker := tamperProject(t, ".cu")
	nvcc, log := fakeTool(t, marker)
	t.Setenv("KGEN_NVCC", nvcc)
	t.Setenv("KGEN_CUDA_CACHE", t.TempDir()) // the check must run, not be remembered
	out, code := kgen(dir, "verify", "--parity", "off")
	checkTampered(t, out, code, "gen/cuda/tampered.cu", marker)
	raw, _ := os.ReadFile(log)
	if !strings.Contains(string(raw), "clean") || !strings.Contains(out, "cuda compile: 2 kernel(s) ok") {
		t.Errorf("the CUDA compile check did not run (nvcc log %q):\n%s", raw, out)
	}
}

// TestVerifyNeverRunsPlantedGo: the differential check builds and runs a
// driver over the generated Go reference; only the bytes kgen generates go
// into it. A Go file planted in the driver's folder inside the generated
// package (compiled into the driver, its init run) and a stray in the
// package itself never run.
func TestVerifyNeverRunsPlantedGo(t *testing.T) {
	if _, err := exec.LookPath("clang++-19"); err != nil {
		t.Skip("needs clang++-19 (apt-get install clang-19): the differential check runs on parity's launches")
	}
	t.Setenv("KGEN_MSLCPU_CXX", "clang++-19")
	dir := project(t, "", false)
	marker := filepath.Join(t.TempDir(), "pwned")
	payload := "import \"os\"\n\nfunc init() { _ = os.WriteFile(\"" + marker + "\", nil, 0o644) }\n"
	writeFile(t, filepath.Join(dir, "gen/kernels/kgen_goref_driver/planted.go"), "package main\n\n"+payload)
	out, _ := kgen(dir, "verify", "--parity", "on")
	if !strings.Contains(out, "differential: Go reference vs MSL on") {
		t.Fatalf("the differential check did not run:\n%s", out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("verify ran a Go file planted in the generated package's folder:\n%s", out)
	}
}
