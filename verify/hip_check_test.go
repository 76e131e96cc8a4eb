package verify

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/emit/hip"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/ir"
)

// TestHIPPorts runs the rocm check on the built-in silu with a ROCm port
// (until generate writes .hip files, the source comes from cfam.Emit): the
// source compiles for every target; a source missing, or one whose entry
// point is renamed, is a finding.
func TestHIPPorts(t *testing.T) {
	if _, err := hip.Clang(); err != nil {
		t.Skip(err)
	}
	cfg, err := config.Load(filepath.Join("..", config.FileName))
	if err != nil {
		t.Fatal(err)
	}
	ks, err := generate.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var k *ir.Kernel
	for _, c := range ks {
		if c.Name == "silu" {
			c2 := *c
			k = &c2
		}
	}
	if k == nil {
		t.Fatal("no built-in silu")
	}
	k.Ports[ir.ROCm] = true
	res, err := generate.Emit(cfg, []*ir.Kernel{k})
	if err != nil {
		t.Fatal(err)
	}
	// with replaces the file at p (nil data: removes it).
	with := func(p string, data []byte) []generate.File {
		var out []generate.File
		for _, f := range res.Files {
			if f.Path == p {
				if data == nil {
					continue
				}
				f.Data = data
			}
			out = append(out, f)
		}
		return out
	}
	const hipPath, goPath = "gen/hip/silu.hip", "gen/kernels/silu_rocm.go"
	var src, mod []byte
	for _, f := range res.Files {
		switch f.Path {
		case hipPath:
			src = f.Data
		case goPath:
			mod = f.Data
		}
	}
	// renamed has a .hip whose f16 entry point lost its name, and a Go
	// module naming that source's hash: only the compile check can tell.
	bad := []byte(strings.Replace(string(src), " silu_f16(", " silu_half(", 1))
	renamed := with(hipPath, bad)
	for i, f := range renamed {
		if f.Path == goPath {
			renamed[i].Data = []byte(strings.ReplaceAll(string(mod), hip.Hash(src), hip.Hash(bad)))
		}
	}
	for _, c := range []struct {
		name  string
		files []generate.File
		want  string
	}{
		{"ok", res.Files, ""},
		{"missing", with(hipPath, nil), "no .hip source"},
		{"stale module", with(goPath, []byte(strings.Replace(string(mod), hip.Hash(src), "0000000000000000", -1))), "does not name the hash"},
		{"renamed entry", renamed, "no kernel silu_f16"},
	} {
		r := &Report{}
		r.hipPorts(context.Background(), &generate.Result{Config: cfg, Kernels: []*ir.Kernel{k}, Files: c.files})
		var got []string
		for _, f := range r.Findings {
			got = append(got, f.Msg)
		}
		switch {
		case c.want == "" && (len(got) > 0 || !strings.Contains(strings.Join(r.Notes, "\n"), "rocm compile: 1 kernel(s) ok for gfx942, gfx1100")):
			t.Errorf("%s: findings %q, notes %q; want none and the compile note", c.name, got, r.Notes)
		case c.want != "" && !strings.Contains(strings.Join(got, "\n"), c.want):
			t.Errorf("%s: findings %q; want one with %q", c.name, got, c.want)
		}
	}
}
