package version

import (
	"runtime/debug"
	"slices"
	"testing"
)

func TestBuildFacts(t *testing.T) {
	for _, tc := range []struct {
		bi   debug.BuildInfo
		want []string
	}{
		{debug.BuildInfo{GoVersion: "go1.24.0", Main: debug.Module{Path: "github.com/kgen-dev/kgen", Version: "v0.2.0"}},
			[]string{"module v0.2.0", "go1.24.0"}},
		{debug.BuildInfo{GoVersion: "go1.24.0", Main: debug.Module{Path: "github.com/kgen-dev/kgen", Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "151cc69abcdef0123"}, {Key: "vcs.modified", Value: "true"}}},
			[]string{"module (devel)", "vcs 151cc69abcde+dirty", "go1.24.0"}},
		{debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Path: "example.com/app"},
			Deps: []*debug.Module{{Path: "github.com/kgen-dev/kgen", Version: "v0.1.1-0.20260101-abcdef"}}},
			[]string{"module v0.1.1-0.20260101-abcdef", "go1.25.1"}},
	} {
		if got := buildFacts(&tc.bi); !slices.Equal(got, tc.want) {
			t.Errorf("buildFacts(%+v) = %q; want %q", tc.bi.Main, got, tc.want)
		}
	}
}
