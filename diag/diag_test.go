package diag

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestSorted(t *testing.T) {
	var l List
	l.Addf(Pos{Path: "specs/b.yaml", Line: 2, Col: 1}, "b2")
	l.Addf(Pos{Path: "specs/a.yaml", Line: 10, Col: 1}, "a10")
	l.Addf(Pos{Path: "specs/a.yaml", Line: 9, Col: 30}, "a9 col 30")
	l.Addf(Pos{Path: "specs/a.yaml", Line: 9, Col: 4}, "a9 %s", "second")
	l.Addf(Pos{Path: "specs/a.yaml", Line: 9, Col: 4}, "a9 first")
	l.Addf(Pos{Path: "specs/a.yaml", Line: 9, Col: 4}, "a9 first") // a duplicate
	l.Addf(Pos{Path: "specs"}, "folder")
	var other List
	other.Addf(Pos{Path: "kgen.yaml", Line: 1, Col: 1}, "config")
	l.Append(&other)
	if l.Len() != 8 {
		t.Errorf("Len = %d; want 8", l.Len())
	}
	var got []string
	for _, d := range l.Sorted() {
		got = append(got, d.String())
	}
	want := []string{
		"kgen.yaml:1:1: config",
		"specs: folder",
		"specs/a.yaml:9:4: a9 first",
		"specs/a.yaml:9:4: a9 second",
		"specs/a.yaml:9:30: a9 col 30",
		"specs/a.yaml:10:1: a10",
		"specs/b.yaml:2:1: b2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Sorted:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Sorting does not change the list itself.
	if l.Len() != 8 {
		t.Errorf("Len after Sorted = %d; want 8", l.Len())
	}

	err := l.Err()
	de, ok := AsError(fmt.Errorf("wrapped: %w", err))
	if !ok || len(de.Diagnostics) != len(want) {
		t.Fatalf("AsError(wrapped) = %v, %v", de, ok)
	}
	if err.Error() != strings.Join(want, "\n") {
		t.Errorf("Error() = %q", err.Error())
	}
	if (&List{}).Err() != nil {
		t.Error("an empty list's Err is not nil")
	}
	if _, ok := AsError(errors.New("plain")); ok {
		t.Error("AsError accepted a plain error")
	}
}

func TestPos(t *testing.T) {
	p := Pos{Path: "a.yaml", Line: 3, Col: 7}
	if got := p.String(); got != "a.yaml:3:7" {
		t.Errorf("String = %q", got)
	}
	if got := p.Shift(5).String(); got != "a.yaml:3:12" {
		t.Errorf("Shift(5) = %q", got)
	}
	if got := (Pos{Path: "specs"}).String(); got != "specs" {
		t.Errorf("no line: %q", got)
	}
}

func TestSuggest(t *testing.T) {
	fields := []string{"kernel", "doc", "kind", "dtypes", "compute", "inputs", "params", "constants", "let", "outputs", "math", "threadgroup", "ports", "tolerance"}
	funcs := []string{"abs", "exp", "exp2", "log", "log2", "tanh", "sigmoid", "sqrt", "rsqrt", "erf", "pow", "min", "max"}
	tests := []struct {
		name       string
		candidates []string
		want       string
	}{
		{"thredgroup", fields, "threadgroup"},
		{"output", fields, "outputs"},
		{"dtype", fields, "dtypes"},
		{"Kernel", fields, "kernel"},
		{"tanhh", funcs, "tanh"},
		{"tahn", funcs, "tanh"},        // a transposition is one edit
		{"sigomid", funcs, "sigmoid"},  // so is this one
		{"ouptuts", fields, "outputs"}, // two transpositions, two edits
		{"tpye", []string{"type"}, "type"},
		{"sigmod", funcs, "sigmoid"},
		{"sqr", funcs, "sqrt"},
		{"f31", []string{"f32", "f16", "bf16"}, "f32"},
		{"f64", []string{"f32", "f16", "bf16"}, ""}, // two edits from each; spec knows better
		{"bf32", []string{"f32", "f16", "bf16"}, "f32"},
		{"xx", []string{"x", "pi"}, "x"},
		{"scal", []string{"scale", "x", "pi"}, "scale"},
		{"expp", funcs, "exp"},         // ties go to the first in order
		{"mn", funcs, "min"},           // one edit is fine for two letters
		{"q", []string{"x", "pi"}, ""}, // sharing nothing is not a typo
		{"ab", []string{"xy"}, ""},
		{"vulkan", []string{"metal", "cuda", "rocm"}, ""},
		{"frobnicate", funcs, ""},
		{"anything", nil, ""},
		{"", []string{"a"}, ""},
	}
	for _, tt := range tests {
		got := Suggest(tt.name, tt.candidates)
		want := ""
		if tt.want != "" {
			want = fmt.Sprintf(" (did you mean %q?)", tt.want)
		}
		if got != want {
			t.Errorf("Suggest(%q) = %q; want %q", tt.name, got, want)
		}
	}
}
