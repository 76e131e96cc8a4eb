package version

import (
	"runtime/debug"
	"strings"
)

// String is the one version line kgen prints (`kgen version`, `kgen
// --version`): the release, then what the Go build recorded — the module
// version it was built as (v1.2.3 from `go install …@v1.2.3`, a
// pseudo-version from `go get -tool`, "(devel)" from a checkout) and, where
// the go command stamped them, the VCS revision and whether the tree had
// uncommitted changes. Headers keep the bare Version, so that how kgen was
// built never changes generated files.
func String() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "kgen " + Version
	}
	return "kgen " + Version + " (" + strings.Join(buildFacts(bi), ", ") + ")"
}

// buildFacts lists the build's module version and VCS stamp.
func buildFacts(bi *debug.BuildInfo) []string {
	mod := bi.Main.Version
	for _, d := range bi.Deps { // kgen as a tool or library of another module
		if d.Path == "github.com/kgen-dev/kgen" {
			mod = d.Version
		}
	}
	if mod == "" {
		mod = "(unknown)"
	}
	facts := []string{"module " + mod}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if modified == "true" {
			rev += "+dirty"
		}
		facts = append(facts, "vcs "+rev)
	}
	return append(facts, bi.GoVersion)
}
