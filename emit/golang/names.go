package golang

import (
	"go/token"
	"strings"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// GoName turns a snake_case kernel name into an exported Go name.
func GoName(name string) string {
	var b strings.Builder
	for _, part := range strings.Split(name, "_") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// names holds every Go identifier generated for one kernel. The unexported
// package-level names are the kernel's lower-camel name plus a suffix from a
// fixed set (Kernel, Ports, MSL, Call, CUDA, Phases, and <Stage><Mode> for the
// stage functions: EvalF32, Pass1F16, WriteF64, Row0BF16, ...), no element
// of which ends with another: two kernels' names can then only clash when
// their lower-camel names do, which checkNames reports (and a test tries
// the suffix pairs, TestStageNamesCannotClash).
type names struct {
	exported string // GeluTanh: the kernel value
	typ      string // GeluTanhKernel: its type
	args     string // GeluTanhArgs: the named arguments of RunArgs and EncodeArgs
	lower    string // geluTanh: prefix of the unexported names
	desc     string // geluTanhKernel: the kgenrt.Kernel descriptor
	ports    string // geluTanhPorts: the port table
	source   string // geluTanhMSL: the embedded source
	call     string // geluTanhCall: the checked launch builder
	phases   string // matmulSoftmaxPhases: a split kernel's phase descriptors
	locals   map[string]string
}

func newNames(k *ir.Kernel) *names {
	exp := GoName(k.Name)
	lower := strings.ToLower(exp[:1]) + exp[1:]
	n := &names{exported: exp, typ: exp + "Kernel", args: exp + "Args", lower: lower, desc: lower + "Kernel",
		ports: lower + "Ports", source: lower + "MSL", call: lower + "Call", phases: lower + "Phases"}
	n.locals = localNames(k, n)
	return n
}

// stage is the Go name of stage function st in evaluation mode c (Invalid:
// float64): geluTanhEvalF32, rmsNormPass1BF16, rmsNormWriteF64. The stage
// comes from ir.Stages, which names it once (Stage.Suffix).
func (n *names) stage(st ir.Stage, c dtype.DType) string {
	return n.lower + GoName(st.Suffix) + modeName(c)
}

// modeName is the suffix of a stage function in an evaluation mode.
func modeName(c dtype.DType) string {
	if c == dtype.Invalid {
		return "F64"
	}
	return strings.ToUpper(c.String())
}

// modes lists the evaluation modes the reference has stage functions for:
// each compute type, then float64 (Invalid).
func modes(k *ir.Kernel) []dtype.DType { return append(k.ComputeTypes(), dtype.Invalid) }

// topLevel lists the package-level names a kernel declares, stage
// functions included.
func (n *names) topLevel(k *ir.Kernel) []string {
	out := []string{n.exported, n.typ, n.args, n.desc, n.ports, n.call}
	if len(k.Phases()) > 0 {
		out = append(out, n.phases)
	}
	for _, c := range modes(k) {
		for _, st := range k.Stages() {
			out = append(out, n.stage(st, c))
		}
	}
	for _, b := range k.Sources() {
		if p := ports[b]; p != nil {
			out = append(out, p.names(n)...)
		}
	}
	return out
}

// reservedLocals are the identifiers generated function bodies use besides
// the spec's names: predeclared ones, imported packages, and the launchers'
// own locals. A spec name equal to one of them gets a trailing underscore.
var reservedLocals = map[string]bool{
	"float32": true, "float64": true, "uint32": true, "int32": true, "int": true, "bool": true,
	"len": true, "make": true, "nil": true, "error": true, "true": true, "false": true,
	"math": true, "binary": true, "fmt": true, "kgenrt": true,
	"b": true, "cb": true, "stream": true, "call": true, "port": true, "err": true, "v": true, "n": true, "sizes": true,
	"i": true, "args": true, "ts": true, "ps": true, "ins": true,
}

// localNames maps each spec name (inputs, outputs, params, constants, lets)
// to the Go identifier used for it in function bodies.
func localNames(k *ir.Kernel, n *names) map[string]string {
	taken := map[string]bool{}
	for _, t := range n.topLevel(k) {
		taken[t] = true
	}
	for _, f := range k.ArgsBinding().Fields {
		if f.Size { // the call builder's locals (rows, cols, rows_per_group)
			taken[f.Name] = true
		}
	}
	out := map[string]string{}
	add := func(name string) {
		g := name
		for reservedLocals[g] || taken[g] || token.IsKeyword(g) || isNumbered(g) {
			g += "_"
		}
		out[name] = g
	}
	for _, b := range k.Bindings {
		add(b.Name)
	}
	for _, p := range k.Params() {
		add(p.Name)
	}
	if mm := k.Matmul(); mm != nil {
		for _, b := range mm.B {
			add(b.Acc)
		}
	}
	for _, c := range k.Constants {
		add(c.Name)
	}
	for _, s := range k.Steps {
		if !s.Output {
			add(s.Name)
		}
	}
	return out
}

// isNumbered reports names of the form lit0 or val1, which generated code
// uses for hoisted literals and computed element values.
func isNumbered(s string) bool {
	for _, p := range []string{"lit", "val"} {
		rest, ok := strings.CutPrefix(s, p)
		if ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
			return true
		}
	}
	return false
}

// local is the Go identifier of a spec name.
func (n *names) local(name string) string {
	if g, ok := n.locals[name]; ok {
		return g
	}
	return name
}

// checkNames reports Go identifiers that two kernels would both declare
// (gelu_tanh and gelu__tanh are both GeluTanh) or that clash with the
// package's own Kernels function: one line per pair of kernels, at the
// later kernel's name.
func checkNames(kernels []*ir.Kernel) error {
	owner := map[string]*ir.Kernel{}
	var diags diag.List
	for _, k := range kernels {
		if GoName(k.Name) == "" {
			diags.Addf(k.NamePos, "kernel %q has no Go name; use letters", k.Name)
			continue
		}
		reported := map[*ir.Kernel]bool{}
		for _, id := range newNames(k).topLevel(k) {
			prev, dup := owner[id]
			switch {
			case id == "Kernels":
				diags.Addf(k.NamePos, "kernel %q would declare the Go name Kernels, which the package's Kernels function has; rename the kernel", k.Name)
			case dup && !reported[prev]:
				reported[prev] = true
				diags.Addf(k.NamePos, "kernel %q and kernel %q (%s) both become Go name %s; rename one of them", k.Name, prev.Name, prev.NamePos, id)
			case !dup:
				owner[id] = k
			}
		}
	}
	return diags.Err()
}
