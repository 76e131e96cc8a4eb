package breaking

import (
	"strings"

	"github.com/kgen-dev/kgen/backend"
	"github.com/kgen-dev/kgen/backward"
	"github.com/kgen-dev/kgen/config"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/spec"
)

// Specs is one side of a comparison: the kernels and the specs they were
// built from, which give the positions.
type Specs struct {
	Kernels []*ir.Kernel
	specs   map[string]*spec.Spec // by kernel name
}

// Load reads and checks every spec of cfg and builds the IR, as
// generate.Load does, keeping the specs for positions. Spec errors come
// back as a *diag.Error holding all of them.
func Load(cfg *config.Config) (*Specs, error) {
	var diags diag.List
	specs := backward.Derive(spec.LoadDir(cfg.Dir, cfg.Specs, &diags), &diags)
	kernels := ir.Build(specs, &diags)
	if err := diags.Err(); err != nil {
		return nil, err
	}
	return NewSpecs(kernels, specs), nil
}

// NewSpecs pairs kernels with the specs they were built from.
func NewSpecs(kernels []*ir.Kernel, specs []*spec.Spec) *Specs {
	s := &Specs{Kernels: kernels, specs: map[string]*spec.Spec{}}
	for _, sp := range specs {
		s.specs[sp.Kernel.Name] = sp
	}
	return s
}

// where finds the positions of one kernel's parts in its spec; each falls
// back to the kernel's name.
type where struct {
	k *ir.Kernel
	s *spec.Spec // nil when unknown
}

func (s *Specs) at(k *ir.Kernel) where { return where{k, s.specs[k.Name]} }

func (w where) kernel() diag.Pos { return w.k.NamePos }

func (w where) or(p diag.Pos) diag.Pos {
	if p.Line == 0 {
		return w.kernel()
	}
	return p
}

// dtypes is the spec's dtypes list.
func (w where) dtypes() diag.Pos {
	if w.s == nil || len(w.s.DTypes) == 0 {
		return w.kernel()
	}
	return w.or(w.s.DTypes[0].Pos)
}

// kind is the spec's kind field.
func (w where) kind() diag.Pos {
	if w.s == nil {
		return w.kernel()
	}
	return w.or(w.s.KindPos)
}

// sizes is what gives the args struct its size fields: the spec's
// segments, else its kind.
func (w where) sizes() diag.Pos {
	if w.s != nil && w.s.SegmentsPos.Line > 0 {
		return w.s.SegmentsPos
	}
	return w.kind()
}

// port is the spec's key for backend b.
func (w where) port(b backend.Backend) diag.Pos {
	if w.s == nil {
		return w.kernel()
	}
	return w.or(w.s.Ports[b].Pos)
}

// name is where the spec declares an input, output, operand or param (a
// segment's tensor <segment>_<name> is declared as <name>).
func (w where) name(n string) diag.Pos {
	if w.s == nil {
		return w.kernel()
	}
	names := w.declared()
	if p, ok := names[n]; ok {
		return w.or(p)
	}
	for _, seg := range w.k.Segments {
		if p, ok := names[strings.TrimPrefix(n, seg+"_")]; ok {
			return w.or(p)
		}
	}
	return w.kernel()
}

// first is where the first of names is declared, or the kernel's name.
func (w where) first(names []string) diag.Pos {
	if len(names) == 0 {
		return w.kernel()
	}
	return w.name(names[0])
}

// declared maps every name the spec declares to its position.
func (w where) declared() map[string]diag.Pos {
	out := map[string]diag.Pos{}
	add := func(n spec.Name) {
		if _, ok := out[n.Name]; !ok && n.Name != "" {
			out[n.Name] = n.Pos
		}
	}
	for _, in := range w.s.Inputs {
		add(in.Name)
	}
	for _, p := range w.s.Params {
		add(p.Name)
	}
	for _, o := range w.s.Outputs {
		add(o.Name)
	}
	if m := w.s.Matmul; m != nil {
		add(m.A.Name)
		for _, b := range append(append([]spec.Operand{}, m.B...), thenOperand(m)...) {
			add(b.Name)
			if b.Quant != nil {
				add(spec.Name{Name: b.Quant.Scales.Name, Pos: orPos(b.Quant.Scales.Pos, b.Pos)})
				add(spec.Name{Name: b.Quant.Biases.Name, Pos: orPos(b.Quant.Biases.Pos, b.Pos)})
			}
		}
	}
	return out
}

// orPos is p, or else where it is unset (a name kgen derived).
func orPos(p, where diag.Pos) diag.Pos {
	if p.Line == 0 {
		return where
	}
	return p
}

func thenOperand(m *spec.MatmulSpec) []spec.Operand {
	if m.Then == nil {
		return nil
	}
	return []spec.Operand{*m.Then}
}
