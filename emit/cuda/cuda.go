// Package cuda writes a kernel's CUDA C++ source from the same IR as the
// Metal emitter: one templated kernel body and one extern "C" __global__
// entry point per storage dtype, named by the variant's host name
// ("<kernel>_<dtype>"), parameters in binding order (tensor pointers, then
// the args struct by value, its fields as laid out by the IR). It is the
// Metal emitter's structure with a second table of differences (type names,
// function spellings per math mode, address spaces, launch geometry); the
// decisions live here, templates/cuda only lays out the flat view.
//
// Shape (elementwise): one 16-byte vector of the narrowest tensor per thread
// (ir.Kernel.ElemsPerThread, as for Metal), a one-shot grid of
// ceildiv(ceildiv(n, ElemsPerThread), Threadgroup) blocks, the tail handled
// by the last thread with guarded scalar moves, __launch_bounds__ of the
// spec's threadgroup. The .cu file is compiled ahead of time by `kgen cuda`
// (nvcc -fatbin); `kgen gen` needs no CUDA toolkit.
package cuda

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"text/template"

	"github.com/kgen-dev/kgen/dtype"
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
	Header      string
	Kernel      string
	Doc         []string
	SpecPath    string
	Math        string
	Formulas    []string
	Prelude     []string
	ArgsStruct  string
	ArgsFields  []field
	Params      []string // body parameter declarations, in binding order
	ParamNames  string
	EntryNames  string
	CallArgs    string
	Compute     string
	PerThread   int
	Inputs      []tensor
	Outputs     []tensor
	EvalFuncs   []evalFunc
	EvalName    string // the stage function (ir.Stage.Name)
	EvalArgs    string
	Instances   []instance
	Threadgroup int
}

type field struct{ Type, Name string }

type tensor struct{ Name, Type string }

type evalFunc struct {
	Params string
	Lines  []string
}

type instance struct {
	HostName, Type string
	Params         []string // the entry point's parameters, T replaced by the storage type
}

// Supported reports whether the CUDA emitter can write kernel k's port.
func Supported(k *ir.Kernel) error {
	if k.Kind != ir.Elementwise && k.Kind != ir.Rowwise {
		return fmt.Errorf("the CUDA emitter supports elementwise and rowwise kernels only, not %s", k.Kind)
	}
	return nil
}

// Emit returns the .cu source of one kernel.
func Emit(k *ir.Kernel, opts Options) ([]byte, error) {
	if err := Supported(k); err != nil {
		return nil, err
	}
	if k.Kind == ir.Rowwise {
		return emitRows(k, opts)
	}
	v := buildView(k, opts)
	for _, name := range preludeBlocks(k) {
		var block bytes.Buffer
		if err := kernelTemplate.ExecuteTemplate(&block, name, nil); err != nil {
			return nil, fmt.Errorf("cuda prelude %s: %w", name, err)
		}
		v.Prelude = append(v.Prelude, strings.TrimSpace(block.String()))
	}
	var buf bytes.Buffer
	if err := kernelTemplate.ExecuteTemplate(&buf, "kernel.tmpl", v); err != nil {
		return nil, fmt.Errorf("cuda template for %s: %w", k.Name, err)
	}
	return tidy(buf.Bytes()), nil
}

// TypeName is the CUDA spelling of a storage, compute or field type.
func TypeName(t dtype.DType) string { return cudaNames[t] }

func buildView(k *ir.Kernel, opts Options) view {
	v := view{
		Header: opts.Header, Kernel: k.Name, SpecPath: k.SpecPath, Math: k.Math,
		ArgsStruct: k.Name + "_args", Compute: "T", PerThread: k.Schedule.(*ir.Elems).PerThread, Threadgroup: k.Threadgroup,
	}
	if k.Compute != dtype.Invalid {
		v.Compute = cudaNames[k.Compute]
	}
	if k.Doc != "" {
		v.Doc = strings.Split(strings.TrimSpace(k.Doc), "\n")
	}
	for _, s := range k.Steps {
		v.Formulas = append(v.Formulas, s.Name+" = "+s.Source)
	}
	var names, calls []string
	for _, b := range k.Bindings {
		names = append(names, b.Name)
		calls = append(calls, b.Name)
		switch b.Role {
		case ir.Input:
			v.Inputs = append(v.Inputs, tensor{Name: b.Name, Type: elemType(b.DType)})
		case ir.Output:
			v.Outputs = append(v.Outputs, tensor{Name: b.Name, Type: elemType(b.DType)})
		case ir.Args:
			for _, f := range b.Fields {
				v.ArgsFields = append(v.ArgsFields, field{Type: cudaNames[f.Type], Name: f.Name})
			}
		}
	}
	v.Params = params(k, "T")
	v.ParamNames = strings.Join(names, ", ")
	v.CallArgs = strings.Join(calls, ", ")
	v.EvalName = k.Stages()[0].Name
	v.EvalArgs = evalArgs(k)
	for _, c := range k.ComputeTypes() {
		v.EvalFuncs = append(v.EvalFuncs, evalFor(k, c))
	}
	var entries []string
	for _, variant := range k.Variants {
		t := cudaNames[variant.DType]
		v.Instances = append(v.Instances, instance{HostName: variant.HostName, Type: t, Params: params(k, t)})
		entries = append(entries, variant.HostName)
	}
	v.EntryNames = strings.Join(entries, ", ")
	return v
}

// elemType is a binding's element type in the kernel body.
func elemType(t dtype.DType) string {
	if t == dtype.Invalid {
		return "T"
	}
	return cudaNames[t]
}

// params lays out the kernel parameters in binding order; storage is the
// spelling of the variant's storage type ("T" in the template body).
func params(k *ir.Kernel, storage string) []string {
	var out []string
	for _, b := range k.Bindings {
		t := elemType(b.DType)
		if t == "T" {
			t = storage
		}
		switch b.Role {
		case ir.Input:
			out = append(out, fmt.Sprintf("const %s* __restrict__ %s", t, b.Name))
		case ir.Output:
			out = append(out, fmt.Sprintf("%s* __restrict__ %s", t, b.Name))
		case ir.Args:
			out = append(out, fmt.Sprintf("const %s_args %s", k.Name, b.Name))
		}
	}
	return out
}

// evalArgs converts each input element and param to the compute type.
func evalArgs(k *ir.Kernel) string {
	var args []string
	for _, b := range k.BindingsOf(ir.Input) {
		args = append(args, "kgen_cvt<C>("+b.Name+"_v[i])")
	}
	for _, p := range k.Params() {
		args = append(args, "kgen_cvt<C>(args."+p.Name+")")
	}
	for _, b := range k.BindingsOf(ir.Output) {
		args = append(args, b.Name+"_c")
	}
	return strings.Join(args, ", ")
}

// evalFor writes the per-element formulas in one compute type.
func evalFor(k *ir.Kernel, c dtype.DType) evalFunc {
	r := renderer{compute: c, d: dialectFor(k.Math)}
	ct := cudaNames[c]
	var ps []string
	for _, b := range k.BindingsOf(ir.Input) {
		ps = append(ps, ct+" "+b.Name)
	}
	for _, p := range k.Params() {
		ps = append(ps, ct+" "+p.Name)
	}
	for _, b := range k.BindingsOf(ir.Output) {
		ps = append(ps, ct+"& "+b.Name)
	}
	f := evalFunc{Params: strings.Join(ps, ", ")}
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
func preludeBlocks(k *ir.Kernel) []string {
	d := dialectFor(k.Math)
	used := map[string]bool{}
	var walk func(e *ir.Expr)
	walk = func(e *ir.Expr) {
		if e.Op == ir.OpCall {
			if sp, _ := d.spell(e.Func); sp.Prelude != "" {
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
	if k.Kind == ir.Rowwise {
		for _, r := range k.Rows().Reductions {
			walk(r.Arg)
		}
	}
	var out []string
	for f := range used {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// tidy removes the blank lines that template actions leave behind, keeping
// single blank separators.
func tidy(src []byte) []byte {
	var out []string
	for _, l := range strings.Split(string(src), "\n") {
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

var kernelTemplate = template.Must(template.New("cuda").Option("missingkey=error").ParseFS(templates.FS, "cuda/*.tmpl"))
