package mslcpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// The harness compiles and runs a source as host code. Every process it
// starts (clang, the linker, the kernel binary) runs under these limits;
// see docs/emu.md for what they do and do not promise.
const (
	// MaxSourceBytes bounds a source file (kgen emu --file).
	MaxSourceBytes = 8 << 20
	// MaxPreprocessedBytes bounds clang -E's output: a macro that expands
	// without bound is stopped here instead of filling memory.
	MaxPreprocessedBytes = 32 << 20
	// MaxBufferBytes bounds all of a launch's buffers together.
	MaxBufferBytes = 1 << 30
	// MaxGridThreads bounds the threads of one launch (the product of
	// Grid's axes); each axis is a uint32, as Metal's positions are.
	MaxGridThreads = 1 << 32
	// ThreadgroupMemoryLimit is Metal's threadgroup memory per group
	// (backend.Table's Metal entry): kernel-scope threadgroup arrays and
	// Launch.ThreadgroupMemory together.
	ThreadgroupMemoryLimit = 32 << 10
	// KernelMemory is the address space of a kernel binary (RLIMIT_AS;
	// a sanitizer build gets the same bound on its resident memory
	// instead, as sanitizers reserve terabytes of address space).
	KernelMemory = 4 << 30
	// CompilerMemory is the address space of a compile or link.
	CompilerMemory = 8 << 30
	// PreprocessorMemory is the address space of clang -E.
	PreprocessorMemory = 2 << 30
	// DefaultCPUTime is each child's CPU-time limit (RLIMIT_CPU) when the
	// context has no deadline; with one, the time left to it, rounded up.
	DefaultCPUTime = 10 * time.Minute
	// maxDiagnostics bounds a child's stderr (and a compiler's output).
	maxDiagnostics = 1 << 20
)

// LimitError reports an input or an output over one of the harness's
// limits.
type LimitError struct{ Message string }

func (e *LimitError) Error() string { return "mslcpu: " + e.Message }

// StoppedError is a child stopped because its context ended (a deadline,
// kgen emu --timeout): What says what it was doing.
type StoppedError struct {
	What string // "preprocessing", "compiling", "running saxpy"
	Err  error  // the context's error: context.DeadlineExceeded or Canceled
}

func (e *StoppedError) Error() string { return "mslcpu: " + e.What + ": " + e.Err.Error() }
func (e *StoppedError) Unwrap() error { return e.Err }

// child is one process the harness starts.
type child struct {
	what    string   // for errors: "preprocessing", "compiling", "running saxpy"
	path    string   // the program
	args    []string // its arguments
	stdin   []byte
	env     []string // added to the minimal environment
	memory  uint64   // RLIMIT_AS in bytes; 0: none
	stdoutN int      // most stdout bytes kept; more is an error
	outErr  string   // the LimitError message when stdout overflows
	merge   bool     // stderr goes with stdout (a compiler's diagnostics)
}

// childResult is what a finished child left.
type childResult struct {
	stdout, stderr []byte
	err            error // the exit status, as exec returns it
}

// run starts the child in its own process group under the limits and
// waits for it. A cancelled or expired context kills the whole group
// (compiler drivers start linkers) and is returned, wrapped with c.what.
func (c child) run(ctx context.Context) (childResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", limitScript(ctx, c.memory), c.path}, c.args...)...)
	cmd.Env = append(minimalEnv(), c.env...)
	cmd.SysProcAttr = procAttr()
	cmd.Cancel = func() error { return killGroup(cmd.Process) }
	cmd.WaitDelay = 2 * time.Second
	if c.stdin != nil {
		cmd.Stdin = bytes.NewReader(c.stdin)
	}
	stdout := &capped{max: c.stdoutN, overflow: cancel}
	stderr := &capped{max: maxDiagnostics}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if c.merge {
		cmd.Stderr = stdout
	}
	err := cmd.Run()
	res := childResult{stdout: stdout.buf.Bytes(), stderr: stderr.buf.Bytes(), err: err}
	switch {
	case stdout.over:
		return res, &LimitError{Message: c.outErr}
	case ctx.Err() != nil:
		// the parent's context: ours is cancelled only through overflow
		return res, &StoppedError{What: c.what, Err: context.Cause(ctx)}
	}
	return res, nil
}

// limitScript sets the CPU-time and address-space limits in the shell that
// then execs the program ($0, arguments "$@"): Go cannot set another
// process's rlimits between fork and exec. The limits never exceed our own
// hard limits, which an unprivileged process cannot raise.
func limitScript(ctx context.Context, memory uint64) string {
	cpu := uint64(DefaultCPUTime / time.Second)
	if d, ok := ctx.Deadline(); ok {
		cpu = uint64(max(1, time.Until(d).Seconds()+1))
	}
	script := "ulimit -t " + strconv.FormatUint(capLimit(syscallRlimitCPU, cpu), 10)
	if memory > 0 && runtime.GOOS == "linux" { // other kernels do not enforce RLIMIT_AS
		script += " && ulimit -v " + strconv.FormatUint(capLimit(syscallRlimitAS, memory)/1024, 10)
	}
	return script + ` && exec "$0" "$@"`
}

// minimalEnv is the environment children start from: no variables of the
// caller (tokens, credentials) beyond what a compiler needs to run.
func minimalEnv() []string {
	env := []string{"LANG=C", "LC_ALL=C", "PATH=" + os.Getenv("PATH")}
	if os.Getenv("PATH") == "" {
		env[2] = "PATH=/usr/local/bin:/usr/bin:/bin"
	}
	if tmp := os.Getenv("TMPDIR"); tmp != "" {
		env = append(env, "TMPDIR="+tmp)
	}
	return env
}

// capped keeps up to max bytes; past that it drops the rest, records the
// overflow and calls overflow (which stops the child) once.
type capped struct {
	buf      bytes.Buffer
	max      int
	over     bool
	overflow func()
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); len(p) > room {
		c.buf.Write(p[:max(room, 0)])
		if !c.over && c.overflow != nil {
			c.overflow()
		}
		c.over = true
		return len(p), nil
	}
	return c.buf.Write(p)
}

// exitDetail describes how a child ended when it did not exit cleanly: a
// signal (a crash, or a limit: SIGXCPU is the CPU-time limit, SIGKILL
// often the address-space one) in words.
func exitDetail(err error) string {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return ""
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		switch ws.Signal() {
		case syscall.Signal(0x18): // SIGXCPU on Linux and the BSDs
			return fmt.Sprintf("%s (its CPU-time limit)", exit)
		}
	}
	if !exit.Exited() {
		return exit.String()
	}
	return ""
}

// readLimited reads r up to limit bytes and fails with a LimitError past
// that.
func readLimited(r io.Reader, limit int64, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &LimitError{Message: fmt.Sprintf("%s is over %s", what, Bytes(limit))}
	}
	return data, nil
}

// Bytes writes a byte count for messages: 32 KiB, 1 GiB, 4097 bytes.
func Bytes(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// within runs fn, the harness's own reading of a source, until ctx ends: a
// source crafted to make that reading slow cannot outlast the deadline.
// (fn keeps running in its goroutine; a command line exits at once.)
func within[T any](ctx context.Context, what string, fn func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, &StoppedError{What: what, Err: context.Cause(ctx)}
	}
}
