package lsp

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kgen-dev/kgen/backward"
	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/internal/usertext"
	"github.com/kgen-dev/kgen/internal/yamlnode"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/spec"
)

// analysis is what the server knows about one version of one buffer: the
// checks gen runs on it, and the spec and names they produced.
type analysis struct {
	uri   string         // the document's URI as the client spelled it
	file  string         // absolute path; "" for a buffer that is not a file
	rel   string         // the path diagnostics name it by: relative to the config folder, else its base name
	cfg   *config.Config // nil outside any config
	lines []string       // the text's lines, without line ends
	spec  *spec.Spec
	// kernel is the kernel as far as ir lays it out (bindings, args
	// struct), errors or not; symbols its names (ir.Scope). built is the
	// finished kernel, for the launch, only when the spec has no error.
	kernel  *ir.Kernel
	symbols []ir.Symbol
	built   *ir.Kernel
	diags   []diag.Diagnostic // this file's, sorted
	notSpec bool              // a YAML file that is not a spec: no feature applies
}

// env is what an analysis reads besides its buffer; the zero value reads
// nothing else (no other buffers, no cross-file check).
type env struct {
	// open reads an open buffer by file path (server.openText).
	open func(file string) (string, bool)
	// disk caches the other specs read from disk; nil: no cross-file check.
	disk *diskSpecs
	// config is `kgen --config PATH lsp`'s config for every spec, "" to
	// find each spec's own.
	config string
}

// analyze runs gen's checks of one spec over text: the YAML and field
// checks (spec.Parse), the formulas and layout (ir.Build), and, inside a
// config's specs folder, the kernel names across files (spec.CheckUnique,
// against the other specs' open buffers, else their files). Only this
// file's diagnostics are kept.
func analyze(file, text string, e env) *analysis {
	a := &analysis{file: file, lines: strings.Split(text, "\n")}
	for i, l := range a.lines {
		a.lines[i] = strings.TrimSuffix(l, "\r")
	}
	var diags diag.List
	a.locate(e.config, &diags)
	if a.notSpec = !a.isSpec(); a.notSpec {
		return a // an editor sends every YAML file; gen reads only specs
	}
	if _, what, bad := usertext.Problem(a.rel, false); bad {
		diags.Addf(diag.Pos{Path: a.rel}, "the spec file's name contains %s; rename the file", what)
	}
	a.spec = spec.Parse(a.rel, []byte(text), &diags)
	if a.spec != nil {
		// The derived backward kernel's problems belong to this file too,
		// its name clashing with another spec's kernel included.
		specs := []*spec.Spec{a.spec}
		if a.inSpecs() && e.disk != nil {
			all := a.withOthers(e)
			spec.CheckUnique(all, &diags)
			specs = backward.DeriveFor(a.spec, all, &diags)
		} else {
			specs = backward.Derive(specs, &diags)
		}
		if ks := ir.Build(specs, &diags); len(ks) >= 1 {
			a.built = ks[0]
		}
		a.kernel, a.symbols = ir.Scope(a.spec)
	}
	for _, d := range diags.Sorted() {
		if d.Pos.Path == a.rel {
			a.diags = append(a.diags, d)
		}
	}
	return a
}

// locate finds the buffer's kgen.yaml as the other commands do, walking up
// from its folder, and names the file relative to it. A spec outside any
// config still gets every spec-level check; a config that does not load
// is reported on the spec's first line, since gen would stop at it.
func (a *analysis) locate(p string, diags *diag.List) {
	a.rel = filepath.Base(a.file)
	if a.file == "" {
		a.rel = "untitled.yaml"
		return
	}
	if p == "" {
		var err error
		if p, err = config.Find(filepath.Dir(a.file)); err != nil {
			return
		}
	}
	if rel, err := filepath.Rel(filepath.Dir(p), a.file); err == nil {
		a.rel = filepath.ToSlash(rel)
	}
	cfg, err := config.Load(p)
	if err != nil {
		msg := err.Error()
		if de, ok := diag.AsError(err); ok {
			msg = de.Diagnostics[0].String()
		}
		diags.Addf(diag.Pos{Path: a.rel, Line: 1, Col: 1}, "kgen.yaml (%s) does not load, so gen stops at it: %s", p, msg)
		return
	}
	a.cfg = cfg
}

// isSpec reports whether the buffer is a spec gen reads: a YAML file in
// its config's specs folder (not kgen.yaml, not a CI workflow beside it),
// or, outside any config, a file with a top-level kernel key. Editors
// hand the server every YAML file, and only specs get kgen's checks.
func (a *analysis) isSpec() bool {
	if filepath.Base(a.file) == config.FileName {
		return false
	}
	if a.cfg != nil {
		return a.inSpecs()
	}
	for _, l := range a.lines {
		if strings.HasPrefix(l, "kernel:") {
			return true
		}
	}
	return false
}

// configPath is the config the analysis read, "" for none.
func (a *analysis) configPath() string {
	if a.cfg == nil {
		return ""
	}
	return a.cfg.Path
}

// inSpecs reports whether the file is one of the config's specs.
func (a *analysis) inSpecs() bool {
	if a.cfg == nil {
		return false
	}
	dir := strings.TrimSuffix(a.cfg.Specs, "/")
	return dir == "." || strings.HasPrefix(a.rel, dir+"/")
}

// withOthers is this spec and the config's other specs, in path order, as
// gen's LoadDir would check their names.
func (a *analysis) withOthers(e env) []*spec.Spec {
	all := []*spec.Spec{a.spec}
	files, err := spec.Files(a.cfg.Dir, a.cfg.Specs)
	if err != nil {
		return all
	}
	for _, rel := range files {
		if rel == a.rel {
			continue
		}
		if s := e.disk.spec(a.cfg.Dir, rel, e.open); s != nil {
			all = append(all, s)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Path < all[j].Path })
	return all
}

// diskSpecs caches the other specs of a config by file size and time, so
// that a keystroke in one spec does not parse every other.
type diskSpecs struct {
	mu sync.Mutex
	m  map[string]diskSpec
}

type diskSpec struct {
	size int64
	mod  time.Time
	spec *spec.Spec
}

func newDiskSpecs() *diskSpecs { return &diskSpecs{m: map[string]diskSpec{}} }

// spec reads another spec of the config for its kernel name, from its open
// buffer if any; nil when it cannot be read (gen reports that there).
func (c *diskSpecs) spec(dir, rel string, open func(string) (string, bool)) *spec.Spec {
	full := filepath.Join(dir, filepath.FromSlash(rel))
	var junk diag.List
	if open != nil {
		if text, ok := open(full); ok {
			return spec.Parse(rel, []byte(text), &junk)
		}
	}
	st, err := os.Stat(full)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[full]; ok && e.size == st.Size() && e.mod.Equal(st.ModTime()) {
		return e.spec
	}
	src, err := yamlnode.ReadFile(full)
	if err != nil {
		return nil
	}
	s := spec.Parse(rel, src, &junk)
	c.m[full] = diskSpec{size: st.Size(), mod: st.ModTime(), spec: s}
	return s
}

// lspDiagnostics converts the diagnostics, each ranged from its position to
// the end of the token there.
func (a *analysis) lspDiagnostics() []Diagnostic {
	out := []Diagnostic{}
	for _, d := range a.diags {
		out = append(out, Diagnostic{Range: a.tokenRange(d.Pos), Severity: severityError, Source: "kgen", Message: d.Msg})
	}
	return out
}

// describePos is a declaration's position for hover text.
func describePos(p diag.Pos) string {
	if p.Line == 0 {
		return ""
	}
	return fmt.Sprintf("%s:%d:%d", p.Path, p.Line, p.Col)
}
