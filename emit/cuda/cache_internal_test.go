package cuda

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCheckedRemembersSuccesses: with a stand-in nvcc that counts its
// runs, an identical check runs nvcc once, and another source, other
// flags, another toolkit (nvcc rewritten) or a failure run it again.
func TestCheckedRemembersSuccesses(t *testing.T) {
	t.Setenv(CacheEnv, t.TempDir())
	root := t.TempDir()
	nvcc := filepath.Join(root, "bin", "nvcc")
	count := filepath.Join(root, "count")
	script := "#!/bin/sh\necho x >> " + count + "\ngrep -q FAIL \"$(eval echo \\${$#})\" && { echo failing; exit 1; }\necho 'ptxas info    : Compiling entry function '\\''k'\\'''\necho 'ptxas info    : Used 7 registers'\n"
	write := func() {
		if err := os.MkdirAll(filepath.Dir(nvcc), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(nvcc, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write()
	runs := func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "x")
	}
	ctx := context.Background()
	want := 0
	step := func(what string, src string, flags []string, ran bool, fails bool) {
		t.Helper()
		use, err := Resources(ctx, nvcc, "k", []byte(src), flags...)
		if fails != (err != nil) {
			t.Fatalf("%s: err = %v", what, err)
		}
		if !fails && (len(use) != 1 || use[0].Registers != 7) {
			t.Fatalf("%s: usage %+v", what, use)
		}
		if ran {
			want++
		}
		if got := runs(); got != want {
			t.Fatalf("%s: nvcc ran %d times, want %d", what, got, want)
		}
	}
	step("first", "a", nil, true, false)
	step("same", "a", nil, false, false)
	step("another source", "b", nil, true, false)
	step("other flags", "a", []string{"-DX"}, true, false)
	step("failure", "FAIL", nil, true, true)
	step("failure again", "FAIL", nil, true, true)
	if err := Check(ctx, nvcc, "k", []byte("a")); err != nil {
		t.Fatal(err)
	}
	want++ // a check is not a ptxas report
	if got := runs(); got != want {
		t.Fatalf("check: nvcc ran %d times, want %d", got, want)
	}
	time.Sleep(10 * time.Millisecond)
	script += "# another release\n"
	write()
	step("another toolkit", "a", nil, true, false)
}
