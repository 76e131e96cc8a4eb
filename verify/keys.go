package verify

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/generate"
	"github.com/kgen-dev/kgen/internal/output"
	"github.com/kgen-dev/kgen/ir"
)

// The dtype-key check (the mlxcel #1053 incident: a cache key without the
// dtype made the first dtype's kernel serve every later one). Per kernel,
// three lists must agree — the spec's dtypes, the [[host_name]]
// instantiations in the .metal file on disk, and the dtype-key table in the
// generated Go on disk — every key must be the hash of the .metal bytes on
// disk (ir.Key) and equal what the specs give, and no host name or key may
// belong to two variants anywhere in the module.

// hostRE finds one instantiation: its host name and the first template
// argument after it (the storage type).
var hostRE = regexp.MustCompile(`\[\[\s*host_name\(\s*"([^"]+)"\s*\)\s*\]\](?:[^<\n]*<\s*(\w+))?`)

// mslTypes maps MSL storage types to dtype names.
var mslTypes = map[string]string{"float": "f32", "half": "f16", "bfloat": "bf16"}

// instance is one [[host_name]] in a .metal file.
type instance struct {
	Host  string
	DType string // "" when the template argument is not a known storage type
	Pos   diag.Pos
}

// instances lists the host names of a .metal file, in order.
func instances(rel string, src []byte) []instance {
	var out []instance
	for i, line := range bytes.Split(src, []byte("\n")) {
		for _, m := range hostRE.FindAllSubmatchIndex(line, -1) {
			in := instance{Host: string(line[m[2]:m[3]]), Pos: diag.Pos{Path: rel, Line: i + 1, Col: m[0] + 1}}
			if m[4] >= 0 {
				in.DType = mslTypes[string(line[m[4]:m[5]])]
			}
			out = append(out, in)
		}
	}
	return out
}

// keyCheck holds the state of the dtype-key check.
type keyCheck struct {
	r     *Report
	cfg   *config.Config
	res   *generate.Result // the regenerated outputs: the keys the specs give
	disk  *diskPackage
	hosts map[string]claim // host name → first owner
	keys  map[string]claim // key → first owner
}

// claim is one owner of a host name or key.
type claim struct {
	kernel string // kernel name, or a file path for code kgen does not own
	host   string
	pos    diag.Pos
}

func (r *Report) add(check string, pos diag.Pos, format string, args ...any) {
	r.addID(check, "", pos, format, args...)
}

// addID records a finding with its own rule id (see Finding.RuleID).
func (r *Report) addID(check, id string, pos diag.Pos, format string, args ...any) {
	r.Findings = append(r.Findings, Finding{Check: check, ID: id, Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

// dtypeKeys runs the check over the regenerated kernels and the disk.
func (r *Report) dtypeKeys(cfg *config.Config, res *generate.Result, disk *diskPackage) error {
	kernels := res.Kernels
	kc := &keyCheck{r: r, cfg: cfg, res: res, disk: disk, hosts: map[string]claim{}, keys: map[string]claim{}}
	for _, k := range kernels {
		kc.claimWanted(k)
	}
	for _, k := range kernels {
		if err := kc.kernel(k); err != nil {
			return err
		}
	}
	return kc.foreignMetal()
}

// claimWanted registers the variants the specs give, reporting collisions.
func (kc *keyCheck) claimWanted(k *ir.Kernel) {
	pos := diag.Pos{Path: k.SpecPath, Line: 1, Col: 1}
	for _, v := range k.Variants {
		kc.claim(k.Name, v.HostName, kc.wantKey(k, v), pos)
	}
}

// wantKey is the key the specs give variant v: the hash of the regenerated
// Metal source.
func (kc *keyCheck) wantKey(k *ir.Kernel, v ir.Variant) string {
	_, src := kc.res.MSL(k)
	return ir.Key(src, v.HostName, k.Math)
}

// claim registers that kernel owns host (and key, when not ""); a host name
// or key already owned by another kernel (or another host) is a collision.
func (kc *keyCheck) claim(kernel, host, key string, pos diag.Pos) {
	if prev, ok := kc.hosts[host]; ok && prev.kernel != kernel {
		kc.r.addID("keys", "keys/collision", pos, "host name %s is defined by %s and by %s (%s): one Metal library cannot hold both", host, who(kernel), who(prev.kernel), prev.pos)
	} else if !ok {
		kc.hosts[host] = claim{kernel: kernel, host: host, pos: pos}
	}
	if key == "" {
		return
	}
	if prev, ok := kc.keys[key]; ok && prev.host != host {
		kc.r.addID("keys", "keys/collision", pos, "variants %s and %s share the key %s: a pipeline cache would serve one for the other", prev.host, host, key)
	} else if !ok {
		kc.keys[key] = claim{kernel: kernel, host: host, pos: pos}
	}
}

func who(kernel string) string {
	if strings.Contains(kernel, "/") {
		return kernel
	}
	return "kernel " + kernel
}

// kernel compares one kernel's spec, .metal and Go table on disk.
func (kc *keyCheck) kernel(k *ir.Kernel) error {
	mslPath := generate.MSLPath(kc.cfg, k)
	src, err := os.ReadFile(filepath.Join(kc.cfg.Dir, filepath.FromSlash(mslPath)))
	if os.IsNotExist(err) {
		return nil // drift reports it missing
	}
	if err != nil {
		return err
	}
	// The key hashes the LF text kgen writes; a CRLF checkout of the same
	// file is the same kernel (and the Go table's raw string drops the
	// CRs too).
	src = output.NormalizeEOL(src)
	ins := instances(mslPath, src)
	kc.compareMetal(k, mslPath, ins)
	dk := kc.disk.Kernels[k.Name]
	if dk == nil {
		return nil // drift reports the missing or edited Go file
	}
	kc.compareTable(k, mslPath, src, dk)
	return nil
}

// compareMetal checks the .metal's instantiations against the spec.
func (kc *keyCheck) compareMetal(k *ir.Kernel, mslPath string, ins []instance) {
	byHost := map[string]instance{}
	for _, in := range ins {
		if _, dup := byHost[in.Host]; dup {
			kc.r.add("keys", in.Pos, "host name %s is instantiated twice in %s", in.Host, mslPath)
		}
		byHost[in.Host] = in
		kc.claim(k.Name, in.Host, "", in.Pos)
	}
	for _, v := range splitVariants(k) {
		in, ok := byHost[v.HostName]
		switch {
		case !ok:
			kc.r.add("keys", diag.Pos{Path: mslPath, Line: 1, Col: 1}, "%s: the spec has dtype %s but the file has no [[host_name(%q)]] instantiation; run `kgen gen`", k.Name, v.DType, v.HostName)
		case in.DType != "" && in.DType != v.DType.String():
			kc.r.add("keys", in.Pos, "%s instantiates the kernel for %s, not %s: the host name and the dtype disagree; run `kgen gen`", v.HostName, in.DType, v.DType)
		}
		delete(byHost, v.HostName)
	}
	for _, in := range ins {
		if _, extra := byHost[in.Host]; extra {
			kc.r.add("keys", in.Pos, "%s: no dtype of specs %s produces host name %s; run `kgen gen`", k.Name, k.SpecPath, in.Host)
		}
	}
}

// compareTable checks the Go dtype-key table on disk against the spec and
// recomputes every key from the .metal bytes on disk.
func (kc *keyCheck) compareTable(k *ir.Kernel, mslPath string, src []byte, dk *diskKernel) {
	if dk.Math != k.Math {
		kc.r.add("keys", dk.DescPos, "%s: the descriptor's math mode is %q, the spec's %q: keys hash the math mode; run `kgen gen`", k.Name, dk.Math, k.Math)
	}
	// When the embedded source and the .metal differ, that one finding says
	// it all: every key would then fail to hash one of the two.
	hash := true
	if c, ok := kc.disk.Consts[dk.Source]; !ok {
		kc.r.add("keys", dk.DescPos, "%s: the descriptor's Source %q is not a constant of the package; run `kgen gen`", k.Name, dk.Source)
	} else if c.Value != string(src) {
		kc.r.add("keys", c.Pos, "%s: the embedded source %s differs from %s, which the keys hash; run `kgen gen`", k.Name, dk.Source, mslPath)
		hash = false
	}
	kc.compareVariants(k, k.Variants, dk, mslPath, src, hash)
	for _, p := range k.Phases() {
		dp := kc.disk.Phases[p.Entry]
		if dp == nil {
			kc.r.add("keys", dk.DescPos, "%s: the split launch %s has no descriptor in the generated package; run `kgen gen`", k.Name, p.Entry)
			continue
		}
		kc.compareVariants(k, p.Variants, dp, mslPath, src, hash && dp.Source == dk.Source)
	}
}

// compareVariants checks one descriptor's dtype-key table (the kernel's,
// or one split launch's) against the variants the spec gives it.
func (kc *keyCheck) compareVariants(k *ir.Kernel, variants []ir.Variant, dk *diskKernel, mslPath string, src []byte, hash bool) {
	want := map[string]ir.Variant{}
	for _, v := range variants {
		want[v.HostName] = v
	}
	seen := map[string]bool{}
	for _, dv := range dk.Variants {
		kc.tableEntry(k, mslPath, src, dv, want, seen, hash)
	}
	for _, v := range variants {
		if !seen[v.HostName] {
			kc.r.add("keys", dk.DescPos, "%s: the spec has dtype %s but the dtype-key table has no %s entry; run `kgen gen`", k.Name, v.DType, v.HostName)
		}
	}
}

// splitVariants lists every host name a kernel's source instantiates: its
// variants, then each split launch's (a column-reducing kernel's first
// launch is its own entry point: its variants, listed once).
func splitVariants(k *ir.Kernel) []ir.Variant {
	out := append([]ir.Variant(nil), k.Variants...)
	for _, p := range k.Phases() {
		if !p.IsPhaseOwn() {
			out = append(out, p.Variants...)
		}
	}
	return out
}

// tableEntry checks one entry of the dtype-key table; hash says whether to
// recompute its key from the .metal bytes.
func (kc *keyCheck) tableEntry(k *ir.Kernel, mslPath string, src []byte, dv diskVariant, want map[string]ir.Variant, seen map[string]bool, hash bool) {
	v, ok := want[dv.HostName]
	switch {
	case seen[dv.HostName]:
		kc.r.add("keys", dv.Pos, "%s: the dtype-key table lists %s twice", k.Name, dv.HostName)
		return
	case !ok:
		kc.r.add("keys", dv.Pos, "%s: the dtype-key table has %s, which no dtype of %s produces; run `kgen gen`", k.Name, dv.HostName, k.SpecPath)
		return
	case dv.DType != v.DType.String():
		kc.r.add("keys", dv.Pos, "%s: the dtype-key table maps dtype %s to %s, the variant of %s; run `kgen gen`", k.Name, dv.DType, dv.HostName, v.DType)
	}
	seen[dv.HostName] = true
	kc.claim(k.Name, dv.HostName, dv.Key, dv.Pos)
	if !hash {
		return
	}
	switch got := ir.Key(src, dv.HostName, k.Math); {
	case dv.Key != got:
		kc.r.add("keys", dv.Pos, "%s: key %s does not hash %s on disk (recomputed %s): the table and the source drifted apart; run `kgen gen`", dv.HostName, short(dv.Key), mslPath, short(got))
	case dv.Key != kc.wantKey(k, v):
		kc.r.add("keys", dv.Pos, "%s: key %s on disk, %s from the specs; run `kgen gen`", dv.HostName, short(dv.Key), short(kc.wantKey(k, v)))
	}
}

func short(key string) string {
	if len(key) > 16 {
		return key[:16] + "…"
	}
	return key
}

// foreignMetal reports host names of kgen's kernels defined again by .metal
// files elsewhere in the module (or the config folder, without a module).
func (kc *keyCheck) foreignMetal() error {
	root := moduleOrConfigRoot(kc.cfg)
	own := filepath.Join(kc.cfg.Dir, filepath.FromSlash(kc.cfg.Out[ir.Metal]))
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable folders are not ours to judge
		}
		if d.IsDir() {
			if p != root && (skipDir(d.Name()) || p == own) {
				return filepath.SkipDir
			}
			return nil
		}
		// Files directly in the MSL out folder are kgen's (the drift check
		// judges them); with `out.msl: .` that folder is the root the walk
		// starts from, which SkipDir above never skips.
		if !d.Type().IsRegular() || path.Ext(d.Name()) != ".metal" || filepath.Dir(p) == own {
			return nil
		}
		return kc.foreignFile(p)
	})
}

func (kc *keyCheck) foreignFile(p string) error {
	src, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	rel := relTo(kc.cfg.Dir, p)
	for _, in := range instances(rel, src) {
		if prev, ok := kc.hosts[in.Host]; ok {
			kc.r.addID("keys", "keys/collision", in.Pos, "host name %s is also defined by %s (%s): one Metal library cannot hold both; rename one", in.Host, who(prev.kernel), prev.pos)
		}
	}
	return nil
}

// skipDir reports folders the module-wide scans never enter.
func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" || name == "node_modules"
}

func relTo(dir, p string) string {
	r, err := filepath.Rel(dir, p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(r)
}
