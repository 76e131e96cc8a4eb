package verify

import (
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/ir"
)

// The ports check: every port a spec declares `generated` has its slot in
// the port table on disk, its launchers (Run and Encode, choosing the port
// through the table's Select and nothing else) and its source file; a slot
// the spec does not declare is an error too. That a spec cannot declare a
// port kgen cannot generate is a spec error, reported by the spec check.

// sourceExts is the source file each backend's port is generated from.
var sourceExts = map[string]string{"metal": ".metal", "cuda": ".cu", "rocm": ".hip"}

// ports runs the check over the regenerated kernels and the disk. A
// missing source file is reported once, by drift.
func (r *Report) ports(cfg *config.Config, res *generate.Result, disk *diskPackage) {
	byBase := map[string]string{}
	for _, f := range res.Files {
		byBase[path.Base(f.Path)] = f.Path
	}
	for _, k := range res.Kernels {
		dk := disk.Kernels[k.Name]
		if dk == nil {
			continue // drift reports the missing or edited file
		}
		r.portSlots(k, dk)
		r.launchers(k, dk)
		r.portSources(cfg, k, byBase)
	}
}

func (r *Report) portSlots(k *ir.Kernel, dk *diskKernel) {
	if dk.Ports == nil {
		r.add("ports", dk.DescPos, "%s: no port table names this descriptor; run `kgen gen`", k.Name)
		return
	}
	if len(dk.Ports.Slots) != int(ir.NumBackends) {
		r.add("ports", dk.Ports.Pos, "%s: the port table has %d slots, want one per backend (%d); run `kgen gen`", k.Name, len(dk.Ports.Slots), ir.NumBackends)
		return
	}
	for b := ir.Backend(0); b < ir.NumBackends; b++ {
		slot := dk.Ports.Slots[b]
		switch want := k.Ports[b]; {
		case want && slot.Nil:
			r.add("ports", slot.Pos, "%s: the spec declares %s: generated, but the port table has no %s port; run `kgen gen`", k.Name, b, b)
		case !want && !slot.Nil:
			r.add("ports", slot.Pos, "%s: the %s slot holds %s, but the spec says %s: null; run `kgen gen`", k.Name, b, slot.Text, b)
		case want && !strings.Contains(strings.ToLower(slot.Text), b.String()):
			r.add("ports", slot.Pos, "%s: the %s slot holds %s, not a %s port; run `kgen gen`", k.Name, b, slot.Text, b)
		}
	}
}

// launchers checks that the generated Run, Encode and Enqueue exist and
// reach their port only through the table's Select (Enqueue: the table's
// Enqueue): a launcher reverted by hand to call a backend directly fails
// here even if its digest line was forged.
func (r *Report) launchers(k *ir.Kernel, dk *diskKernel) {
	for _, name := range []string{"Run", "Encode", "Enqueue"} {
		l := dk.Launch[name]
		switch {
		case l == nil:
			r.add("ports", dk.DescPos, "%s: the launcher %s.%s is missing; run `kgen gen`", k.Name, typeName(dk), name)
		case l.Direct != "":
			r.add("ports", l.Pos, "%s: %s.%s reaches a port through %s instead of the port table's Select (edited by hand?); run `kgen gen`", k.Name, typeName(dk), name, l.Direct)
		case !l.Selects && dk.Ports != nil:
			r.add("ports", l.Pos, "%s: %s.%s does not choose its port through %s.Select (edited by hand?); run `kgen gen`", k.Name, typeName(dk), name, dk.Ports.Var)
		}
	}
}

func typeName(dk *diskKernel) string {
	if dk.Type == "" {
		return "the kernel type"
	}
	return dk.Type
}

// portSources checks that every generated port has its source on disk;
// wanted maps the base names of the wanted files to their paths.
func (r *Report) portSources(cfg *config.Config, k *ir.Kernel, wanted map[string]string) {
	for b := ir.Backend(0); b < ir.NumBackends; b++ {
		if !k.Ports[b] {
			continue
		}
		src := wanted[k.Name+sourceExts[b.String()]]
		if src == "" {
			r.add("ports", diag.Pos{Path: k.SpecPath, Line: 1, Col: 1}, "%s: the spec declares %s: generated, but kgen produced no %s source for it", k.Name, b, sourceExts[b.String()])
			continue
		}
		if _, err := os.Stat(filepath.Join(cfg.Dir, filepath.FromSlash(src))); err != nil && !r.reported("drift", src) {
			r.add("ports", diag.Pos{Path: k.SpecPath, Line: 1, Col: 1}, "%s: its %s port has no source on disk (%s); run `kgen gen`", k.Name, b, src)
		}
	}
}

// reported reports whether a finding of check is already at path (a
// missing source is drift's finding; one line per file is enough).
func (r *Report) reported(check, path string) bool {
	for _, f := range r.Findings {
		if f.Check == check && f.Pos.Path == path {
			return true
		}
	}
	return false
}
