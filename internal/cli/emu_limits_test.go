//go:build unix

package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/cli"
)

// TestEmuRefusesInputsBeforeReading: a FIFO (which would block), a device
// (which never ends), a folder, a source over 8 MiB and buffers over 1 GiB
// are usage errors, refused from what the file is, before reading it and
// before anything compiles (no compiler is needed here).
func TestEmuRefusesInputsBeforeReading(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "k.metal")
	if err := os.WriteFile(src, []byte("kernel void k(device float* o [[buffer(0)]]) {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sparse := func(name string, size int64) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, size); err != nil {
			t.Fatal(err)
		}
		return path
	}
	big := sparse("big.metal", 9<<20)
	huge := sparse("huge.bin", 1<<30+1)
	base := []string{"emu", "--kernel", "k", "--grid", "1", "--threadgroup", "1"}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--file", fifo}, "--file " + fifo + ": is a FIFO, not a regular file; emu reads only regular files"},
		{[]string{"--file", "/dev/zero"}, "--file /dev/zero: is a character device, not a regular file"},
		{[]string{"--file", dir}, "is a folder, not a regular file"},
		{[]string{"--file", big}, "9437184 bytes are over 8 MiB for a source (emu's limit)"},
		{[]string{"--file", src, "--buffer", "0=" + fifo}, "--buffer 0=" + fifo + ": is a FIFO"},
		{[]string{"--file", src, "--buffer", "0=" + huge}, "1073741825 bytes are over what is left of the buffers' 1 GiB"},
		{[]string{"--file", src, "--zeros", "0=1073741824", "--zeros", "1=1"}, "--zeros 1=1: 1 bytes are over what is left of the buffers' 1 GiB"},
		{[]string{"--file", src, "--zeros", "0=4", "--threadgroup", "2048"}, "--threadgroup 2048: a threadgroup of 2048 threads (2048×1×1) exceeds Metal's 1024"},
		{[]string{"--file", src, "--zeros", "0=4", "--grid", "65536,65536,2"}, "--grid 65536,65536,2: a grid of 8589934592 threads"},
		{[]string{"--file", src, "--zeros", "0=4", "--threadgroup-memory", "0=40000"}, "--threadgroup-memory: 40000 bytes of threadgroup memory exceed Metal's 32 KiB"},
		{[]string{"--file", src, "--zeros", "0=4", "--timeout", "-1s"}, "--timeout -1s: want a positive duration"},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := make(chan int, 1)
		go func() { code <- cli.Main(append(append([]string{}, base...), c.args...), &stdout, &stderr) }()
		select {
		case got := <-code:
			if got != 2 || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, got, stderr.String(), c.want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%v: still running after 30s (blocked on the input?)", c.args)
		}
	}
}
