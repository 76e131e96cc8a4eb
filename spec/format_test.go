package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/diag"
)

func TestFormat(t *testing.T) {
	in := `# yaml-language-server: $schema=../kgen.schema.json
# GELU, by hand.
outputs:
  - y: 0.5 * x * (1 + tanh(inner))   # the output
kernel: gelu_tanh
# the storage types
dtypes: [f32, f16, bf16]
let:
  - inner: k0 * (x + 0.044715 * x * x * x)
constants:
  k0: 0.7978845608028654
tolerance:
  f32: {abs: 1e-6, rel: 1e-5}
inputs: [x]


`
	want := `# yaml-language-server: $schema=../kgen.schema.json
# GELU, by hand.
kernel: gelu_tanh
# the storage types
dtypes: [f32, f16, bf16]
inputs: [x]
constants:
  k0: 0.7978845608028654
let:
  - inner: k0 * (x + 0.044715 * x * x * x)
outputs:
  - y: 0.5 * x * (1 + tanh(inner)) # the output
tolerance:
  f32: {abs: 1e-6, rel: 1e-5}
`
	got, err := Format("specs/g.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("Format:\n%s\nwant:\n%s", got, want)
	}
	again, err := Format("specs/g.yaml", got)
	if err != nil || string(again) != want {
		t.Errorf("Format is not idempotent:\n%s", again)
	}
}

// TestFormatKeepsMeaning: every spec of this repository and of the golden
// tests formats to a spec that parses to the same model.
func TestFormatKeepsMeaning(t *testing.T) {
	files, _ := filepath.Glob("../specs/*.yaml")
	more, _ := filepath.Glob("../testdata/golden/*/specs/*.yaml")
	for _, f := range append(files, more...) {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Format(f, src)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if a, b := parsed(t, f, src), parsed(t, f, out); a != b {
			t.Errorf("%s: formatting changed the spec:\n%s\nformatted:\n%s", f, src, out)
		}
	}
}

// parsed is the spec model of src, with every position zeroed (reordering
// keys moves lines), printed.
func parsed(t *testing.T, path string, src []byte) string {
	var diags diag.List
	s := Parse(path, src, &diags)
	if diags.Len() > 0 {
		t.Fatalf("%s: %v", path, diags.Err())
	}
	v := reflect.ValueOf(s).Elem()
	zeroPos(v)
	// Unexported source maps keep theirs: drop them from the text.
	return lineCol.ReplaceAllString(dump(v), "")
}

// dump writes v with pointers followed (%+v would print their addresses).
func dump(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return "nil"
		}
		return "&" + dump(v.Elem())
	case reflect.Struct:
		var b strings.Builder
		b.WriteString("{")
		for i := 0; i < v.NumField(); i++ {
			fmt.Fprintf(&b, "%s:%s ", v.Type().Field(i).Name, dump(v.Field(i)))
		}
		return b.String() + "}"
	case reflect.Slice, reflect.Array:
		var b strings.Builder
		b.WriteString("[")
		for i := 0; i < v.Len(); i++ {
			b.WriteString(dump(v.Index(i)) + " ")
		}
		return b.String() + "]"
	}
	return fmt.Sprint(v)
}

var (
	posType = reflect.TypeOf(diag.Pos{})
	lineCol = regexp.MustCompile(`Line:\d+ Col:\d+`)
)

// zeroPos zeroes every diag.Pos reachable from v through exported fields,
// pointers, slices and maps of structs.
func zeroPos(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			zeroPos(v.Elem())
		}
	case reflect.Struct:
		if v.Type() == posType {
			if v.CanSet() {
				v.Set(reflect.Zero(posType))
			}
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				zeroPos(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			zeroPos(v.Index(i))
		}
	}
}

func TestFormatBadYAML(t *testing.T) {
	_, err := Format("specs/bad.yaml", []byte("kernel: [x\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "specs/bad.yaml:") {
		t.Errorf("Format of bad YAML: %v; want a positioned error", err)
	}
}

// TestLayoutCoversFields: every spec field has a place in the layout.
func TestLayoutCoversFields(t *testing.T) {
	for _, f := range Fields {
		found := false
		for _, l := range layout {
			found = found || l == f
		}
		if !found {
			t.Errorf("field %q has no place in fmt's layout", f)
		}
	}
}
