package e2e

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The generated package and kgenrt build everywhere with cgo off; on darwin
// they are also vetted, since that is where the Metal build tags switch.
func TestCrossCompile(t *testing.T) {
	pkgs := []string{"./kgenrt", "./gen/kernels"}
	for _, target := range []string{"darwin/arm64", "linux/386", "windows/amd64"} {
		t.Run(strings.ReplaceAll(target, "/", "_"), func(t *testing.T) {
			t.Parallel()
			goos, goarch, _ := strings.Cut(target, "/")
			env := []string{"GOOS=" + goos, "GOARCH=" + goarch, "CGO_ENABLED=0"}
			mustGo(t, "..", env, append([]string{"build"}, pkgs...)...)
			if goos == "darwin" {
				mustGo(t, "..", env, append([]string{"vet"}, pkgs...)...)
			}
		})
	}
}

var fusedSingle = regexp.MustCompile(`\bF(N?)M(ADD|SUB)S\b`)

// Go may fuse x*y+z into one FMA on arm64 (and ppc64, s390x), which would
// skip a rounding the kernels do. The f32 reference forbids it with explicit
// float32 conversions; the arm64 assembly of the generated package must hold
// no single-precision fused multiply-add, while a plain x*y+z does get one.
func TestNoFusedMultiplyAddInTheF32Reference(t *testing.T) {
	env := []string{"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0"}
	asm := mustGo(t, "..", env, "build", "-gcflags=github.com/kgen-dev/kgen/gen/kernels=-S", "-o", filepath.Join(t.TempDir(), "k.a"), "./gen/kernels")
	if !strings.Contains(asm, "geluTanhEvalF32") {
		t.Fatal("no assembly listing: the check checked nothing")
	}
	if m := fusedSingle.FindAllString(asm, -1); len(m) > 0 {
		t.Errorf("the f32 reference has %d fused multiply-adds: %v", len(m), m)
	}
	scratch := t.TempDir()
	writeFiles(t, scratch, map[string]string{
		"go.mod": "module scratch\n\ngo 1.24\n",
		"f.go":   "package scratch\n\nfunc F(x, y, z float32) float32 { return x*y + z }\n",
	})
	control := mustGo(t, scratch, env, "build", "-gcflags=-S", "-o", filepath.Join(t.TempDir(), "s.a"), ".")
	if !fusedSingle.MatchString(control) {
		t.Fatal("control: x*y + z did not fuse on arm64, so the check above proves nothing")
	}
}

// The port tables (and the descriptors' launches) are [...] literals
// assigned to [NumBackends] arrays: adding a backend to kgenrt must break
// the generated package's build.
func TestAddingABackendBreaksTheBuild(t *testing.T) {
	mod := t.TempDir()
	copyDir(t, "..", mod, keep) // go.mod and go.sum, with the other top-level files
	copyDir(t, "../gen/kernels", filepath.Join(mod, "gen/kernels"), keep)
	copyDir(t, "../gen/kernels/cudabin", filepath.Join(mod, "gen/kernels/cudabin"), keep) // the package's //go:embeds
	copyDir(t, "../gen/kernels/hipbin", filepath.Join(mod, "gen/kernels/hipbin"), keep)
	copyDir(t, "../kgenrt", filepath.Join(mod, "kgenrt"), keep)
	copyDir(t, "../launch", filepath.Join(mod, "launch"), keep)         // kgenrt's leaf dependency
	mustGo(t, mod, []string{"CGO_ENABLED=0"}, "build", "./gen/kernels") // control
	copyDir(t, "../kgenrt", filepath.Join(mod, "kgenrt"), func(name, text string) string {
		if name != "backend.go" {
			return text
		}
		return strings.Replace(text, "\tROCm\n\tNumBackends\n", "\tROCm\n\tVulkan\n\tNumBackends\n", 1)
	})
	out, err := goRun(t, mod, []string{"CGO_ENABLED=0"}, "build", "./gen/kernels")
	if err == nil {
		t.Fatal("the generated package still builds with a fourth backend")
	}
	if !strings.Contains(out, "value of type [3]kgenrt.Port") || !strings.Contains(out, "[4]kgenrt.Port") {
		t.Fatalf("the build failed for another reason:\n%s", out)
	}
}
