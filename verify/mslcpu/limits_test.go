//go:build unix

package mslcpu

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/kgen-dev/kgen/backend"
)

// TestLimitsMatchBackendTable keeps the harness's Metal limits equal to
// the generator's.
func TestLimitsMatchBackendTable(t *testing.T) {
	m := backend.Table[backend.Metal]
	if m.ThreadgroupBytes != ThreadgroupMemoryLimit || m.Threads != MaxThreadsPerGroup || m.Buffers != MaxBindings {
		t.Errorf("backend.Table's Metal limits %+v; mslcpu has %d bytes, %d threads, %d bindings",
			m, ThreadgroupMemoryLimit, MaxThreadsPerGroup, MaxBindings)
	}
}

// hugeBuffer maps n bytes it never touches: Validate reads only lengths.
func hugeBuffer(t *testing.T, n int) []byte {
	t.Helper()
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		t.Skipf("mmap %d bytes: %v", n, err)
	}
	t.Cleanup(func() { syscall.Munmap(b) })
	return b
}

// TestValidateRefusesOversizeLaunches: what Metal refuses and what is over
// the harness's limits fails before anything compiles, naming the field.
func TestValidateRefusesOversizeLaunches(t *testing.T) {
	ok := Launch{Source: []byte("kernel"), Buffers: [][]byte{make([]byte, 4)}, Grid: [3]uint32{64, 1, 1}, Threadgroup: [3]uint32{64, 1, 1}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a small launch: %v", err)
	}
	max32 := ^uint32(0)
	cases := []struct {
		name, field, want string
		edit              func(*Launch)
	}{
		{"2048 threads per group", "Threadgroup", "a threadgroup of 2048 threads (2048×1×1) exceeds Metal's 1024", func(l *Launch) { l.Threadgroup = [3]uint32{2048, 1, 1} }},
		{"32×64 threads per group", "Threadgroup", "2048 threads (32×64×1)", func(l *Launch) { l.Threadgroup = [3]uint32{32, 64, 1} }},
		{"a zero axis", "Threadgroup", "Threadgroup[2] is 0", func(l *Launch) { l.Threadgroup[2] = 0 }},
		{"2^96 threads", "Grid", "a grid of 79228162458924105385300197375 threads", func(l *Launch) { l.Grid = [3]uint32{max32, max32, max32} }},
		{"2^32+ threads", "Grid", "exceeds the harness's 4294967296 (2^32)", func(l *Launch) { l.Grid = [3]uint32{1 << 16, 1 << 16, 2} }},
		{"64 KiB of threadgroup memory", "ThreadgroupMemory", "65536 bytes of threadgroup memory exceed Metal's 32 KiB", func(l *Launch) { l.ThreadgroupMemory = []uint32{32768, 32768} }},
		{"32 buffers", "Buffers", "32 buffers exceed Metal's 31", func(l *Launch) { l.Buffers = make([][]byte, 32) }},
		{"over 1 GiB of buffers", "Buffers", "over the harness's 1 GiB", func(l *Launch) { l.Buffers = [][]byte{hugeBuffer(t, MaxBufferBytes+1)} }},
		{"an alias of itself", "Aliases", "both must be distinct", func(l *Launch) { l.Aliases = map[int]int{0: 0} }},
		{"an oversize source", "Source", "over the harness's 8 MiB", func(l *Launch) { l.Source = make([]byte, MaxSourceBytes+1) }},
	}
	for _, c := range cases {
		l := ok
		c.edit(&l)
		err := l.Validate()
		var le *LaunchError
		if !errors.As(err, &le) || le.Field != c.field || !strings.Contains(le.Message, c.want) {
			t.Errorf("%s: got %v, want a LaunchError for %s saying %q", c.name, err, c.field, c.want)
		}
	}
	edge := ok
	edge.Grid = [3]uint32{1 << 16, 1 << 16, 1}
	edge.ThreadgroupMemory = []uint32{ThreadgroupMemoryLimit}
	edge.Threadgroup = [3]uint32{8, 8, 16}
	if err := edge.Validate(); err != nil {
		t.Errorf("a launch exactly at every limit: %v", err)
	}
}
