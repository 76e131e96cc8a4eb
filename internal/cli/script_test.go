package cli_test

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/kgen-dev/kgen/internal/cli"
	"github.com/kgen-dev/kgen/verify/mslcpu"
)

var update = flag.Bool("update", false, "rewrite the txtar scripts' expected files from the commands' output")

// TestMain lets scripts run `kgen` as a command: the test binary re-executes
// itself as kgen, calling cli.Main just as cmd/kgen does.
func TestMain(m *testing.M) {
	os.Exit(testscript.RunMain(m, map[string]func() int{
		"kgen": func() int { return cli.Main(os.Args[1:], os.Stdout, os.Stderr) },
	}))
}

// TestScripts runs testdata/script/*.txtar. Besides testscript's own
// commands they have:
//
//	exits N cmd args...   run cmd, which must exit with status N
//	validjson file        file (or stdout, stderr) must hold one JSON value
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			// Scripts run with HOME=/no-home: share the MSL harness's real
			// cache of built kernels instead of compiling in every script.
			if dir, err := mslcpu.CacheDir(); err == nil {
				env.Setenv("KGEN_MSLCPU_CACHE", dir)
			}
			return nil
		},
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"exits":     cmdExits,
			"validjson": cmdValidJSON,
		},
	})
}

func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits N command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad status %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with status %d; want %d", args[1], got, want)
	}
}

func cmdValidJSON(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: validjson file")
	}
	var v any
	err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &v)
	switch {
	case neg && err == nil:
		ts.Fatalf("%s is valid JSON", args[0])
	case !neg && err != nil:
		ts.Fatalf("%s is not valid JSON: %v", args[0], err)
	}
}
