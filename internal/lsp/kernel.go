package lsp

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// kernelDoc describes the kernel as ir lays it out: its variants, its
// buffers, its args struct and, once the spec has no error, each port's
// launch with the size fields the launcher derives. It reads the IR the
// emitters read, so what it shows is what gen writes.
func (a *analysis) kernelDoc() string {
	k := a.kernel
	if k == nil {
		return "the kernel's name; its layout shows here once its kind is known"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**kernel %s** — %s", k.Name, k.Kind)
	var hosts []string
	for _, v := range k.Variants {
		hosts = append(hosts, v.HostName)
	}
	if len(hosts) > 0 {
		fmt.Fprintf(&b, "\n\nhost names: %s", strings.Join(hosts, ", "))
	}
	b.WriteString("\n\n| buffer | name | role | dtype | shape |\n|---|---|---|---|---|\n")
	for _, bd := range k.Bindings {
		if bd.Role == ir.Args {
			fmt.Fprintf(&b, "| %d | %s | args struct | | |\n", bd.Index, bd.Name)
			continue
		}
		dt := "T"
		if bd.DType != dtype.Invalid {
			dt = bd.DType.String()
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", bd.Index, bd.Name, bd.Role, dt, bd.Shape)
	}
	if fields := a.argsFields(); len(fields) > 0 {
		b.WriteString("\nargs struct:\n\n| field | type | offset | |\n|---|---|---|---|\n")
		for _, f := range fields {
			fmt.Fprintf(&b, "| %s | %s | %d | %s |\n", f.Name, f.Type, f.Offset, fieldRole(f))
		}
	}
	if a.built == nil {
		b.WriteString("\nlaunch: shown once the spec has no error")
		return b.String()
	}
	for be, on := range a.built.Ports {
		if !on {
			continue
		}
		l := a.built.Launch(ir.Backend(be))
		if l.Host() {
			fmt.Fprintf(&b, "\nlaunch (%s): by the port's own host code (a library entry point)\n", ir.Backend(be))
			continue
		}
		tg := l.Threadgroup
		fmt.Fprintf(&b, "\nlaunch (%s): grid [%s, %s, %s], threadgroup [%d, %d, %d]\n", ir.Backend(be), l.Grid[0], l.Grid[1], l.Grid[2], tg[0], tg[1], tg[2])
		for _, d := range l.Derived {
			fmt.Fprintf(&b, "- derived `%s = %s`", d.Field, d.Rule)
			if d.Doc != "" {
				fmt.Fprintf(&b, ": %s", d.Doc)
			}
			b.WriteString("\n")
		}
	}
	if lines := a.built.Describe(); len(lines) > 0 {
		b.WriteString("\nschedule:\n\n- " + strings.Join(lines, "\n- "))
	}
	return b.String()
}

// fieldRole says what an args field is: a size the caller gives, one the
// launcher derives, a view's stride, or a param.
func fieldRole(f ir.Field) string {
	switch {
	case f.Derived != "":
		return "size, derived: " + f.Derived
	case f.Size:
		return "size"
	case f.StrideOf != "":
		return fmt.Sprintf("stride of %s, dimension %d", f.StrideOf, f.StrideDim)
	case len(f.Aligned) > 0:
		return "1 when " + strings.Join(f.Aligned, ", ") + " take 16-byte vectors (set by the launcher)"
	}
	return "param"
}
