package ir

import (
	"fmt"

	"github.com/kgen-dev/kgen/spec"
)

// checkGeneratedNames reports value names that a multi-segment kernel's
// buffers also take: <segment>_<tensor> is segment s's copy of a tensor,
// while the kernel body binds every formula name (tensors, params, per-row
// lets) plainly, so the two would be one name in the MSL and CUDA. (Every
// other generated local is under the reserved kgen_ prefix.)
func (c *formulaChecker) checkGeneratedNames() {
	var tensors []string
	for _, in := range c.s.Inputs {
		tensors = append(tensors, in.Name.Name)
	}
	for _, o := range c.s.Outputs {
		tensors = append(tensors, o.Name.Name)
	}
	made := map[string]string{}
	for _, seg := range c.s.Segments {
		for _, t := range tensors {
			made[seg.Name+"_"+t] = fmt.Sprintf("the name of segment %s's %s tensor", seg.Name, t)
		}
	}
	check := func(n spec.Name, what string) {
		if why, ok := made[n.Name]; ok && n.Name != "" {
			c.diags.Addf(n.Pos, "%s name %q is also %s; rename it", what, n.Name, why)
		}
	}
	for _, in := range c.s.Inputs {
		check(in.Name, "input")
	}
	for _, p := range c.s.Params {
		check(p.Name, "param")
	}
	for _, k := range c.s.Constants {
		check(k.Name, "constant")
	}
	for _, l := range c.s.Let {
		check(l.Name, "let")
	}
	for _, o := range c.s.Outputs {
		check(o.Name, "output")
	}
}
