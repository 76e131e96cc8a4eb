package kgen_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/kgen-dev/kgen/internal/cli"
	"github.com/kgen-dev/kgen/spec"
)

// compileSchema compiles spec.Schema, the schema `kgen schema` prints.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(spec.Schema))
	if err != nil {
		t.Fatalf("spec.Schema is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("kgen.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("kgen.schema.json")
	if err != nil {
		t.Fatalf("spec.Schema does not compile: %v", err)
	}
	return sch
}

// numberRE is the plain-scalar number syntax spec.Parse accepts (YAML 1.1
// reads 1e-6 as a string; kgen, like YAML 1.2, as a number).
var numberRE = regexp.MustCompile(`^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$`)

// yamlToJSON converts one YAML document to the JSON value an editor's YAML
// language server validates: duplicate keys keep the last value.
func yamlToJSON(src []byte) (any, error) {
	file, err := parser.ParseBytes(src, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		return nil, err
	}
	if len(file.Docs) != 1 {
		return nil, fmt.Errorf("%d YAML documents; a spec is one", len(file.Docs))
	}
	v, err := nodeValue(file.Docs[0].Body)
	if err != nil {
		return nil, err
	}
	// Round-trip through JSON so numbers come out as the validator expects.
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(data))
}

func nodeValue(n ast.Node) (any, error) {
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return nil, nil
	case *ast.TagNode:
		return nodeValue(v.Value)
	case *ast.AnchorNode:
		return nodeValue(v.Value)
	case *ast.MappingValueNode:
		return nodeValue(&ast.MappingNode{Values: []*ast.MappingValueNode{v}})
	case *ast.MappingNode:
		m := map[string]any{}
		for _, mv := range v.Values {
			key, err := nodeValue(mv.Key)
			if err != nil {
				return nil, err
			}
			val, err := nodeValue(mv.Value)
			if err != nil {
				return nil, err
			}
			m[fmt.Sprint(key)] = val
		}
		return m, nil
	case *ast.SequenceNode:
		out := []any{}
		for _, item := range v.Values {
			val, err := nodeValue(item)
			if err != nil {
				return nil, err
			}
			out = append(out, val)
		}
		return out, nil
	case *ast.IntegerNode, *ast.FloatNode:
		return strconv.ParseFloat(strings.ReplaceAll(n.GetToken().Value, "_", ""), 64)
	case *ast.BoolNode:
		return v.Value, nil
	case *ast.StringNode:
		if v.GetToken().Type == token.StringType && numberRE.MatchString(v.Value) {
			return strconv.ParseFloat(v.Value, 64)
		}
		return v.Value, nil
	case *ast.LiteralNode:
		return v.Value.Value, nil
	}
	return nil, fmt.Errorf("unsupported YAML node %T", n)
}

// specFiles lists the *.yaml and *.yml files under dir.
func specFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ext := filepath.Ext(p); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// validate reports why the schema rejects the spec file, or nil.
func validate(sch *jsonschema.Schema, file string) error {
	src, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	v, err := yamlToJSON(src)
	if err != nil {
		return fmt.Errorf("not a YAML spec document: %w", err)
	}
	return sch.Validate(v)
}

// TestSchemaAcceptsValidSpecs validates every spec kgen accepts: kgen's own
// specs, the golden cases' and the one `kgen init` writes.
func TestSchemaAcceptsValidSpecs(t *testing.T) {
	sch := compileSchema(t)
	repo, err := filepath.Abs("..") // absolute: the test changes folder below
	if err != nil {
		t.Fatal(err)
	}
	files := specFiles(t, filepath.Join(repo, "specs"))
	golden, _ := filepath.Glob(filepath.Join(repo, "testdata", "golden", "*", "specs"))
	for _, dir := range golden {
		files = append(files, specFiles(t, dir)...)
	}
	initDir := t.TempDir()
	t.Chdir(initDir)
	var out, errb bytes.Buffer
	if code := cli.Main([]string{"init"}, &out, &errb); code != 0 {
		t.Fatalf("kgen init exited %d: %s", code, errb.String())
	}
	files = append(files, specFiles(t, filepath.Join(initDir, "specs"))...)
	if len(files) < 10 {
		t.Fatalf("found only %d spec files", len(files))
	}
	for _, f := range files {
		if err := validate(sch, f); err != nil {
			t.Errorf("%s: the schema rejects a valid spec:\n%v", f, err)
		}
	}
}

// TestSchemaOnBadSpecs checks each testdata/bad case against its schema.txt:
// "reject" when the mistake is one the schema can see (a field, a type, an
// enum, a pattern; at least one spec file of the case is rejected), "accept"
// when only kgen's own checks find it (formulas, names, cross-file rules;
// every file passes the schema).
func TestSchemaOnBadSpecs(t *testing.T) {
	sch := compileSchema(t)
	root := filepath.Join("..", "testdata", "bad")
	for _, name := range caseDirs(t, root) {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(root, name, "schema.txt"))
			if err != nil {
				t.Fatal(err)
			}
			want := strings.TrimSpace(string(raw))
			if want != "reject" && want != "accept" {
				t.Fatalf("schema.txt says %q; want reject or accept", want)
			}
			var rejected []string
			for _, f := range specFiles(t, filepath.Join(root, name, "specs")) {
				if err := validate(sch, f); err != nil {
					rejected = append(rejected, fmt.Sprintf("%s: %v", filepath.Base(f), err))
				}
			}
			switch {
			case want == "reject" && len(rejected) == 0:
				t.Errorf("schema.txt says reject, but the schema accepts every spec file")
			case want == "accept" && len(rejected) > 0:
				t.Errorf("schema.txt says accept, but the schema rejects:\n%s", strings.Join(rejected, "\n"))
			}
		})
	}
}
