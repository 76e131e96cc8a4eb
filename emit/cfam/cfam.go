// Package cfam writes a kernel's C-family source (Metal Shading Language or
// CUDA C++) from the IR: one frame (templates/cfam/frame.tmpl), one
// stage-function writer driven by ir.Stages for every kind, one body writer
// per kind (the bodies map), one expression renderer. Metal and CUDA are
// Dialect values: spellings, plus the few strategies that are one backend's
// own (CUDA's 16-byte vector paths, Metal's [[host_name]] instantiations).
// Decisions are made here in Go; templates hold the prose and the fixed
// prelude blocks. Dialects is the table of backends generate loops over.
//
// A body writer may own a backend's code (ownCode) instead of filling the
// templated body and instances: CUDA's matmul does, writing host functions
// around CUTLASS GEMMs and kgen's SIMT GEMM (cutlass.go, simt.go) that
// `kgen cuda` builds into a shared library (emit/cuda's build facts).
package cfam

import (
	"bytes"
	"fmt"
	"github.com/kgen-dev/kgen/internal/usertext"
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

// bodyWriter is what one kind adds to the frame: its lines of the header,
// the helper blocks it calls, the thread coordinates it reads and the body
// of the kernel function. Every other part of the file is kind-neutral.
type bodyWriter interface {
	describe(k *ir.Kernel, d *Dialect, v *view)
	helpers(k *ir.Kernel, d *Dialect) []helper
	threads(k *ir.Kernel) []ThreadIndex
	body(w *Writer, k *ir.Kernel, d *Dialect)
}

// ownCode is a body writer that, in some dialects, writes the kernel code
// after the stage functions itself instead of one templated body and the
// dialect's entry points (CUDA's matmul: CUTLASS GEMMs and host entry
// points). owns says whether it does for k in d, or why it cannot.
type ownCode interface {
	owns(k *ir.Kernel, d *Dialect) (bool, error)
	writeOwn(w *Writer, k *ir.Kernel, d *Dialect)
}

// noteKinder is a body writer whose prose (title_<kind>, launch_<kind>)
// depends on the kernel and dialect: the CUDA chain is no CUTLASS GEMM.
type noteKinder interface {
	noteKind(k *ir.Kernel, d *Dialect) string
}

// bodies is the one place that knows every kind; a test fails when a kind
// is missing.
var bodies = map[ir.Kind]bodyWriter{
	ir.Elementwise: elems{},
	ir.Rowwise:     rows{},
	ir.KindMatmul:  matmul{},
}

// view is the data of the frame template and the prose templates.
type view struct {
	Header, Kernel, SpecPath, Math string
	Title, Launch                  string // rendered from the dialect's notes
	Doc                            []string
	Computes                       string
	Formulas                       []string
	Schedule                       []string
	ScheduleHead                   string   // the heading of Schedule ("Passes over each row")
	Head                           string   // the dialect's includes and conversions
	Blocks                         []string // prelude and helper blocks
	ArgsStruct                     string
	ArgsFields                     []field
	Code                           string // stage functions, kernel, entry points
	// For the prose and the entry points:
	Grid, ParamNames, EntryNames string
	Threads                      int
	PerThread                    string // elements per thread: a number or a rule over the element size
	MinBlocks                    int    // CUDA's __launch_bounds__ minimum resident blocks (0: none)
	kernel                       *ir.Kernel
	d                            *Dialect
}

type field struct{ Type, Name string }

// helper is one fixed block of the dialect's templates and its data.
type helper struct {
	name string
	data any
}

// Supported reports whether a C-family emitter can write kernel k.
func Supported(k *ir.Kernel) error {
	if _, ok := bodies[k.Kind]; !ok {
		return fmt.Errorf("the C-family emitters have no body writer for %s kernels", k.Kind)
	}
	return nil
}

// Emit returns the source of one kernel in dialect d.
func Emit(k *ir.Kernel, d *Dialect, opts Options) ([]byte, error) {
	bw, ok := bodies[k.Kind]
	if !ok {
		return nil, Supported(k)
	}
	if why, refused := d.Refuses[k.Kind]; refused {
		return nil, fmt.Errorf("kernel %s: the %s emitter does not write %s kernels: %s", k.Name, d.Name, k.Kind, why)
	}
	own := false
	if oc, ok := bw.(ownCode); ok {
		var err error
		if own, err = oc.owns(k, d); err != nil {
			return nil, err
		}
	}
	v := newView(k, d, opts)
	bw.describe(k, d, v)
	tmpl := d.templates()
	kind := k.Kind.String()
	if nk, ok := bw.(noteKinder); ok {
		kind = nk.noteKind(k, d)
	}
	parts := []struct {
		to   *string
		name string
	}{{&v.Title, "title_" + kind}, {&v.Launch, "launch_" + kind}, {&v.Head, "head"}}
	for _, p := range parts {
		s, err := run(tmpl, p.name, v)
		if err != nil {
			return nil, err
		}
		*p.to = s
	}
	var helpers []helper
	for _, name := range preludeBlocks(k, d) {
		helpers = append(helpers, helper{name: name})
	}
	for _, h := range append(helpers, bw.helpers(k, d)...) {
		block, err := run(tmpl, h.name, h.data)
		if err != nil {
			return nil, err
		}
		v.Blocks = append(v.Blocks, block)
	}
	for i, f := range v.Formulas {
		v.Formulas[i] = usertext.Comment(f)
	}
	v.Code = code(k, d, bw, v, own)
	out, err := run(tmpl, "frame.tmpl", v)
	if err != nil {
		return nil, err
	}
	return tidy([]byte(out)), nil
}

// newView fills the kind-neutral parts of the view.
func newView(k *ir.Kernel, d *Dialect, opts Options) *view {
	ek := entryKernel(k)
	v := &view{ScheduleHead: "Passes over each row", Header: opts.Header, Kernel: k.Name, SpecPath: usertext.Comment(k.SpecPath), Math: k.Math,
		ArgsStruct: k.Name + "_args", Threads: k.Threadgroup, kernel: ek, d: d,
		Grid: strings.Join(k.Grid(ir.Metal), ", ")}
	if k.Doc != "" {
		v.Doc = usertext.Lines(k.Doc)
	}
	var names, entries []string
	for _, b := range ek.Bindings {
		names = append(names, b.Name)
		if b.Role == ir.Args {
			for _, f := range b.Fields {
				v.ArgsFields = append(v.ArgsFields, field{Type: d.Types[f.Type], Name: f.Name})
			}
		}
	}
	for _, variant := range k.Variants {
		entries = append(entries, variant.HostName)
	}
	v.ParamNames, v.EntryNames = strings.Join(names, ", "), strings.Join(entries, ", ")
	return v
}

// code writes the stage functions, the kernel function and the entry points.
func code(k *ir.Kernel, d *Dialect, bw bodyWriter, v *view, own bool) string {
	w := &Writer{}
	for _, c := range k.ComputeTypes() {
		for _, st := range k.Stages() {
			stageFunc(w, k, d, st, c)
			w.P()
		}
		if r, ok := k.Schedule.(*ir.Rows); ok && d.LetCache {
			for _, st := range r.CachedStages(k) {
				stageFunc(w, k, d, st, c)
				w.P()
			}
		}
	}
	if own {
		bw.(ownCode).writeOwn(w, k, d)
		return w.String()
	}
	params := kernelParams(entryKernel(k), d, "T")
	for _, ix := range bw.threads(k) {
		if p := d.Threads[ix].Param; p != "" {
			params = append(params, p)
		}
	}
	lw, lib := bw.(libraryWriter)
	if lib {
		lw.libraryHead(w, k, d)
	}
	w.P("template <typename T>")
	w.Func(d.KernelHead(k.Name), params, func() { bw.body(w, k, d) })
	w.P()
	d.Instances(w, v)
	if ew, ok := bw.(entryWriter); ok {
		for _, e := range ew.entries(k, d) {
			w.P()
			w.P("// ", e.comment)
			params := kernelParams(e.kernel, d, "T")
			for _, ix := range bw.threads(k) {
				if p := d.Threads[ix].Param; p != "" {
					params = append(params, p)
				}
			}
			w.P("template <typename T>")
			w.Func(d.KernelHead(e.name), params, func() { e.body(w) })
			w.P()
			ev := *v
			ev.Kernel, ev.kernel, ev.ParamNames = e.name, e.kernel, paramNames(e.kernel)
			if e.threads > 0 {
				ev.Threads, ev.MinBlocks = e.threads, e.minBlocks
			}
			d.Instances(w, &ev)
		}
	}
	if lib {
		lw.libraryTail(w, k, d)
	}
	return w.String()
}

// libraryWriter is a body writer whose kernel may also be built as a
// library around its kernels (a quantized matmul's dense form,
// cuda_quant_dense.go): its head and tail enclose the kernels.
type libraryWriter interface {
	libraryHead(w *Writer, k *ir.Kernel, d *Dialect)
	libraryTail(w *Writer, k *ir.Kernel, d *Dialect)
}

// paramNames are k's binding names in order: an entry's call of its body.
func paramNames(k *ir.Kernel) string {
	var names []string
	for _, b := range k.Bindings {
		names = append(names, b.Name)
	}
	return strings.Join(names, ", ")
}

// entryKernel is k with its own entry point's signature
// (ir.Kernel.EntryBindings: a column-reducing kernel's first launch also
// binds the workspaces), for the parameter lists; the body reads k.
func entryKernel(k *ir.Kernel) *ir.Kernel {
	if len(k.EntryBindings()) == len(k.Bindings) {
		return k
	}
	ek := *k
	ek.Bindings = k.EntryBindings()
	return &ek
}

// entryWriter is a body writer whose kernel has more entry points than its
// own (a split matmul's phases, ir.Kernel.Phases).
type entryWriter interface {
	entries(k *ir.Kernel, d *Dialect) []entry
}

// entry is one more kernel function of the source: its name, a copy of the
// kernel with the entry's bindings and variants, and its body.
type entry struct {
	name, comment string
	kernel        *ir.Kernel
	threads       int // the entry's threads per block where they differ from the kernel's (CUDA's __launch_bounds__)
	minBlocks     int // with threads: the blocks per SM __launch_bounds__ asks for (0: none)
	body          func(w *Writer)
}

// stageFunc writes one stage function in compute type c: its constants and
// lets, then its targets, which it returns through reference parameters.
func stageFunc(w *Writer, k *ir.Kernel, d *Dialect, st ir.Stage, c dtype.DType) {
	r := renderer{d: d, compute: c, math: k.Math}
	ct := d.Types[c]
	typ := func(b bool) string {
		if b {
			return "bool"
		}
		return ct
	}
	var params []string
	for _, a := range st.Args {
		t := typ(a.Bool)
		if a.Int {
			t = "int"
		}
		params = append(params, t+" "+a.Name)
	}
	for _, t := range st.Targets {
		tt := typ(t.Bool)
		if t.Int {
			tt = "int"
		}
		params = append(params, d.RefQual+tt+"& "+t.Name)
	}
	if st.Kind != ir.StageElement {
		w.P("// ", st.Comment)
	}
	w.Block(d.FuncQual+" "+st.Name+"("+strings.Join(params, ", ")+")", func() {
		for i, con := range k.Constants {
			if st.Deps.Constants[i] {
				val, _ := dtype.Literal(con.Text, c)
				w.P("const ", ct, " ", con.Name, " = ", r.number(val), "; // ", con.Text)
			}
		}
		for _, i := range st.Deps.ElemLets {
			s := k.Steps[i]
			lt := typ(s.Expr.Bool)
			if s.Expr.Int {
				lt = "int"
			}
			w.P("const ", lt, " ", s.Name, " = ", r.expr(s.Expr), ";")
		}
		for _, t := range st.Targets {
			w.P(t.Name, " = ", r.expr(t.Expr), ";")
		}
	})
}

// kernelParams lays out the kernel parameters in binding order; storage
// spells the element type of the bindings stored in the variant's type.
func kernelParams(k *ir.Kernel, d *Dialect, storage string) []string {
	var out []string
	for _, b := range k.Bindings {
		t := storage
		if b.DType != dtype.Invalid {
			t = d.Types[b.DType]
		}
		switch b.Role {
		case ir.Input:
			out = append(out, d.In(t)+" "+b.Name+d.Buffer(b.Index))
		case ir.Output:
			out = append(out, d.Out(t)+" "+b.Name+d.Buffer(b.Index))
		case ir.Args:
			out = append(out, d.Args(k.Name+"_args")+" "+b.Name+d.Buffer(b.Index))
		}
	}
	return out
}

// preludeBlocks names the prelude blocks of the functions the kernel calls
// (reduction arguments included), sorted.
func preludeBlocks(k *ir.Kernel, d *Dialect) []string {
	used := map[string]bool{}
	var walk func(e *ir.Expr)
	walk = func(e *ir.Expr) {
		if needsIntHelpers(e) {
			used[intPrelude] = true
		}
		if f, ok := funcs.Lookup(e.Func); ok && e.Op == ir.OpCall {
			if sp := d.Spell(f, k.Math); sp.Prelude != "" {
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
	if r, ok := k.Schedule.(*ir.Rows); ok { // the loops' coordinates (gather.go, scatter.go)
		for _, c := range r.Coordinates() {
			walk(c)
		}
	}
	for _, st := range k.Stages() { // what the steps refer to, reduction terms included
		for _, t := range st.Targets {
			walk(t.Expr)
		}
	}
	var out []string
	for block := range used {
		out = append(out, block)
	}
	sort.Strings(out)
	return out
}

// run executes one named template and trims the blank lines around it.
func run(t *template.Template, name string, data any) (string, error) {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		return "", fmt.Errorf("template %s: %w", name, err)
	}
	return strings.TrimSpace(buf.String()), nil
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

// templates parses the frame with the dialect's prose and prelude blocks.
func (d *Dialect) templates() *template.Template {
	return parsed[d.Name]
}

// parsed holds each dialect's templates, parsed once from Dialects.
var parsed = func() map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, d := range Dialects {
		if d != nil {
			out[d.Name] = parse(d.Name)
		}
	}
	return out
}()

func parse(dir string) *template.Template {
	return template.Must(template.New(dir).Option("missingkey=error").
		ParseFS(templates.FS, "cfam/*.tmpl", dir+"/*.tmpl"))
}
