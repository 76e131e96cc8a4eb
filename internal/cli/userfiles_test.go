package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/internal/cli"
)

// Issue 27: kgen never replaces or deletes a user's file.

// runKgen runs kgen in-process and returns its combined output and exit
// code.
func runKgen(args ...string) (string, int) {
	var out bytes.Buffer
	code := cli.Main(args, &out, &out)
	return out.String(), code
}

const messySpec = "outputs:\n  - y: x * 2\ndtypes: [f32]\nkernel: messy\ninputs: [x]\n"

// TestFmtWritesThroughSymlink: `kgen fmt -w` on a spec that is a symlink
// formats the link's target and leaves the link a link (it used to rename
// a regular file over it, cutting it off from the file it pointed to);
// the target's mode is kept.
func TestFmtWritesThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "shared", "messy.yaml")
	link := filepath.Join(dir, "specs", "messy.yaml")
	for _, d := range []string{filepath.Dir(target), filepath.Dir(link)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(target, []byte(messySpec), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../shared/messy.yaml", link); err != nil {
		t.Fatal(err)
	}
	if out, code := runKgen("fmt", "-w", link); code != 0 {
		t.Fatalf("kgen fmt -w: exit %d\n%s", code, out)
	}
	st, err := os.Lstat(link)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink %s was replaced by a %v", link, st.Mode())
	}
	data, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "kernel: messy\n") {
		t.Errorf("the link's target was not formatted:\n%s", data)
	}
	if st, err := os.Stat(target); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the target's mode: %v, %v; want 0600", st.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(link))
	if len(entries) != 1 {
		t.Errorf("fmt left files beside the link: %v", entries)
	}
}

// TestFmtKeepsMode: -w keeps a regular spec's permission bits (an
// executable bit or a group-writable file stays so).
func TestFmtKeepsMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "messy.yaml")
	if err := os.WriteFile(p, []byte(messySpec), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o670); err != nil {
		t.Fatal(err)
	}
	if out, code := runKgen("fmt", "-w", p); code != 0 {
		t.Fatalf("kgen fmt -w: exit %d\n%s", code, out)
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o670 {
		t.Errorf("mode after fmt -w: %v, %v; want 0670", st.Mode(), err)
	}
}

// TestCUDARemovesOnlyItsOwnBinaries: `kgen cuda` removes an older binary
// of a kernel only when its manifest proves kgen cuda wrote it, unchanged
// (it used to remove every <kernel>-*.fatbin). Hand-written files named
// like a kernel's binaries, a binary kgen cuda wrote and someone changed,
// and one it did not list survive a rebuild, and it names what it kept. A
// fake nvcc writes the file after -o.
func TestCUDARemovesOnlyItsOwnBinaries(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "kgen.yaml")
	write := func(p, data string, mode os.FileMode) {
		t.Helper()
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("kgen.yaml", "version: 1\nspecs: specs\nout: {msl: gen/msl, cuda: gen/cuda, go: gen/kernels}\n", 0o644)
	spec := func(formula string) {
		write("specs/k.yaml", "kernel: k\ndtypes: [f32]\ninputs: [x]\noutputs:\n  - y: "+formula+"\nports: {metal: generated, cuda: generated, rocm: null}\n", 0o644)
		if out, code := runKgen("gen", "--config", cfgPath); code != 0 {
			t.Fatalf("kgen gen: exit %d\n%s", code, out)
		}
	}
	write("nvcc", "#!/bin/sh\nout=\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && { out=$2; shift; }; shift; done\necho \"fake $$\" > \"$out\"\n", 0o755)
	t.Setenv("KGEN_NVCC", filepath.Join(dir, "nvcc"))
	bins := filepath.Join(dir, "gen/kernels/cudabin")
	list := func() map[string]bool {
		entries, _ := os.ReadDir(bins)
		m := map[string]bool{}
		for _, e := range entries {
			m[e.Name()] = true
		}
		return m
	}
	build := func() string {
		t.Helper()
		out, code := runKgen("cuda", "--config", cfgPath)
		if code != 0 {
			t.Fatalf("kgen cuda: exit %d\n%s", code, out)
		}
		return out
	}

	spec("x * 2")
	build()
	var first string
	for name := range list() {
		if strings.HasSuffix(name, ".fatbin") {
			first = name
		}
	}
	if first == "" || !list()[".kgen-cuda.sum"] {
		t.Fatalf("no fatbin or no manifest: %v", list())
	}
	// Hand-written files named like k's binaries, one like kgen's.
	write("gen/kernels/cudabin/k-mine.fatbin", "mine", 0o644)
	write("gen/kernels/cudabin/k-0123456789abcdef.fatbin", "not kgen's", 0o644)

	spec("x * 3") // a new source: first is now an older binary of k
	out := build()
	got := list()
	if got[first] {
		t.Errorf("the older binary kgen cuda wrote, %s, was not removed: %v", first, got)
	}
	for _, name := range []string{"k-mine.fatbin", "k-0123456789abcdef.fatbin"} {
		if !got[name] {
			t.Errorf("kgen cuda removed %s, which it did not write", name)
		}
		if !strings.Contains(out, "kept gen/kernels/cudabin/"+name+": ") {
			t.Errorf("kgen cuda did not say it kept %s:\n%s", name, out)
		}
	}

	// A binary kgen cuda wrote and someone changed is no longer provably
	// kgen's: kept.
	var second string
	for name := range got {
		if strings.HasSuffix(name, ".fatbin") && name != "k-mine.fatbin" && name != "k-0123456789abcdef.fatbin" {
			second = name
		}
	}
	write("gen/kernels/cudabin/"+second, "patched by hand", 0o644)
	spec("x * 4")
	build()
	if !list()[second] {
		t.Errorf("kgen cuda removed %s, changed since it wrote it", second)
	}

	// A manifest kgen cannot read proves nothing: a positioned error, and
	// nothing is built or removed.
	write("gen/kernels/cudabin/.kgen-cuda.sum", "garbage\n", 0o644)
	before := list()
	out, code := runKgen("cuda", "--config", cfgPath)
	if code == 0 || !strings.Contains(out, "gen/kernels/cudabin/.kgen-cuda.sum:1:1: not a manifest entry") {
		t.Errorf("an unreadable manifest: exit %d\n%s", code, out)
	}
	if after := list(); len(after) != len(before) {
		t.Errorf("files changed under an unreadable manifest: %v → %v", before, after)
	}
}
