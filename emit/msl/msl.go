// Package msl writes a kernel's Metal Shading Language source from the IR:
// one templated kernel, one [[host_name]] instantiation per storage dtype.
// Decisions are made here in Go; templates/msl only lays out the flat view.
package msl

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"text/template"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/funcs"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/templates"
)

// Options are the config settings that shape the output.
type Options struct {
	// Header is the first line of the file ("// Code generated … DO NOT EDIT.").
	Header string
}

// view is the flat data the kernel template reads.
type view struct {
	Header       string
	Kernel       string
	Doc          []string
	SpecPath     string
	Math         string
	Formulas     []string // "name = formula", as written
	Prelude      []string // rendered prelude functions, in name order
	VectorTypes  []string // element types needing 16-byte load/store helpers
	ArgsStruct   string
	ArgsFields   []field
	Params       []string // kernel parameter declarations, in binding order
	Compute      string   // "float", or "T" when compute = storage type
	PerThread    int
	Inputs       []tensor
	Outputs      []tensor
	EvalFuncs    []evalFunc
	EvalName     string // the stage function (ir.Stage.Name)
	EvalArgs     string // arguments passed to the eval function
	Instances    []instance
	Threadgroup  int
	Grid         string
	BindingNotes []string
}

type field struct{ Type, Name string }

type tensor struct {
	Name string
	Type string // "T" or a fixed MSL type
}

type evalFunc struct {
	Compute string // MSL compute type
	Params  string // "float x, float cap, thread float& y"
	Lines   []string
}

type instance struct{ HostName, Type string }

// Emit returns the .metal source of one kernel.
func Emit(k *ir.Kernel, opts Options) ([]byte, error) {
	if k.Kind == ir.Rowwise {
		return emitRows(k, opts)
	}
	v := buildView(k, opts)
	for _, name := range preludeBlocks(k) {
		var block bytes.Buffer
		if err := kernelTemplate.ExecuteTemplate(&block, name, nil); err != nil {
			return nil, fmt.Errorf("msl prelude %s: %w", name, err)
		}
		v.Prelude = append(v.Prelude, strings.TrimSpace(block.String()))
	}
	var buf bytes.Buffer
	if err := kernelTemplate.ExecuteTemplate(&buf, "kernel.tmpl", v); err != nil {
		return nil, fmt.Errorf("msl template for %s: %w", k.Name, err)
	}
	return tidy(buf.Bytes()), nil
}

func buildView(k *ir.Kernel, opts Options) view {
	v := view{
		Header: opts.Header, Kernel: k.Name, SpecPath: k.SpecPath, Math: k.Math,
		ArgsStruct: k.Name + "_args", Compute: "T", PerThread: k.Schedule.(*ir.Elems).PerThread,
		Threadgroup: k.Threadgroup, Grid: strings.Join(k.Grid(ir.Metal), ", "),
	}
	if k.Compute != dtype.Invalid {
		v.Compute = k.Compute.MSL()
	}
	if k.Doc != "" {
		v.Doc = strings.Split(strings.TrimSpace(k.Doc), "\n")
	}
	for _, s := range k.Steps {
		v.Formulas = append(v.Formulas, s.Name+" = "+s.Source)
	}
	v.VectorTypes = vectorTypes(k)
	v.Params, v.Inputs, v.Outputs, v.ArgsFields = signature(k)
	v.EvalName = k.Stages()[0].Name
	v.EvalArgs = evalArgs(k)
	for _, c := range k.ComputeTypes() {
		v.EvalFuncs = append(v.EvalFuncs, evalFor(k, c))
	}
	for _, variant := range k.Variants {
		v.Instances = append(v.Instances, instance{HostName: variant.HostName, Type: variant.DType.MSL()})
	}
	return v
}

// mslType is a binding's element type in the kernel template.
func mslType(t dtype.DType) string {
	if t == dtype.Invalid {
		return "T"
	}
	return t.MSL()
}

// signature lays out the kernel parameters in binding order.
func signature(k *ir.Kernel) (params []string, ins, outs []tensor, fields []field) {
	for _, b := range k.Bindings {
		switch b.Role {
		case ir.Input:
			ins = append(ins, tensor{Name: b.Name, Type: mslType(b.DType)})
			params = append(params, fmt.Sprintf("device const %s* %s [[buffer(%d)]]", mslType(b.DType), b.Name, b.Index))
		case ir.Output:
			outs = append(outs, tensor{Name: b.Name, Type: mslType(b.DType)})
			params = append(params, fmt.Sprintf("device %s* %s [[buffer(%d)]]", mslType(b.DType), b.Name, b.Index))
		case ir.Args:
			params = append(params, fmt.Sprintf("constant %s_args& %s [[buffer(%d)]]", k.Name, b.Name, b.Index))
			for _, f := range b.Fields {
				fields = append(fields, field{Type: f.Type.MSL(), Name: f.Name})
			}
		}
	}
	params = append(params, "uint gid [[thread_position_in_grid]]")
	return params, ins, outs, fields
}

// evalArgs converts each input element and param to the compute type.
func evalArgs(k *ir.Kernel) string {
	var args []string
	for _, b := range k.BindingsOf(ir.Input) {
		args = append(args, "C("+b.Name+"_v[i])")
	}
	for _, p := range k.Params() {
		args = append(args, "C(args."+p.Name+")")
	}
	for _, b := range k.BindingsOf(ir.Output) {
		args = append(args, b.Name+"_c")
	}
	return strings.Join(args, ", ")
}

// evalFor writes the per-element formulas in one compute type.
func evalFor(k *ir.Kernel, c dtype.DType) evalFunc {
	r := renderer{compute: c, math: k.Math}
	ct := c.MSL()
	var params []string
	for _, b := range k.BindingsOf(ir.Input) {
		params = append(params, ct+" "+b.Name)
	}
	for _, p := range k.Params() {
		params = append(params, ct+" "+p.Name)
	}
	for _, b := range k.BindingsOf(ir.Output) {
		params = append(params, "thread "+ct+"& "+b.Name)
	}
	f := evalFunc{Compute: ct, Params: strings.Join(params, ", ")}
	for _, con := range k.Constants {
		val, _ := dtype.Literal(con.Text, c)
		f.Lines = append(f.Lines, fmt.Sprintf("const %s %s = %s; // %s", ct, con.Name, r.number(val), con.Text))
	}
	for _, s := range k.Steps {
		if s.Output {
			f.Lines = append(f.Lines, fmt.Sprintf("%s = %s;", s.Name, r.expr(s.Expr)))
			continue
		}
		t := ct
		if s.Expr.Bool {
			t = "bool"
		}
		f.Lines = append(f.Lines, fmt.Sprintf("const %s %s = %s;", t, s.Name, r.expr(s.Expr)))
	}
	return f
}

// preludeBlocks names the prelude blocks of the functions the kernel calls,
// sorted.
func preludeBlocks(k *ir.Kernel, extra ...*ir.Expr) []string {
	used := map[string]bool{}
	var walk func(e *ir.Expr)
	walk = func(e *ir.Expr) {
		if f, ok := funcs.Lookup(e.Func); ok && e.Op == ir.OpCall {
			if sp := f.MSL.Mode(k.Math); sp.Prelude != "" {
				used[sp.Prelude] = true
			}
		}
		for _, a := range e.Args {
			walk(a)
		}
	}
	for _, s := range k.Steps {
		walk(s.Expr)
	}
	for _, e := range extra {
		walk(e)
	}
	var out []string
	for block := range used {
		out = append(out, block)
	}
	sort.Strings(out)
	return out
}

// vectorTypes lists the element types of all tensors in all variants.
func vectorTypes(k *ir.Kernel) []string {
	seen := map[dtype.DType]bool{}
	for _, b := range k.Bindings {
		switch {
		case b.Role == ir.Args:
		case b.DType != dtype.Invalid:
			seen[b.DType] = true
		default:
			for _, v := range k.Variants {
				seen[v.DType] = true
			}
		}
	}
	var out []string
	for _, t := range dtype.Floats {
		if seen[t] {
			out = append(out, t.MSL())
		}
	}
	return out
}

// tidy removes the blank lines that template actions leave behind, keeping
// single blank separators.
func tidy(src []byte) []byte {
	lines := strings.Split(string(src), "\n")
	var out []string
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if l == "" && (len(out) == 0 || out[len(out)-1] == "") {
			continue
		}
		out = append(out, l)
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return []byte(strings.Join(out, "\n") + "\n")
}

var kernelTemplate = template.Must(template.New("msl").Option("missingkey=error").
	Funcs(funcMap()).ParseFS(templates.FS, "msl/*.tmpl"))
