package verify_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSplitKeys: a row-reducing matmul's source also instantiates its split
// launches, each with a dtype-key table of its own in the generated Go. The
// clean project passes (those host names are the spec's, not strays), and
// each mutation of a split launch's keys or instantiations is a finding.
func TestSplitKeys(t *testing.T) {
	const metal, goFile = "gen/msl/mm_norm.metal", "gen/kernels/mm_norm_kernel.go"
	dir := project(t, "split", true)
	if out, code := kgen(dir, "verify"); code != 0 || !strings.Contains(out, "; ok") {
		t.Fatalf("clean project: exit %d\n%s", code, out)
	}
	cases := []diskCase{
		{name: "split key edited",
			edits: []edit{{goFile, `HostName: "mm_norm_rows_f16", Key: "`, `HostName: "mm_norm_rows_f16", Key: "X`}},
			forge: []string{goFile},
			want:  []string{"gen/kernels/mm_norm_kernel.go:*: mm_norm_rows_f16: key X"}},
		{name: "split instantiation missing",
			setup: func(t *testing.T, dir string) {
				dropLine(t, filepath.Join(dir, metal), `[[host_name("mm_norm_acc_f32")]]`)
			},
			forge: []string{metal},
			want:  []string{`mm_norm: the spec has dtype f32 but the file has no [[host_name("mm_norm_acc_f32")]] instantiation`}},
		{name: "split table entry missing",
			setup: func(t *testing.T, dir string) {
				dropLine(t, filepath.Join(dir, goFile), `HostName: "mm_norm_acc_f16"`)
			},
			forge: []string{goFile},
			want:  []string{"mm_norm: the spec has dtype f16 but the dtype-key table has no mm_norm_acc_f16 entry"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t, "split", true)
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

// dropLine removes the line of file p that contains s.
func dropLine(t *testing.T, p, s string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data := string(b)
	var kept []string
	found := false
	for _, l := range strings.Split(data, "\n") {
		if strings.Contains(l, s) {
			found = true
			continue
		}
		kept = append(kept, l)
	}
	if !found {
		t.Fatalf("%s has no line with %q", p, s)
	}
	writeFile(t, p, strings.Join(kept, "\n"))
}
