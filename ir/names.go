package ir

import (
	"fmt"

	"github.com/kgen-dev/kgen/spec"
)

// checkGeneratedNames reports value names that the C-family kernels also
// declare for a tensor, which would be a redefinition in the MSL and CUDA:
// <tensor>_v, a tensor's per-thread values (elementwise kernels; reserved
// for every kind, so a kernel can change kind without a rename), and
// <segment>_<tensor>, a segment's copy of a tensor in a multi-segment
// kernel, whose formulas name the tensor plainly.
func (c *formulaChecker) checkGeneratedNames() {
	var tensors []string
	for _, in := range c.s.Inputs {
		tensors = append(tensors, in.Name.Name)
	}
	for _, o := range c.s.Outputs {
		tensors = append(tensors, o.Name.Name)
	}
	made := map[string]string{}
	for _, t := range tensors {
		made[t+"_v"] = fmt.Sprintf("the name the generated MSL and CUDA give %s's per-thread values", t)
	}
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
