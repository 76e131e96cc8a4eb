// Package long is the test suite's one switch for its slow, exhaustive
// runs: KGEN_LONG=1 (what `make test-long` sets). `make test` leaves it
// unset and stays within minutes on two cores; the default tests still
// reach every kind, dtype, backend and code path, at fewer or smaller
// shapes and repetitions, and the long runs add the largest shapes, the
// full sweeps and the grids that take minutes on a CPU.
//
// testing.Short is not the switch: `go test` without -short is the
// default, so "long unless -short" would make every plain `go test`
// long.
package long

import (
	"os"
	"testing"
)

// Env is the environment variable that turns the long runs on.
const Env = "KGEN_LONG"

// Enabled reports whether the long runs are on ($KGEN_LONG set, not "0").
func Enabled() bool {
	v := os.Getenv(Env)
	return v != "" && v != "0"
}

// Skip skips t unless the long runs are on; what says what the test runs
// and about how long it takes.
func Skip(t testing.TB, what string) {
	t.Helper()
	if !Enabled() {
		t.Skipf("%s: a long run (make test-long, or %s=1)", what, Env)
	}
}

// Pick returns long when the long runs are on, else short: a test's
// sizes or repetitions, the default's and the long run's.
func Pick[T any](short, long T) T {
	if Enabled() {
		return long
	}
	return short
}
