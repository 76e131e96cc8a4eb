package parity_test

import (
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// project is one generated project: its kernels and their MSL.
type project struct {
	once    sync.Once
	kernels []*ir.Kernel
	src     map[string][]byte
	err     error
}

var (
	projectsMu sync.Mutex
	projects   = map[string]*project{}
)

// generated builds a project once per test binary, by key (the helper's
// name and the kgen.yaml path): some forty tests ask for the same few
// projects, and generating the repository's kernels (their Go package,
// formatted, included) took about a second of CPU each time. The kernels
// are shared and read only; each caller gets its own slice and map.
func generated(t *testing.T, key string, build func() ([]*ir.Kernel, map[string][]byte, error)) ([]*ir.Kernel, map[string][]byte) {
	t.Helper()
	projectsMu.Lock()
	p := projects[key]
	if p == nil {
		p = &project{}
		projects[key] = p
	}
	projectsMu.Unlock()
	p.once.Do(func() { p.kernels, p.src, p.err = build() })
	if p.err != nil {
		t.Fatal(p.err)
	}
	return slices.Clone(p.kernels), maps.Clone(p.src)
}
