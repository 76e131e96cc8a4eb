// Package buildcache keeps the CPU runners' compiled test binaries (e2e/cudacpu,
// e2e/hipcpu) between runs, keyed by a hash of everything a build reads, so
// a warm `make test` compiles only what changed. Every operation is best
// effort: a cache that cannot be read or written only costs time.
package buildcache

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// stale is how long a binary may go unused before Put prunes it.
const stale = 14 * 24 * time.Hour

// Cache is a folder of binaries named run-<key>; an empty Dir caches nothing.
type Cache struct{ Dir string }

// Open is the cache named name: the folder $env when set, else
// <user cache dir>/kgen/<name>.
func Open(env, name string) Cache {
	if dir := os.Getenv(env); dir != "" {
		return Cache{dir}
	}
	if base, err := os.UserCacheDir(); err == nil {
		return Cache{filepath.Join(base, "kgen", name)}
	}
	return Cache{}
}

// Get returns the cached binary of key, or "", and marks it in use (not
// pruned).
func (c Cache) Get(key string) string {
	if c.Dir == "" {
		return ""
	}
	bin := filepath.Join(c.Dir, "run-"+key)
	if _, err := os.Stat(bin); err != nil {
		return ""
	}
	now := time.Now()
	os.Chtimes(bin, now, now)
	return bin
}

// Put copies bin into the cache under key (atomically, by a rename) and
// prunes binaries unused for two weeks.
func (c Cache) Put(key, bin string) {
	data, err := os.ReadFile(bin)
	if c.Dir == "" || err != nil || os.MkdirAll(c.Dir, 0o755) != nil {
		return
	}
	at := filepath.Join(c.Dir, "run-"+key)
	tmp := fmt.Sprintf("%s.tmp%d", at, os.Getpid())
	if os.WriteFile(tmp, data, 0o755) != nil || os.Rename(tmp, at) != nil {
		os.Remove(tmp)
		return
	}
	old, _ := filepath.Glob(filepath.Join(c.Dir, "run-*"))
	for _, f := range old {
		if fi, err := os.Stat(f); err == nil && time.Since(fi.ModTime()) > stale {
			os.Remove(f)
		}
	}
}

// FirstLines is at most n lines of s, for a failed build's or run's output
// in a test message.
func FirstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
