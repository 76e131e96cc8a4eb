package breaking

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/emit/golang"
	"github.com/kgen-dev/kgen/ir"
)

// nameDiff is what became of an ordered list of names (a kernel's inputs,
// outputs or params).
type nameDiff struct {
	removed []string    // old names gone, not renamed
	renamed [][2]string // old → new name at the same position
	added   []string    // new names, not a rename
	// the names on both sides, in the old order and in the new one: they
	// differ when the list was reordered
	oldOrder, newOrder []string
}

func (d nameDiff) reordered() bool {
	return strings.Join(d.oldOrder, ",") != strings.Join(d.newOrder, ",")
}

// diffNames compares two lists of names. A name gone whose position now
// holds a name the old list did not have is a rename.
func diffNames(old, cur []string) nameDiff {
	inOld, inCur := set(old), set(cur)
	var d nameDiff
	renamedTo := map[string]bool{}
	for i, o := range old {
		switch {
		case inCur[o]:
			d.oldOrder = append(d.oldOrder, o)
		case i < len(cur) && !inOld[cur[i]]:
			d.renamed = append(d.renamed, [2]string{o, cur[i]})
			renamedTo[cur[i]] = true
		default:
			d.removed = append(d.removed, o)
		}
	}
	for _, n := range cur {
		switch {
		case inOld[n]:
			d.newOrder = append(d.newOrder, n)
		case !renamedTo[n]:
			d.added = append(d.added, n)
		}
	}
	return d
}

func set(names []string) map[string]bool {
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

// list reports the names of one role removed, renamed, added and
// reordered; what is "input", "output" or "param".
func (c *comparer) list(kernel string, at where, what string, old, cur []string) {
	d := diffNames(old, cur)
	takes := "tensor"
	if what == "param" {
		takes = "param"
	}
	for _, r := range d.removed {
		c.add(BindingRemoved, kernel, at.first(cur), InNew, "kernel %s removed %s %s: Run takes one %s fewer, and the args struct has no field %s",
			kernel, what, r, takes, golang.GoName(r))
	}
	for _, r := range d.renamed {
		c.add(BindingRenamed, kernel, at.name(r[1]), InNew, "kernel %s renamed %s %s to %s (same position): the args struct field %s is now %s",
			kernel, what, r[0], r[1], golang.GoName(r[0]), golang.GoName(r[1]))
	}
	for _, a := range d.added {
		c.add(BindingAdded, kernel, at.name(a), InNew, "kernel %s added %s %s: every call must pass it (Run takes one more %s%s)",
			kernel, what, a, takes, shiftNote(what))
	}
	if d.reordered() {
		c.add(BindingReordered, kernel, at.name(firstMoved(d)), InNew, "kernel %s reordered its %ss from [%s] to [%s]: positional Run calls now pass them in the wrong places%s",
			kernel, what, strings.Join(d.oldOrder, ", "), strings.Join(d.newOrder, ", "), shiftNote(what))
	}
}

// shiftNote says what else moves when a tensor is added or moved.
func shiftNote(what string) string {
	if what == "param" {
		return ", and the args struct's fields move"
	}
	return ", and buffer indices change"
}

// firstMoved is the first name, in the new order, not where the old order
// had it.
func firstMoved(d nameDiff) string {
	for i, n := range d.newOrder {
		if d.oldOrder[i] != n {
			return n
		}
	}
	return d.newOrder[0]
}

// tensors compares the inputs (or the outputs) of a kernel on both sides.
func (c *comparer) tensors(o, n *ir.Kernel, at where, role ir.Role) {
	ob, nb := o.BindingsOf(role), n.BindingsOf(role)
	c.list(o.Name, at, string(role), bindingNames(ob), bindingNames(nb))
	now := map[string]ir.Binding{}
	for _, b := range nb {
		now[b.Name] = b
	}
	for _, b := range ob {
		m, ok := now[b.Name]
		if !ok {
			continue
		}
		if old, cur := shapeOf(b), shapeOf(m); old != cur && o.Kind == n.Kind { // a new kind says it once
			c.add(ShapeChanged, o.Name, at.name(b.Name), InNew, "kernel %s changed the shape of %s %s from %s to %s: callers size and lay out the tensor differently",
				o.Name, role, b.Name, old, cur)
		}
		if old, cur := dtypeOf(b), dtypeOf(m); old != cur {
			c.add(DTypeChanged, o.Name, at.name(b.Name), InNew, "kernel %s changed the dtype of %s %s from %s to %s: callers pass other data",
				o.Name, role, b.Name, old, cur)
		}
	}
}

func bindingNames(bs []ir.Binding) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Name)
	}
	return out
}

// params compares the params of a kernel on both sides.
func (c *comparer) params(o, n *ir.Kernel, at where) {
	op, np := o.Params(), n.Params()
	c.list(o.Name, at, "param", fieldNames(op), fieldNames(np))
	now := map[string]ir.Field{}
	for _, f := range np {
		now[f.Name] = f
	}
	for _, f := range op {
		if m, ok := now[f.Name]; ok && m.Type != f.Type {
			c.add(ParamTypeChanged, o.Name, at.name(f.Name), InNew, "kernel %s changed the type of param %s from %s to %s: Run's Go parameter and the args struct field change",
				o.Name, f.Name, f.Type, m.Type)
		}
	}
}

func fieldNames(fs []ir.Field) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

// argsLayout reports the args struct fields that moved, and the size and
// stride fields that went (a removed param is reported as one): what code
// that fills the struct by offset (Swift, Objective-C) depends on.
func (c *comparer) argsLayout(o, n *ir.Kernel, at where) {
	now := map[string]ir.Field{}
	for _, f := range n.ArgsBinding().Fields {
		now[f.Name] = f
	}
	var changes []string
	pos := at.sizes() // a size field gone or moved: the kind or the segments changed
	for _, f := range o.ArgsBinding().Fields {
		m, ok := now[f.Name]
		switch {
		case !ok && (f.Size || f.StrideOf != "" || len(f.Aligned) > 0):
			changes = append(changes, fmt.Sprintf("%s (offset %d) is gone", f.Name, f.Offset))
		case ok && m.Offset != f.Offset:
			if len(changes) == 0 && !f.Size && f.StrideOf == "" && len(f.Aligned) == 0 {
				pos = at.name(f.Name)
			}
			changes = append(changes, fmt.Sprintf("%s moved from offset %d to %d", f.Name, f.Offset, m.Offset))
		}
	}
	if len(changes) > 0 {
		c.add(ArgsLayoutChanged, o.Name, pos, InNew, "kernel %s's args struct changed layout: %s; code that fills it by offset (Swift, Objective-C) breaks",
			o.Name, strings.Join(changes, ", "))
	}
}
