package verify_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify"
)

// The fixture gotypes adds bias_gelu, a rowwise kernel without a reduction,
// to the shared specs: its Go reference once declared a lane count that only
// reductions read, so the generated package did not compile while gen and
// verify both said ok.
const (
	biasRef  = "gen/kernels/bias_gelu_reference.go"
	biasSpec = "specs/bias_gelu.yaml"
)

// TestGoTypes: the fixture generates and verifies (the generated package
// type-checks); then a type error put into a generated file by hand is a
// gotypes finding at its line and column naming the spec, whether it comes
// from the port-dispatch load or from the package's own check.
func TestGoTypes(t *testing.T) {
	dir := project(t, "gotypes", false)
	out, code := kgen(dir, "verify")
	if code != 0 {
		t.Errorf("exit %d", code)
	}
	checkOutput(t, "gotypes", out)

	want := breakReturn(t, filepath.Join(dir, filepath.FromSlash(biasRef)))
	out, code = kgen(dir, "verify", "--no-diff")
	if code != 1 || !hasTypeLine(strings.Split(out, "\n"), want) || !hasLine(out, "; FAILED with 2 findings") {
		t.Errorf("after breaking %s: exit %d, want 1 and the line %q…%q among:\n%s", biasRef, code, want[0], want[1], out)
	}

	// Without the port-dispatch rules there is no module load to reuse:
	// the package is checked on its own, with the same finding.
	cfg, err := config.Load(filepath.Join(dir, "kgen.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := verify.Run(context.Background(), cfg, verify.Options{OutDirs: []string{cfg.Out[ir.Metal], cfg.OutGo}, Parity: "off", NoDispatch: true})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range rep.Findings {
		if f.Check == "gotypes" {
			lines = append(lines, f.String())
		}
	}
	if !rep.HasCheck("gotypes") || !hasTypeLine(lines, want) {
		t.Errorf("with NoDispatch: checks %v, want gotypes and the finding %q…%q among %v", rep.Checks, want[0], want[1], rep.Findings)
	}
}

// breakReturn replaces the last `return nil` of the generated file p with
// `return 0` and returns the start and the end of the finding line verify
// must print for it (the middle is go/types' wording).
func breakReturn(t *testing.T, p string) [2]string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	src := string(data)
	i := strings.LastIndex(src, "return nil\n")
	if i < 0 {
		t.Fatalf("%s has no `return nil`", p)
	}
	writeFile(t, p, src[:i]+"return 0\n"+src[i+len("return nil\n"):])
	line := strings.Count(src[:i], "\n") + 1
	col := i - strings.LastIndex(src[:i], "\n") + len("return ")
	return [2]string{fmt.Sprintf("%s:%d:%d: the generated Go does not type-check: cannot use 0 ", biasRef, line, col),
		" (generated from " + biasSpec + ")"}
}

func hasTypeLine(lines []string, want [2]string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, want[0]) && strings.HasSuffix(l, want[1]) {
			return true
		}
	}
	return false
}
