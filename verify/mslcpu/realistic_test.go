package mslcpu

import (
	"path/filepath"
	"strings"
	"testing"
)

// realisticLaunch runs a kernel of testdata/realistic/constructs.metal the
// way a project's build would: -I include, -D WIDTH=4, function constants.
func realisticLaunch(t *testing.T, host string, edit func(*Launch)) ([][]byte, error) {
	t.Helper()
	path := filepath.Join("testdata", "realistic", "constructs.metal")
	l := Launch{
		Source: readTestdata(t, "realistic/constructs.metal"),
		SourceOptions: SourceOptions{
			Path:              path,
			IncludeDirs:       []string{filepath.Join("testdata", "realistic", "include")},
			Defines:           []string{"WIDTH=4"},
			FunctionConstants: map[string]string{"has_bias": "true", "21": "1"},
		},
		HostName:    host,
		Grid:        [3]uint32{4, 1, 1},
		Threadgroup: [3]uint32{4, 1, 1},
	}
	edit(&l)
	return Run(testContext(t), l)
}

// TestRealisticConstructs: implicit buffer indices, headers next to the
// file and through -I, -D, function constants by name and index, macro host
// names, METAL_FUNC, type traits, numeric_limits, int64_t and uint8_t,
// [[threadgroup(0)]] memory, one buffer at two indices.
func TestRealisticConstructs(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	out, err := realisticLaunch(t, "scale_v_float32", func(l *Launch) {
		l.Buffers = [][]byte{f32Bytes([]float32{1, -2, 1e38, 0.5}), make([]byte, 16), {3, 0, 0, 0, 0, 0, 0, 0}, f32Bytes([]float32{10, 20, 30, 40})}
	})
	if err != nil {
		t.Fatal(err)
	}
	// size 3: the last lane returns; 1e38*4 overflows to +Inf, min() caps it
	// at numeric_limits<float>::max(); the bias is added (has_bias).
	if got, want := bytesF32(out[1]), []float32{14, 12, 3.4028235e38, 0}; !equalF32(got, want) {
		t.Errorf("scale_v_float32 = %v, want %v", got, want)
	}
	out, err = realisticLaunch(t, "reverse_tg", func(l *Launch) {
		l.Buffers = [][]byte{{1, 2, 3, 4}, make([]byte, 4)}
		l.ThreadgroupMemory = []uint32{4}
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := out[1]; string(got) != string([]byte{8, 6, 4, 2}) {
		t.Errorf("reverse_tg = %v, want [8 6 4 2]", got)
	}
	out, err = realisticLaunch(t, "add_inplace", func(l *Launch) {
		l.Buffers = [][]byte{f32Bytes([]float32{1, 2, 3, 4}), nil}
		l.Aliases = map[int]int{1: 0}
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := bytesF32(out[0]); !equalF32(got, []float32{2, 3, 4, 5}) {
		t.Errorf("add_inplace through an alias = %v, want [2 3 4 5]", got)
	}
}

// TestRealisticErrors: what a project's build gets wrong is reported with
// the file and line.
func TestRealisticErrors(t *testing.T) {
	needCompiler(t)
	t.Parallel()
	cases := []struct {
		name string
		edit func(*Launch)
		want string
	}{
		{"no -D", func(l *Launch) { l.Defines = nil }, `constructs.metal:10:2: error: "build with -D WIDTH=..."`},
		{"no -I", func(l *Launch) { l.IncludeDirs = nil }, `constructs.metal:6:10: fatal error: 'ops.h' file not found`},
		{"unknown constant", func(l *Launch) { l.FunctionConstants = map[string]string{"hasbias": "1"} }, "no [[function_constant]] named or numbered hasbias"},
		{"no threadgroup memory", func(l *Launch) { l.HostName = "reverse_tg" }, "[[threadgroup(0)]]: the launch gives it no memory"},
	}
	for _, c := range cases {
		_, err := realisticLaunch(t, "scale_v_float32", func(l *Launch) {
			l.Buffers = [][]byte{make([]byte, 16), make([]byte, 16), make([]byte, 8), make([]byte, 16)}
			c.edit(l)
		})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error mentioning %q", c.name, err, c.want)
		}
	}
}

func equalF32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameFloat(a[i], b[i]) {
			return false
		}
	}
	return true
}
