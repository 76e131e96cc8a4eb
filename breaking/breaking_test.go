package breaking

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/config"
)

const kgenYAML = "version: 1\nspecs: specs\n"

// project writes kgen.yaml and the specs (file name → text) into a new
// folder and returns its config.
func project(t *testing.T, specs map[string]string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "kgen.yaml", kgenYAML)
	for name, text := range specs {
		write(t, dir, "specs/"+name, text)
	}
	cfg, err := config.Load(filepath.Join(dir, "kgen.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func load(t *testing.T, specs map[string]string) *Specs {
	t.Helper()
	s, err := Load(project(t, specs))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// compare compares two one-spec-per-kernel trees.
func compare(t *testing.T, old, cur map[string]string) []Finding {
	t.Helper()
	return Compare(load(t, old), load(t, cur), "main")
}

func rules(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule)
	}
	return out
}

const gelu = `kernel: gelu
dtypes: [f32, f16]
inputs: [x]
outputs:
  - y: x * 2
ports:
  metal: generated
  cuda: generated
`

const swiglu = `kernel: swiglu
dtypes: [f32]
inputs: [gate, up]
params:
  - {name: alpha, type: f32}
  - {name: beta, type: f32}
outputs:
  - y: gate * up * alpha + beta
`

const norm = `kernel: norm
kind: rowwise
dtypes: [f32]
inputs:
  - x
  - {name: w, shape: [cols], dtype: f32}
outputs:
  - y: x * w / row_sum(x)
`

func TestEachChangeHasItsRule(t *testing.T) {
	for _, tc := range []struct {
		name      string
		old, cur  string
		file      string
		want      []string
		wantInMsg string
	}{
		{"dropped dtype", gelu, strings.Replace(gelu, "[f32, f16]", "[f32]", 1), "gelu.yaml",
			[]string{DTypeRemoved}, "gelu_f16"},
		{"port removed", gelu, strings.Replace(gelu, "cuda: generated", "cuda: null", 1), "gelu.yaml",
			[]string{PortRemoved}, "cuda"},
		{"reordered inputs", swiglu, strings.Replace(swiglu, "[gate, up]", "[up, gate]", 1), "swiglu.yaml",
			[]string{BindingReordered}, "[gate, up] to [up, gate]"},
		{"renamed input", gelu, strings.NewReplacer("[x]", "[v]", "x * 2", "v * 2").Replace(gelu), "gelu.yaml",
			[]string{BindingRenamed}, "input x to v"},
		{"renamed output", gelu, strings.Replace(gelu, "- y:", "- out:", 1), "gelu.yaml",
			[]string{BindingRenamed}, "output y to out"},
		{"removed input", swiglu, strings.NewReplacer("[gate, up]", "[gate]", "gate * up", "gate").Replace(swiglu), "swiglu.yaml",
			[]string{BindingRemoved}, "input up"},
		{"added param", gelu, strings.NewReplacer("outputs:", "params:\n  - {name: s, type: f32}\noutputs:", "x * 2", "x * s").Replace(gelu), "gelu.yaml",
			[]string{BindingAdded}, "param s"},
		{"reordered params", swiglu, strings.Replace(swiglu, "  - {name: alpha, type: f32}\n  - {name: beta, type: f32}",
			"  - {name: beta, type: f32}\n  - {name: alpha, type: f32}", 1), "swiglu.yaml",
			[]string{BindingReordered, ArgsLayoutChanged}, "alpha moved from offset 4 to 8"},
		{"param type", swiglu, strings.NewReplacer("{name: beta, type: f32}", "{name: beta, type: i32}", "+ beta", "+ f32(beta)").Replace(swiglu), "swiglu.yaml",
			[]string{ParamTypeChanged}, "from f32 to i32"},
		{"removed first param", swiglu, strings.NewReplacer("  - {name: alpha, type: f32}\n", "", "* alpha", "").Replace(swiglu), "swiglu.yaml",
			[]string{BindingRemoved, ArgsLayoutChanged}, "beta moved from offset 8 to 4"},
		{"shape changed", norm, strings.Replace(norm, "shape: [cols]", "shape: [rows, cols]", 1), "norm.yaml",
			[]string{ShapeChanged}, "from [cols] to [rows, cols]"},
		{"pinned dtype changed", norm, strings.Replace(norm, ", dtype: f32}", "}", 1), "norm.yaml",
			[]string{DTypeChanged}, "from f32 to T"},
		{"kind changed", gelu, strings.Replace(gelu, "dtypes:", "kind: rowwise\ndtypes:", 1), "gelu.yaml",
			[]string{KindChanged, ArgsLayoutChanged}, "n (offset 0) is gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := compare(t, map[string]string{tc.file: tc.old}, map[string]string{tc.file: tc.cur})
			if got := rules(fs); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("rules %v, want %v\n%v", got, tc.want, fs)
			}
			var msgs []string
			for _, f := range fs {
				msgs = append(msgs, f.String())
				if f.Side != InNew || f.Pos.Path != "specs/"+tc.file || f.Pos.Line == 0 {
					t.Errorf("%v: want a position in the new spec", f)
				}
			}
			if !strings.Contains(strings.Join(msgs, "\n"), tc.wantInMsg) {
				t.Errorf("findings %q do not say %q", msgs, tc.wantInMsg)
			}
		})
	}
}

func TestRenamedKernelIsRemovedWithAHint(t *testing.T) {
	renamed := strings.Replace(gelu, "kernel: gelu", "kernel: gelu_fast", 1)
	fs := compare(t, map[string]string{"gelu.yaml": gelu, "swiglu.yaml": swiglu},
		map[string]string{"gelu_fast.yaml": renamed, "swiglu.yaml": swiglu})
	if len(fs) != 1 || fs[0].Rule != KernelRemoved || fs[0].Kernel != "gelu" {
		t.Fatalf("want one kernel-removed for gelu, got %v", fs)
	}
	f := fs[0]
	if f.Side != InOld || f.Pos.String() != "specs/gelu.yaml:1:9" {
		t.Errorf("want the old spec's position, got %s (%s)", f.Pos, f.Side)
	}
	for _, want := range []string{"as it was in main", "gelu_f32, gelu_f16", "renamed to gelu_fast?"} {
		if !strings.Contains(f.Msg, want) {
			t.Errorf("%q lacks %q", f.Msg, want)
		}
	}
}

func TestRemovedKernelWithoutTwinHasNoHint(t *testing.T) {
	fs := compare(t, map[string]string{"gelu.yaml": gelu, "swiglu.yaml": swiglu}, map[string]string{"swiglu.yaml": swiglu})
	if len(fs) != 1 || strings.Contains(fs[0].Msg, "renamed") {
		t.Fatalf("want one kernel-removed without a hint, got %v", fs)
	}
}

func TestAdditionsBreakNothing(t *testing.T) {
	more := strings.NewReplacer("[f32, f16]", "[f32, f16, bf16]", "  cuda: generated\n", "  cuda: generated\n  rocm: null\n").Replace(gelu)
	fs := compare(t, map[string]string{"gelu.yaml": gelu}, map[string]string{"gelu.yaml": more, "swiglu.yaml": swiglu})
	if len(fs) != 0 {
		t.Fatalf("a new dtype and a new kernel break nothing, got %v", fs)
	}
	if fs := compare(t, map[string]string{"norm.yaml": norm}, map[string]string{"norm.yaml": norm}); len(fs) != 0 {
		t.Fatalf("the same specs break nothing, got %v", fs)
	}
}

func TestDiffNames(t *testing.T) {
	for _, tc := range []struct {
		old, cur       []string
		removed, added []string
		renamed        [][2]string
		reordered      bool
	}{
		{old: []string{"a", "b"}, cur: []string{"b", "a"}, reordered: true},
		{old: []string{"a", "b"}, cur: []string{"a", "c"}, renamed: [][2]string{{"b", "c"}}},
		{old: []string{"a", "b", "c"}, cur: []string{"a", "c"}, removed: []string{"b"}},
		{old: []string{"a", "b"}, cur: []string{"a", "c", "b"}, added: []string{"c"}},
		{old: []string{"x", "w"}, cur: []string{"w", "y"}, removed: []string{"x"}, added: []string{"y"}},
		{old: []string{"a", "b", "c"}, cur: []string{"c", "a"}, removed: []string{"b"}, reordered: true},
	} {
		d := diffNames(tc.old, tc.cur)
		if !reflect.DeepEqual(d.removed, tc.removed) || !reflect.DeepEqual(d.added, tc.added) ||
			!reflect.DeepEqual(d.renamed, tc.renamed) || d.reordered() != tc.reordered {
			t.Errorf("diffNames(%v, %v) = removed %v added %v renamed %v reordered %v", tc.old, tc.cur, d.removed, d.added, d.renamed, d.reordered())
		}
	}
}

func TestExemptions(t *testing.T) {
	old := load(t, map[string]string{"gelu.yaml": gelu, "swiglu.yaml": swiglu})
	cur := load(t, map[string]string{"gelu.yaml": strings.Replace(gelu, "[f32, f16]", "[f32]", 1),
		"swiglu.yaml": strings.Replace(swiglu, "[gate, up]", "[up, gate]", 1)})
	exempt := []config.BreakingExemption{
		{Kernel: "gelu", Rule: "dtype-removed", Reason: "f16 moved"},
		{Kernel: "swiglu", Rule: "breaking/binding-reorderd", Reason: "typo"},
		{Kernel: "norm", Reason: "excuses nothing"},
	}
	r := Check(old, cur, "main", exempt)
	if got := rules(r.Findings); !reflect.DeepEqual(got, []string{Exempt, BindingReordered}) {
		t.Fatalf("findings %v", r.Findings)
	}
	if !strings.Contains(r.Findings[0].Msg, `did you mean "binding-reordered"?`) {
		t.Errorf("unknown rule: %q", r.Findings[0].Msg)
	}
	if r.Exempt != 1 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "excuses nothing: no breaking change of kernel norm") {
		t.Errorf("exempt %d, warnings %q", r.Exempt, r.Warnings)
	}
	if want := "kgen breaking: 2 kernels compared against main: 1 breaking change, 1 bad exemption, 1 exempt"; r.Summary() != want {
		t.Errorf("summary %q, want %q", r.Summary(), want)
	}
}
