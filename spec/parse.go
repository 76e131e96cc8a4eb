package spec

import (
	"fmt"
	"github.com/kgen-dev/kgen/backend"
	"github.com/kgen-dev/kgen/internal/usertext"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/internal/yamlnode"
)

// numberRE is a decimal or scientific literal, as in the formula language.
var numberRE = regexp.MustCompile(`^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$`)

// DefaultThreadgroup is the threads per threadgroup when a spec names none.
const DefaultThreadgroup = 256

// Fields lists the top-level keys of a spec, in the order the contract gives.
var Fields = []string{"kernel", "doc", "kind", "dtypes", "compute", "inputs", "params",
	"constants", "let", "outputs", "math", "threadgroup", "ports", "tolerance", "segments", "backward", "save", "domain", "matmul", "tile", "cuda_tiles", "batch"}

// parser holds the state of reading one spec file.
type parser struct {
	doc   *yamlnode.Doc
	diags *diag.List
	spec  *Spec
	kind  Kind // the spec's kind as written, read first (empty: none)
}

// Parse reads one spec file. path is how diagnostics name it. The result is
// nil when the file is not a YAML mapping at all; otherwise it holds every
// field that could be read, and diags every problem found.
func Parse(path string, src []byte, diags *diag.List) *Spec {
	doc, ok := yamlnode.Parse(path, src, diags)
	if !ok {
		return nil
	}
	top := diag.Pos{Path: path, Line: 1, Col: 1}
	if doc.Root == nil {
		diags.Addf(top, "empty spec: expected a mapping with kernel, dtypes and outputs")
		return nil
	}
	fields, ok := doc.Fields(doc.Root, "a spec", diags)
	if !ok {
		return nil
	}
	p := &parser{doc: doc, diags: diags, spec: &Spec{
		Path: path, Pos: top, Kind: Elementwise, Math: "precise", Domain: "all", Threadgroup: DefaultThreadgroup,
	}}
	for _, f := range fields { // the kind first: messages name its dimensions
		if v, isStr := yamlnode.Scalar(f.Value); f.Key == "kind" && isStr {
			p.kind = Kind(v)
		}
	}
	seen := map[string]bool{}
	for _, f := range fields {
		seen[f.Key] = true
		before := diags.Len()
		p.field(f)
		if declares[f.Key] && diags.Len() > before {
			p.spec.Damaged = append(p.spec.Damaged, f.Key)
		}
	}
	p.applySave()
	for _, req := range []string{"kernel", "dtypes", "outputs"} {
		// A misspelt key ("ouputs") was reported as unknown with the
		// right name: that is the root cause, not a missing field.
		if !seen[req] && !slices.Contains(p.spec.Damaged, req) {
			diags.Addf(p.doc.Pos(doc.Root), "missing required field %q", req)
		}
	}
	return p.spec
}

// declares are the fields that declare names formulas use.
var declares = map[string]bool{"inputs": true, "params": true, "constants": true, "let": true, "outputs": true}

func (p *parser) field(f yamlnode.Field) {
	s := p.spec
	switch f.Key {
	case "kernel":
		s.Kernel = p.checkedName(f.Value, "kernel name", CheckKernelName)
	case "doc":
		s.Doc, _ = p.str(f.Value, "doc")
		if off, what, bad := usertext.Problem(s.Doc, true); bad {
			p.diags.Addf(p.doc.MapScalar(f.Value).At(off), "doc contains %s; write it as plain text", what)
		}
	case "kind":
		s.Kind = Kind(p.enum(f.Value, "kind", []string{string(Elementwise), string(Rowwise), string(Matmul)}, string(s.Kind)))
		s.KindPos = p.doc.Pos(f.Value)
	case "dtypes":
		s.DTypes = p.dtypes(f.Value)
	case "compute":
		s.Compute = p.dtype(f.Value, "compute type", dtype.Floats)
	case "inputs":
		s.Inputs = p.inputs(f.Value)
	case "params":
		s.Params = p.params(f.Value)
	case "constants":
		s.Constants = p.constants(f.Value)
	case "let":
		s.Let = p.formulas(f.Value, "let")
	case "outputs":
		s.Outputs = p.formulas(f.Value, "outputs")
		if yamlnode.IsNull(f.Value) || isEmptySeq(f.Value) {
			p.diags.Addf(f.KeyPos, "a kernel needs at least one output")
		}
	case "math":
		s.Math = p.enum(f.Value, "math", []string{"precise", "fast"}, s.Math)
	case "domain":
		s.Domain = p.enum(f.Value, "domain", []string{"all", "finite"}, s.Domain)
	case "threadgroup":
		s.Threadgroup = p.threadgroup(f.Value)
		s.ThreadgroupPos = f.KeyPos
	case "ports":
		s.Ports = p.ports(f.Value)
	case "tolerance":
		s.Tolerances = p.tolerances(f.Value)
	case "backward":
		s.Backward = p.backward(f.KeyPos, f.Value)
	case "save":
		s.Save = p.save(f.Value)
	case "segments":
		s.Segments = p.segments(f.Value)
		s.SegmentsPos = f.KeyPos
	case "batch":
		s.BatchPos = p.doc.Pos(f.Value)
		s.Batch = p.batchNames(f.Value, "batch")
	case "matmul":
		s.Matmul = p.matmul(f.Value)
	case "tile":
		s.Tile = p.tile(f.Value)
	case "cuda_tiles":
		s.CUDATiles, s.CUDATilesPos = p.cudaTiles(f.Value), f.KeyPos
	default:
		p.diags.Addf(f.KeyPos, "unknown field %q%s", f.Key, diag.Suggest(f.Key, Fields))
		if meant := diag.Closest(f.Key, Fields); declares[meant] || meant == "kernel" || meant == "dtypes" {
			p.spec.Damaged = append(p.spec.Damaged, meant)
		}
	}
}

func isEmptySeq(n ast.Node) bool {
	s, ok := n.(*ast.SequenceNode)
	return ok && len(s.Values) == 0
}

// str reads a string scalar; numbers and booleans are refused so that
// `doc: 12` or `kernel: yes` are not silently stringified.
func (p *parser) str(n ast.Node, what string) (string, bool) {
	switch n.(type) {
	case *ast.StringNode, *ast.LiteralNode:
		v, _ := yamlnode.Scalar(n)
		return v, true
	}
	p.diags.Addf(p.doc.Pos(n), "%s must be a string, not %s", what, yamlnode.Describe(n))
	return "", false
}

func (p *parser) name(n ast.Node, what string) Name { return p.checkedName(n, what, CheckName) }

func (p *parser) checkedName(n ast.Node, what string, check func(string) string) Name {
	v, ok := p.str(n, what)
	pos := p.doc.Pos(n)
	if !ok {
		return Name{Pos: pos}
	}
	if why := check(v); why != "" {
		p.diags.Addf(pos, "%s %q %s", what, v, why)
	}
	return Name{Name: v, Pos: pos}
}

func (p *parser) enum(n ast.Node, what string, allowed []string, def string) string {
	v, ok := p.str(n, what)
	if !ok {
		return def
	}
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	p.diags.Addf(p.doc.Pos(n), "unknown %s %q: want one of %v%s", what, v, allowed, diag.Suggest(v, allowed))
	return def
}

func (p *parser) dtype(n ast.Node, what string, allowed []dtype.DType) TypeRef {
	pos := p.doc.Pos(n)
	v, ok := p.str(n, what)
	if !ok {
		return TypeRef{Pos: pos}
	}
	t := dtype.Parse(v)
	for _, a := range allowed {
		if t == a {
			return TypeRef{Type: t, Pos: pos}
		}
	}
	names := dtype.Names(allowed)
	hint := diag.Suggest(v, names)
	if alias, ok := typeAliases[strings.ToLower(v)]; ok && slices.Contains(allowed, alias) {
		hint = fmt.Sprintf(" (did you mean %q?)", alias.String())
	}
	p.diags.Addf(pos, "unknown %s %q: want one of %v%s", what, v, names, hint)
	return TypeRef{Pos: pos}
}

// typeAliases are other spellings of kgen's types, for suggestions; f64
// maps to f32, the widest type Metal computes in.
var typeAliases = map[string]dtype.DType{
	"f64": dtype.F32, "float64": dtype.F32, "double": dtype.F32, "float": dtype.F32,
	"float32": dtype.F32, "fp32": dtype.F32, "half": dtype.F16, "float16": dtype.F16,
	"fp16": dtype.F16, "bfloat": dtype.BF16, "bfloat16": dtype.BF16, "int": dtype.I32,
	"int32": dtype.I32, "uint": dtype.U32, "uint32": dtype.U32,
}

func (p *parser) dtypes(n ast.Node) []TypeRef {
	items, ok := p.doc.Seq(n, "dtypes", p.diags)
	if !ok {
		return nil
	}
	if len(items) == 0 {
		p.diags.Addf(p.doc.Pos(n), "dtypes must name at least one storage type")
	}
	var out []TypeRef
	seen := map[dtype.DType]bool{}
	for _, it := range items {
		t := p.dtype(it, "dtype", dtype.Floats)
		if t.Type == dtype.Invalid {
			continue
		}
		if seen[t.Type] {
			p.diags.Addf(t.Pos, "dtype %s listed twice", t.Type)
			continue
		}
		seen[t.Type] = true
		out = append(out, t)
	}
	return out
}

func (p *parser) threadgroup(n ast.Node) int {
	v, ok := n.(*ast.IntegerNode)
	if !ok {
		p.diags.Addf(p.doc.Pos(n), "threadgroup must be an integer, not %s", yamlnode.Describe(n))
		return DefaultThreadgroup
	}
	tg, err := strconv.ParseInt(v.GetToken().Value, 0, 64)
	if most := backend.MaxThreads(); err != nil || tg < 32 || tg > int64(most) || tg&(tg-1) != 0 {
		p.diags.Addf(p.doc.Pos(n), "threadgroup %s must be a power of two from 32 to %d", v.GetToken().Value, most)
		return DefaultThreadgroup
	}
	return int(tg)
}

// numberProblem says what is wrong with a YAML number kgen cannot bake
// ("" when nothing): YAML's .nan and .inf, and hexadecimal, octal and
// binary integers, are numbers to YAML but not decimal literals the
// generated sources and the formula language share; 1e400 is past
// float64, so past every compute type (issue 12, class 5).
func numberProblem(text string) string {
	t := strings.TrimLeft(text, "+-")
	switch strings.ToLower(t) {
	case ".nan":
		return "is YAML's NaN: kgen bakes finite decimal numbers only"
	case ".inf":
		return "is YAML's infinity: kgen bakes finite decimal numbers only (the largest f32 is 3.4028235e38)"
	}
	for _, base := range []struct{ prefix, name string }{{"0x", "a hexadecimal"}, {"0o", "an octal"}, {"0b", "a binary"}} {
		if strings.HasPrefix(strings.ToLower(t), base.prefix) {
			if v, err := strconv.ParseInt(text, 0, 64); err == nil {
				return fmt.Sprintf("is %s literal: write it in decimal (%d)", base.name, v)
			}
			return fmt.Sprintf("is %s literal: write it in decimal", base.name)
		}
	}
	if numberRE.MatchString(text) {
		if v, err := strconv.ParseFloat(text, 64); err != nil && math.IsInf(v, 0) {
			return "is out of range even for float64; the largest f32 is 3.4028235e38, the largest f16 65504"
		}
	}
	return ""
}

// number reads a finite number scalar and returns it with its source text.
// Plain scalars like 1e-6, which YAML 1.1 reads as strings, count as numbers.
func (p *parser) number(n ast.Node, what string) (float64, string, bool) {
	if text, ok := yamlnode.Scalar(n); ok {
		if why := numberProblem(text); why != "" {
			p.diags.Addf(p.doc.Pos(n), "%s %s %s", what, text, why)
			return 0, "", false
		}
	}
	if s, ok := n.(*ast.StringNode); ok && s.GetToken().Type == token.StringType {
		if _, err := strconv.ParseFloat(s.Value, 64); err == nil && numberRE.MatchString(s.Value) {
			return p.number(&ast.FloatNode{BaseNode: s.BaseNode, Token: s.Token}, what)
		}
	}
	switch n.(type) {
	case *ast.IntegerNode, *ast.FloatNode:
		text, _ := yamlnode.Scalar(n)
		v, err := strconv.ParseFloat(text, 64)
		if err != nil {
			if i, ierr := strconv.ParseInt(text, 0, 64); ierr == nil {
				return float64(i), text, true
			}
			p.diags.Addf(p.doc.Pos(n), "%s %q is not a number kgen can read", what, text)
			return 0, "", false
		}
		if math.IsInf(v, 0) {
			p.diags.Addf(p.doc.Pos(n), "%s %s overflows", what, text)
			return 0, "", false
		}
		return v, text, true
	}
	p.diags.Addf(p.doc.Pos(n), "%s must be a number, not %s", what, yamlnode.Describe(n))
	return 0, "", false
}
