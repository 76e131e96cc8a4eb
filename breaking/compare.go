package breaking

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/backend"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/emit/golang"
	"github.com/kgen-dev/kgen/ir"
)

// comparer collects the findings of one comparison.
type comparer struct {
	against string // the older tree, for messages
	out     []Finding
}

func (c *comparer) add(rule, kernel string, pos diag.Pos, side, format string, args ...any) {
	c.out = append(c.out, Finding{Rule: rule, Kernel: kernel, Pos: pos, Side: side, Msg: fmt.Sprintf(format, args...)})
}

// Compare returns every breaking change from old to cur, exemptions not
// applied; against names the older tree in messages.
func Compare(old, cur *Specs, against string) []Finding {
	c := &comparer{against: against}
	byName := map[string]*ir.Kernel{}
	for _, k := range cur.Kernels {
		byName[k.Name] = k
	}
	for _, o := range old.Kernels {
		n := byName[o.Name]
		if n == nil {
			c.removed(o, old.at(o), renameCandidates(o, old, cur))
			continue
		}
		c.kernel(o, n, cur.at(n))
	}
	sortFindings(c.out)
	return c.out
}

// removed reports kernel o gone, at its spec in the older tree, with the
// new kernels of the same signature as the names it may have taken.
func (c *comparer) removed(o *ir.Kernel, at where, renamedTo []string) {
	var hosts []string
	for _, v := range o.Variants {
		hosts = append(hosts, v.HostName)
	}
	names := "host name"
	if len(hosts) > 1 {
		names += "s"
	}
	msg := fmt.Sprintf("kernel %s was removed (this is its spec as it was in %s): the Go kernel %s, the %s %s and its .metal file are gone",
		o.Name, c.against, golang.GoName(o.Name), names, strings.Join(hosts, ", "))
	if len(renamedTo) > 0 {
		msg += fmt.Sprintf("; renamed to %s? (the same inputs, outputs and params)", strings.Join(renamedTo, " or "))
	}
	c.add(KernelRemoved, o.Name, at.kernel(), InOld, "%s", msg)
}

// renameCandidates are cur's new kernels whose signature is o's.
func renameCandidates(o *ir.Kernel, old, cur *Specs) []string {
	had := map[string]bool{}
	for _, k := range old.Kernels {
		had[k.Name] = true
	}
	var out []string
	for _, k := range cur.Kernels {
		if !had[k.Name] && signature(k) == signature(o) {
			out = append(out, k.Name)
		}
	}
	return out
}

// signature is a kernel's calling surface without its name: kind, tensors
// (role, name, dtype, shape) and params (name, type).
func signature(k *ir.Kernel) string {
	parts := []string{k.Kind.String()}
	for _, b := range k.Bindings {
		if b.Role != ir.Args {
			parts = append(parts, fmt.Sprintf("%s %s %s %s", b.Role, b.Name, dtypeOf(b), shapeOf(b)))
		}
	}
	for _, p := range k.Params() {
		parts = append(parts, "param "+p.Name+" "+p.Type.String())
	}
	return strings.Join(parts, "; ")
}

// kernel compares one kernel present on both sides.
func (c *comparer) kernel(o, n *ir.Kernel, at where) {
	if o.Kind != n.Kind {
		c.add(KindChanged, o.Name, at.kind(), InNew, "kernel %s changed kind from %s to %s: its size fields and its launch change",
			o.Name, o.Kind, n.Kind)
	}
	c.variants(o, n, at)
	c.tensors(o, n, at, ir.Input)
	c.tensors(o, n, at, ir.Output)
	c.params(o, n, at)
	c.argsLayout(o, n, at)
	c.ports(o, n, at)
}

// variants reports dtypes dropped and host names changed.
func (c *comparer) variants(o, n *ir.Kernel, at where) {
	for _, ov := range o.Variants {
		nv, ok := variantOf(n, ov)
		switch {
		case !ok:
			c.add(DTypeRemoved, o.Name, at.dtypes(), InNew, "kernel %s dropped dtype %s: the host name %s is gone, and Run with %s tensors fails",
				o.Name, ov.DType, ov.HostName, ov.DType)
		case nv.HostName != ov.HostName:
			c.add(HostNameChanged, o.Name, at.dtypes(), InNew, "kernel %s's %s variant changed host name from %s to %s: code that looks the pipeline up by name breaks",
				o.Name, ov.DType, ov.HostName, nv.HostName)
		}
	}
}

func variantOf(k *ir.Kernel, v ir.Variant) (ir.Variant, bool) {
	for _, w := range k.Variants {
		if w.DType == v.DType {
			return w, true
		}
	}
	return ir.Variant{}, false
}

// ports reports ports generated before and no longer.
func (c *comparer) ports(o, n *ir.Kernel, at where) {
	for b := backend.Backend(0); b < backend.NumBackends; b++ {
		if o.Ports[b] && !n.Ports[b] {
			c.add(PortRemoved, o.Name, at.port(b), InNew, "kernel %s no longer generates its %s port (generated → null): Run on %s now fails with kgenrt.ErrNoPort",
				o.Name, b, b)
		}
	}
}

// dtypeOf is a tensor's element type as messages write it.
func dtypeOf(b ir.Binding) string {
	t := "T (the variant's dtype)"
	if b.DType != dtype.Invalid {
		t = b.DType.String()
	}
	if b.Quant != nil && !b.Table {
		t += " (" + b.Quant.String() + ")"
	}
	return t
}

// shapeOf is a tensor's whole shape, batch dimensions first, as stored.
func shapeOf(b ir.Binding) string {
	if b.Quant != nil {
		return b.ShapeText()
	}
	return ir.Shape(b.FullShape()).String()
}
