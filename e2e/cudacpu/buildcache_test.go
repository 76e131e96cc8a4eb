package cudacpu

import (
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/e2e/internal/buildcache"
)

// compileCached compiles dir/main.cpp (which includes dir/kernel.cu, cu)
// with flags, testdata, dir and the CUDA headers on the include path, or
// takes the binary from the build cache (buildKey): the fatbin and
// rowwise builds are ASan and UBSan builds of a whole generated source,
// up to a minute and a half of a loaded core each, and were compiled anew
// on every run, two thirds of this package's time with a warm cache.
// what names the build in the log.
func compileCached(t *testing.T, tc toolchain, what, dir string, flags []string, cu, main string) string {
	t.Helper()
	key := buildKey(t, tc, flags, cu, main)
	if bin := buildCache.Get(key); bin != "" {
		t.Logf("%s: the CPU build of this source is cached", what)
		return bin
	}
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "run")
	cmd := append(append(slices.Clone(flags), "-I"+testdata, "-I"+dir, "-I"+tc.include), "-x", "c++", filepath.Join(dir, "main.cpp"), "-o", bin)
	start := time.Now()
	if out, err := exec.Command(tc.cxx, cmd...).CombinedOutput(); err != nil {
		t.Fatalf("%s: the CPU build failed: %v\n%s", what, err, buildcache.FirstLines(string(out), 40))
	}
	t.Logf("%s: built for the CPU in %v", what, time.Since(start).Round(time.Millisecond))
	buildCache.Put(key, bin)
	return bin
}
