package verify_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/internal/output"
)

// diskCase mutates a freshly generated project (the shared specs: gelu in
// f32 and f16, twice in f32; no go.mod) and expects these exact finding
// lines among verify's output, with exit code 1. The unmutated project
// passes (TestDiskClean), so each case is a mutation that flips the result.
type diskCase struct {
	name  string
	edits []edit
	setup func(t *testing.T, dir string) // more changes, after the edits
	forge []string                       // files whose digest line is recomputed last
	want  []string
}

const (
	geluMetal  = "gen/msl/gelu.metal"
	geluKernel = "gen/kernels/gelu_kernel.go"
	twiceGo    = "gen/kernels/twice_kernel.go"
	rerun      = "; run `kgen gen`"
)

var diskCases = []diskCase{
	{name: "instantiation of the wrong dtype",
		edits: []edit{{geluMetal, "decltype(gelu<half>) gelu<half>;", "decltype(gelu<float>) gelu<float>;"}},
		forge: []string{geluMetal},
		want: []string{
			"gen/kernels/gelu_msl.go:*: gelu: the embedded source geluMSL differs from gen/msl/gelu.metal, which the keys hash" + rerun,
			"gen/msl/gelu.metal:*: stale: the specs changed since it was generated; run `kgen gen`",
			"gen/msl/gelu.metal:*: gelu_f16 instantiates the kernel for f32, not f16: the host name and the dtype disagree" + rerun,
		}},
	{name: "instantiation missing",
		edits: []edit{{geluMetal, "template [[host_name(\"gelu_f16\")]] [[kernel]] decltype(gelu<half>) gelu<half>;\n", ""}},
		want: []string{
			"gen/msl/gelu.metal:*: gelu: the spec has dtype f16 but the file has no [[host_name(\"gelu_f16\")]] instantiation" + rerun,
			"gen/msl/gelu.metal:*: hand-edited: the file differs from what kgen generated; `kgen gen` will not overwrite it: move the change into the spec, delete the file and run `kgen gen`",
		}},
	{name: "instantiation nobody asked for",
		edits: []edit{{geluMetal, "decltype(gelu<half>) gelu<half>;\n", "decltype(gelu<half>) gelu<half>;\ntemplate [[host_name(\"gelu_bf16\")]] [[kernel]] decltype(gelu<bfloat>) gelu<bfloat>;\n"}},
		want: []string{
			"gen/msl/gelu.metal:*: gelu: no dtype of specs specs/gelu.yaml produces host name gelu_bf16" + rerun,
		}},
	{name: "keys swapped in the table",
		edits: []edit{
			{geluKernel, `HostName: "gelu_f32", Key: "`, `HostName: "gelu_f32", Key: "X`},
			{geluKernel, `HostName: "gelu_f16", Key: "`, `HostName: "gelu_f16", Key: "Y`},
		},
		forge: []string{geluKernel},
		want: []string{
			"gen/kernels/gelu_kernel.go:*: gelu_f32: key X",
			" does not hash gen/msl/gelu.metal on disk (recomputed ",
			"gen/kernels/gelu_kernel.go:*: gelu_f16: key Y",
		}},
	{name: "key shared by two kernels",
		setup: func(t *testing.T, dir string) {
			gelu := keyOf(t, filepath.Join(dir, geluKernel), "gelu_f32")
			twice := keyOf(t, filepath.Join(dir, twiceGo), "twice_f32")
			applyEdits(t, dir, []edit{{twiceGo, twice, gelu}})
		},
		want: []string{
			"gen/kernels/twice_kernel.go:*: variants gelu_f32 and twice_f32 share the key ",
		}},
	{name: "table entry missing and mislabelled",
		edits: []edit{
			{geluKernel, "{DType: kgenrt.F32, HostName: \"gelu_f32\"", "{DType: kgenrt.F16, HostName: \"gelu_f32\""},
			{geluKernel, "\t\t{DType: kgenrt.F16, HostName: \"gelu_f16\"", "\t\t// {DType: kgenrt.F16, HostName: \"gelu_f16\""},
		},
		want: []string{
			"gen/kernels/gelu_kernel.go:*: gelu: the dtype-key table maps dtype f16 to gelu_f32, the variant of f32" + rerun,
			"gen/kernels/gelu_kernel.go:*: gelu: the spec has dtype f16 but the dtype-key table has no gelu_f16 entry" + rerun,
		}},
	{name: "host name defined again elsewhere",
		setup: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "shaders/custom.metal"), "// A hand-written kernel that happens to reuse a kgen host name.\n#include <metal_stdlib>\n"+
				"template [[host_name(\"gelu_f32\")]] [[kernel]] decltype(mine<float>) mine<float>;\n")
		},
		want: []string{
			"shaders/custom.metal:3:10: host name gelu_f32 is also defined by kernel gelu (specs/gelu.yaml:1:1): one Metal library cannot hold both; rename one",
		}},
	{name: "a dtype added without kgen gen",
		edits: []edit{{"specs/gelu.yaml", "dtypes: [f32, f16]", "dtypes: [f32, f16, bf16]"}},
		want: []string{
			"gen/msl/gelu.metal:*: gelu: the spec has dtype bf16 but the file has no [[host_name(\"gelu_bf16\")]] instantiation" + rerun,
			"gen/kernels/gelu_kernel.go:*: gelu: the spec has dtype bf16 but the dtype-key table has no gelu_bf16 entry" + rerun,
			"gen/kernels/gelu_kernel.go:*: gelu_f32: key ",
			"gen/msl/gelu.metal:*: stale: the specs changed since it was generated; run `kgen gen`",
		}},
	{name: "launcher reverted by hand in the generated code",
		edits: []edit{{geluKernel, "port, err := geluPorts.Select(b)\n\tif err != nil {\n\t\treturn err\n\t}\n\treturn port.Run(&call)", "return kgenrt.MetalPort(&geluKernel).Run(&call)"}},
		forge: []string{geluKernel},
		want: []string{
			"gen/kernels/gelu_kernel.go:*: stale: the specs changed since it was generated; run `kgen gen`",
			"gen/kernels/gelu_kernel.go:*: gelu: GeluKernel.Run reaches a port through kgenrt.MetalPort instead of the port table's Select (edited by hand?)" + rerun,
		}},
	{name: "Enqueue reverted by hand in the generated code",
		edits: []edit{{geluKernel, "return geluPorts.Enqueue(stream, &call)", "return geluPorts.Ports[1].Enqueue(stream, &call)"}},
		forge: []string{geluKernel},
		want: []string{
			"gen/kernels/gelu_kernel.go:*: stale: the specs changed since it was generated; run `kgen gen`",
			"gen/kernels/gelu_kernel.go:*: gelu: GeluKernel.Enqueue reaches a port through geluPorts.Ports instead of the port table's Select (edited by hand?)" + rerun,
		}},
	{name: "port slot emptied",
		edits: []edit{{geluKernel, "kgenrt.MetalPort(&geluKernel), // metal: generated", "nil,                           // metal: generated"}},
		want: []string{
			"gen/kernels/gelu_kernel.go:*: gelu: the spec declares metal: generated, but the port table has no metal port" + rerun,
		}},
	{name: "port the spec does not declare",
		edits: []edit{{"specs/twice.yaml", "outputs:", "ports:\n  metal: null\noutputs:"}},
		want: []string{
			"gen/kernels/twice_kernel.go:*: twice: the metal slot holds kgenrt.MetalPort(&twiceKernel), but the spec says metal: null" + rerun,
		}},
	{name: "port source missing",
		edits: []edit{{geluMetal, "", ""}},
		want: []string{
			"gen/msl/gelu.metal:*: missing: run `kgen gen`",
		}},
	{name: "a port kgen cannot generate",
		edits: []edit{{"specs/twice.yaml", "dtypes: [f32]", "dtypes: [f16]"}, {"specs/twice.yaml", "inputs: [x]\noutputs:\n  - y: 2 * x", "kind: matmul\nmatmul: {a: x, b: {name: w, quant: q8_0}}\nports:\n  cuda: generated\noutputs:\n  - y: acc / row_sum(acc)"}},
		want:  []string{"specs/twice.yaml:*: kgen cannot generate the CUDA port of this quantized matmul yet"}},
}

// hasFinding is hasLine where a "*" in want stands for "line:col": the
// positions in generated files move whenever the generators change. A
// finding folded under a spec-changed one is indented by four spaces.
func hasFinding(out, want string) bool {
	before, after, ok := strings.Cut(want, "*")
	if !ok {
		return hasLine(out, want)
	}
	re := regexp.MustCompile(`(?m)^(    )?` + regexp.QuoteMeta(before) + `\d+:\d+` + regexp.QuoteMeta(after))
	return re.MatchString(out)
}

// TestDiskClean: the generated project passes as it is.
func TestDiskClean(t *testing.T) {
	dir := project(t, "", true)
	out, code := kgen(dir, "verify")
	if code != 0 || !strings.HasPrefix(out, "kgen verify: 2 kernels, 3 variants, ") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestDiskChecks(t *testing.T) {
	for _, tc := range diskCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := project(t, "", true)
			mutate(t, dir, tc)
			out, code := kgen(dir, "verify", "--no-diff")
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			for _, w := range tc.want {
				if !hasFinding(out, w) {
					t.Errorf("no line has %q:\n%s", w, out)
				}
			}
		})
	}
}

// mutate applies a case's edits; an edit of "" to "" removes the file, and
// forged files get a digest line that matches their edited bytes, the way
// a careful hand edit would hide from the digest.
func mutate(t *testing.T, dir string, tc diskCase) {
	t.Helper()
	for _, e := range tc.edits {
		if e.old == "" && e.new == "" {
			if err := os.Remove(filepath.Join(dir, e.file)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		applyEdits(t, dir, []edit{e})
	}
	if tc.setup != nil {
		tc.setup(t, dir)
	}
	for _, f := range tc.forge {
		forgeDigest(t, filepath.Join(dir, f))
	}
}

// keyOf returns the key of a host name in a generated kernel file.
func keyOf(t *testing.T, p, host string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), `HostName: "`+host+`", Key: "`)
	key, _, _ := strings.Cut(rest, `"`)
	if !ok || len(key) != 64 {
		t.Fatalf("%s has no key for %s", p, host)
	}
	return key
}

// forgeDigest rewrites a generated file's digest line to match its bytes.
func forgeDigest(t *testing.T, p string) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	header, rest, _ := strings.Cut(string(data), "\n")
	_, body, _ := strings.Cut(rest, "\n")
	writeFile(t, p, string(output.Stamp([]byte(header+"\n"+body))))
}

// TestDriftDiff: a stale file comes with a unified diff from the disk to
// what kgen gen would write, indented under its finding in text, in the
// finding's "diff" in json, and left out with --no-diff.
func TestDriftDiff(t *testing.T) {
	dir := project(t, "", true)
	applyEdits(t, dir, []edit{{"specs/twice.yaml", "y: 2 * x", "y: 3 * x"}})
	out, code := kgen(dir, "verify")
	for _, w := range []string{
		"gen/msl/twice.metal:*: stale: the specs changed since it was generated; run `kgen gen`",
		"    --- a/gen/msl/twice.metal (on disk)",
		"    +++ b/gen/msl/twice.metal (kgen gen)",
		"    -//   y = 2 * x",
		"    +//   y = 3 * x",
	} {
		if !hasFinding(out, w) && !hasLine(out, w) {
			t.Errorf("no line has %q", w)
		}
	}
	if code != 1 || t.Failed() {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if out, _ := kgen(dir, "verify", "--no-diff"); strings.Contains(out, "+++ b/") {
		t.Errorf("--no-diff printed a diff:\n%s", out)
	}
	out, _ = kgen(dir, "verify", "--format", "json")
	type finding struct{ ID, Path, Diff string }
	var rep struct {
		Findings []struct {
			finding
			Folded []finding
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	// The spec was edited: one finding at the spec holds the stale files.
	for _, f := range rep.Findings {
		for _, ff := range f.Folded {
			if f.ID == "drift/spec-changed" && f.Path == "specs/twice.yaml" && ff.Path == "gen/msl/twice.metal" && strings.Contains(ff.Diff, "+//   y = 3 * x\n") {
				return
			}
		}
	}
	t.Errorf("json has no diff for gen/msl/twice.metal:\n%s", out)
}

// TestUntrackedExtra: an extra kgen-generated file that git does not track
// fails verify, although `git diff --exit-code` passes.
func TestUntrackedExtra(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	dir := project(t, "", true)
	git := func(args ...string) error {
		cmd := exec.Command(gitBin, append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		if err := cmd.Run(); err != nil {
			t.Logf("git %v: %s", args, b.String())
			return err
		}
		return nil
	}
	if git("init", "-q") != nil || git("add", ".") != nil || git("commit", "-q", "-m", "gen") != nil {
		t.Skip("git cannot commit here")
	}
	copyFile(t, filepath.Join(dir, geluMetal), filepath.Join(dir, "gen/msl/gelu_old.metal"))
	if err := git("diff", "--exit-code"); err != nil {
		t.Fatalf("git diff --exit-code should not see untracked files: %v", err)
	}
	out, code := kgen(dir, "verify")
	if code != 1 || !hasFinding(out, "gen/msl/gelu_old.metal:*: extra: kgen generated this file but no spec produces it any more; run `kgen gen` to remove it") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// TestSpecEditPointsAtTheSpec: a one-line spec edit without `kgen gen` is
// one finding at the spec, holding the stale files and key mismatches it
// caused; a hand edit in another kernel's files stays a finding of its own.
func TestSpecEditPointsAtTheSpec(t *testing.T) {
	dir := project(t, "", true)
	applyEdits(t, dir, []edit{{"specs/gelu.yaml", "0.044715", "0.04471"}, {twiceGo, "package kernels", "package kernels // edited"}})
	out, code := kgen(dir, "verify", "--format", "json")
	type finding struct{ ID, Path string }
	var rep struct {
		Findings []struct {
			finding
			Folded []finding
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	var got []string
	folded := map[string]bool{}
	for _, f := range rep.Findings {
		got = append(got, f.ID+" "+f.Path)
		for _, ff := range f.Folded {
			folded[ff.ID+" "+ff.Path] = true
		}
	}
	want := []string{"drift/hand-edited " + twiceGo, "drift/spec-changed specs/gelu.yaml"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, w := range []string{"drift/stale gen/msl/gelu.metal", "drift/stale " + geluKernel, "keys/mismatch " + geluKernel} {
		if !folded[w] {
			t.Errorf("the spec-changed finding does not hold %q:\n%s", w, out)
		}
	}
}
