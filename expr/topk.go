package expr

import (
	"fmt"
	"strconv"
)

// MaxTopK is the largest k of a top-k selection (docs/topk.md): every lane
// keeps k candidates (8·k bytes) and k merge rounds of a team argmax run
// per row.
const MaxTopK = 64

// TopKFuncs are the selections of a row's top k elements (docs/topk.md):
// the values, their column indices (an integer) and the values divided by
// their sum.
var TopKFuncs = map[string]bool{"topk": true, "topk_index": true, "topk_norm": true}

// topk checks topk(key, k), topk_index(key, k) and topk_norm(key, k):
// rowwise only, a number key and a baked k, an integer literal in
// 1..MaxTopK. Where the call may stand (an output's whole formula) is the
// IR's to say.
func (c *Checker) topk(v *Call) Type {
	result := Num
	if v.Fn == "topk_index" {
		result = Int
	}
	if !c.Rowwise || c.NoTopK {
		c.Report(v.Off, fmt.Sprintf("%s selects the top k elements of a row: it is only available in rowwise kernels", v.Fn))
	}
	if len(v.Args) != 2 {
		c.Report(v.Off, fmt.Sprintf("%s takes 2 arguments (the key and k, an integer literal: %s(p, 8)), got %d", v.Fn, v.Fn, len(v.Args)))
		for _, a := range v.Args {
			c.Check(a)
		}
		return result
	}
	switch t := c.Check(v.Args[0]); t {
	case Int:
		c.Report(v.Args[0].Offset(), fmt.Sprintf("%s ranks a number, not an integer: convert the key with f32(…)", v.Fn))
	case Bool:
		c.Report(v.Args[0].Offset(), fmt.Sprintf("%s ranks a number, not a boolean", v.Fn))
	}
	num, isNum := v.Args[1].(*Number)
	if _, lit := intLiteral(v.Args[1]); !isNum || !lit {
		c.Report(v.Args[1].Offset(), fmt.Sprintf("k of %s must be an integer literal from 1 to %d (it is baked into the kernel)", v.Fn, MaxTopK))
		c.Check(v.Args[1])
		return result
	}
	markInt(v.Args[1])
	if n, err := strconv.Atoi(num.Text); err != nil || n < 1 || n > MaxTopK {
		c.Report(v.Args[1].Offset(), fmt.Sprintf("k of %s is %s; it must be from 1 to %d", v.Fn, num.Text, MaxTopK))
	}
	return result
}
