package mslcpu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// Sanitizer selects an instrumented build for Launch.Sanitize.
type Sanitizer uint32

const (
	// NoSanitizer: the default build. Buffers end before a guard page, so
	// overruns beyond the 16-byte alignment slack crash with a message.
	NoSanitizer Sanitizer = iota
	// AddressSanitizer builds kernel and runtime with -fsanitize=address.
	// Every buffer is a heap block of exactly its size, so a read or write
	// even one byte past the end (or before the start) is reported, with the
	// buffer, the lane and the kernel.metal line. Threadgroup arrays are not
	// checked (they live in a section ASan does not instrument).
	AddressSanitizer
	// ThreadSanitizer builds with -fsanitize=thread and runs every lane of a
	// group as its own OS thread (slow: use small grids). Barriers and simd
	// functions are the only synchronisation between lanes, so two lanes
	// touching the same threadgroup or device memory without a barrier
	// between them, one of them writing, is reported as a data race.
	// Groups still run one after another: races between threadgroups are
	// not seen.
	ThreadSanitizer
)

func (s Sanitizer) String() string {
	switch s {
	case AddressSanitizer:
		return "address"
	case ThreadSanitizer:
		return "thread"
	}
	return "none"
}

// ParseSanitizer reads "address", "thread" or "none" (or "").
func ParseSanitizer(name string) (Sanitizer, error) {
	switch name {
	case "", "none":
		return NoSanitizer, nil
	case "address", "asan":
		return AddressSanitizer, nil
	case "thread", "tsan":
		return ThreadSanitizer, nil
	}
	return 0, fmt.Errorf("unknown sanitizer %q: want address or thread", name)
}

var sanitizerChecks sync.Map // Sanitizer -> error (nil when usable)

// SanitizerAvailable reports whether builds with s link and run here: the
// sanitizer runtimes come in a separate package on Debian
// (libclang-rt-19-dev for clang-19). The answer is cached per process.
func SanitizerAvailable(ctx context.Context, s Sanitizer) error {
	if s == NoSanitizer {
		return nil
	}
	if v, ok := sanitizerChecks.Load(s); ok {
		if v == nil {
			return nil
		}
		return v.(error)
	}
	err := probeSanitizer(ctx, s)
	if ctx.Err() != nil {
		return err // do not remember a cancelled probe
	}
	if err == nil {
		sanitizerChecks.Store(s, nil)
	} else {
		sanitizerChecks.Store(s, err)
	}
	return err
}

func probeSanitizer(ctx context.Context, s Sanitizer) error {
	tc, err := newToolchain()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(tc.cache, "probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "probe.cc")
	if err := os.WriteFile(src, []byte("#include <pthread.h>\nint main() { return 0; }\n"), 0o644); err != nil {
		return err
	}
	if _, err := Symbolizer(tc.cxx); err != nil {
		return fmt.Errorf("%s sanitizer reports would not name kernel lines: %w", s, err)
	}
	bin := filepath.Join(dir, "probe")
	if err := tc.compile(ctx, append(buildFlags(s), src, "-o", bin, "-lpthread"), nil); err != nil {
		return fmt.Errorf("mslcpu: %s sanitizer unavailable with %s (on Debian: apt-get install libclang-rt-19-dev): %v", s, tc.cxx, err)
	}
	c := child{what: "running the sanitizer probe", path: bin, env: sanitizerEnv(tc.cxx), stdoutN: maxDiagnostics,
		merge: true, outErr: "the sanitizer probe wrote over " + Bytes(maxDiagnostics)}
	res, err := c.run(ctx)
	if err == nil {
		err = res.err
	}
	if err != nil {
		return fmt.Errorf("mslcpu: %s sanitizer build does not run here: %v\n%s", s, err, res.stdout)
	}
	return nil
}

// sanitizerEnv is what a sanitized kernel binary adds to the minimal
// environment: the sanitizers' options (no leak check: the runtime never
// frees its buffers; stop at the first report; resident memory bounded by
// KernelMemory, as an address-space limit would stop the sanitizer itself)
// and the symbolizer of the compiler's LLVM (Symbolizer), so that reports
// name kernel.metal lines.
func sanitizerEnv(cxx string) []string {
	opts := fmt.Sprintf("detect_leaks=0:halt_on_error=1:abort_on_error=0:hard_rss_limit_mb=%d:max_allocation_size_mb=%d", KernelMemory>>20, KernelMemory>>20)
	if sym, err := Symbolizer(cxx); err == nil {
		opts += ":external_symbolizer_path=" + sym
	}
	return []string{"ASAN_OPTIONS=" + opts, "TSAN_OPTIONS=" + opts + ":second_deadlock_stack=1"}
}

// accessRe matches the access lines of ASan and TSan reports ("READ of size
// 4 at ...", "Previous write of size 4 at ...").
var accessRe = regexp.MustCompile(`^(?i:(previous |atomic )?(read|write) of size \d+)`)

// frameRe reads a stack frame in kernel.metal: the function and the line.
var frameRe = regexp.MustCompile(`^#\d+ (?:0x[0-9a-f]+ in )?(.*?) (?:\S*/)?(` + regexp.QuoteMeta(kernelFile) + `:\d+(?::\d+)?)`)

// binaryRefRe matches the "(binary+0x1234)" and "(BuildId: …)" notes of
// frames outside kernel.metal.
var binaryRefRe = regexp.MustCompile(`\s*\((?:[^()]*\+0x[0-9a-f]+|BuildId: [0-9a-f]+)\)`)

// summarize keeps what a reader needs from a failed run's stderr: the
// harness's own lines (which lane, which buffer) and each sanitizer report's
// headline, its first kernel.metal frame and its SUMMARY line.
func summarize(stderr string) string {
	var keep []string
	frame := false
	for _, line := range strings.Split(stderr, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "mslcpu: "):
			keep = append(keep, strings.TrimPrefix(t, "mslcpu: "))
		case strings.Contains(t, "Sanitizer:") && (strings.HasPrefix(t, "==") || strings.HasPrefix(t, "WARNING:") || strings.HasPrefix(t, "SUMMARY:")):
			t = strings.TrimLeft(t, "=0123456789")
			if i := strings.Index(t, " at pc "); i >= 0 {
				t = t[:i]
			}
			if i := strings.Index(t, " (pid="); i >= 0 {
				t = t[:i]
			}
			t = binaryRefRe.ReplaceAllString(t, "")
			keep = append(keep, t)
			frame = false
		case accessRe.MatchString(t):
			keep = append(keep, accessRe.FindString(t))
			frame = false
		case !frame && strings.HasPrefix(t, "#") && frameRe.MatchString(t):
			m := frameRe.FindStringSubmatch(t)
			keep = append(keep, "  at "+m[2]+" in "+m[1])
			frame = true
		}
	}
	if len(keep) == 0 {
		return strings.TrimSpace(stderr)
	}
	return strings.Join(keep, "\n")
}
