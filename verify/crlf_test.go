package verify_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCRLFCheckout: after a checkout that converts line endings (git's
// core.autocrlf), every generated file is still kgen's and unchanged:
// verify passes (drift, dtype keys recomputed from the .metal, ports) and
// gen writes nothing. Issue 27: every generated file used to count as
// hand-edited.
func TestCRLFCheckout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	writeFile(t, filepath.Join(dir, "kgen.yaml"), "version: 1\nspecs: specs\nout:\n  msl: gen/msl\n  cuda: gen/cuda\n  go: gen/kernels\nverify:\n  parity: off\n")
	writeFile(t, filepath.Join(dir, "specs/k.yaml"), "kernel: k\ndtypes: [f32, f16]\ninputs: [x]\noutputs:\n  - y: x * 2 + 1\n"+
		"ports: {metal: generated, cuda: generated, rocm: null}\n")
	writeFile(t, filepath.Join(dir, "specs/r.yaml"), "kernel: r\nkind: rowwise\ndtypes: [f32]\ninputs: [x]\noutputs:\n  - y: x - row_max(x)\n")
	if out, code := kgen(dir, "gen"); code != 0 {
		t.Fatalf("kgen gen: exit %d\n%s", code, out)
	}
	converted := map[string][]byte{}
	err := filepath.WalkDir(filepath.Join(dir, "gen"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		data = bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n"))
		converted[p] = data
		return os.WriteFile(p, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if out, code := kgen(dir, "verify"); code != 0 || !strings.HasSuffix(strings.TrimSpace(out), "; ok") {
		t.Errorf("verify after a CRLF checkout: exit %d\n%s", code, out)
	}
	if out, code := kgen(dir, "gen"); code != 0 {
		t.Fatalf("kgen gen after a CRLF checkout: exit %d\n%s", code, out)
	}
	for p, want := range converted {
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
			t.Errorf("gen rewrote %s, unchanged but for its line endings (%v)", p, err)
		}
	}
}
