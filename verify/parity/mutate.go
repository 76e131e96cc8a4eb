package parity

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/kgen-dev/kgen/ir"
)

// Mutation replaces what a generated kernel stores, to show that parity
// fails when the kernel computes something else: a check that a kernel
// returning its input, or nothing, would pass is vacuous.
type Mutation int

const (
	NoMutation Mutation = iota
	// FirstInput stores the kernel's first input in every output.
	FirstInput
	// Zero stores 0 in every output.
	Zero
)

func (m Mutation) String() string {
	switch m {
	case FirstInput:
		return "first-input"
	case Zero:
		return "zero"
	}
	return "none"
}

// ParseMutation reads "first-input", "zero" or "none" (or "").
func ParseMutation(s string) (Mutation, error) {
	for _, m := range []Mutation{NoMutation, FirstInput, Zero} {
		if s == m.String() || (s == "" && m == NoMutation) {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown mutation %q: want first-input, zero or none", s)
}

// Mutate rewrites every store of an output in a kgen-generated kernel,
// `kgen_v_<out>[<i>] = <T>(kgen_c_<out>);` (the elementwise body) or
// `<out>[<index>] = <T>(<value>);` (any template storing straight to the
// output buffer), so that it stores the first input's element instead, or
// 0. A kernel that stores through a local alias of its buffers (`device T*
// y = seg == 0 ? q_y : k_y;` in multi-segment rowwise kernels) is rewritten
// through the aliases. It fails when an output has no store it recognises:
// a template change must not make the mutation test pass by mutating
// nothing.
func Mutate(src []byte, k *ir.Kernel, m Mutation) ([]byte, error) {
	if m == NoMutation {
		return src, nil
	}
	ins := k.BindingsOf(ir.Input)
	if len(ins) == 0 {
		return nil, fmt.Errorf("mutate %s: the kernel has no input", k.Name)
	}
	out := src
	for _, b := range k.BindingsOf(ir.Output) {
		in := shapedLike(ins, b)
		n := 0
		for _, names := range [][2]string{{b.Name, in.Name}, {alias(src, b.Name), alias(src, in.Name)}} {
			if names[0] == "" || n > 0 {
				continue
			}
			var k int
			out, k = mutateStores(out, names[0], names[1], in.Operand, m)
			n += k
		}
		if n == 0 {
			return nil, fmt.Errorf("mutate %s: no store of output %s found (want `kgen_v_%s[i] = T(kgen_c_%s);` or `%s[index] = T(value);`)", k.Name, b.Name, b.Name, b.Name, b.Name)
		}
	}
	return out, nil
}

// shapedLike is the first input of output b's shape (a derived rope
// backward's first input is its [rows] positions), else the first input.
func shapedLike(ins []ir.Binding, b ir.Binding) ir.Binding {
	for _, in := range ins {
		if slices.Equal(in.Shape, b.Shape) {
			return in
		}
	}
	return ins[0]
}

// mutateStores rewrites the stores of output out to store input in (at the
// same index) or 0, and returns how many it rewrote.
//
// A matmul's first input is its A operand, which is not shaped like the
// output and may be empty (k = 0): the mutation stores args.k, a value
// unrelated to the product, instead.
func mutateStores(src []byte, out, in string, operand bool, m Mutation) ([]byte, int) {
	name := regexp.QuoteMeta(out)
	stores := []struct {
		re    *regexp.Regexp
		store string // the replacement's left-hand side
		input string // the first input at the same index
	}{
		{regexp.MustCompile(`\bkgen_v_` + name + `\[(\w+)\](\s*=\s*)(\w+|\([\w ]+\))\(\s*kgen_c_` + name + `\s*\)\s*;`), `kgen_v_` + out + `[$1]`, `kgen_v_` + in + `[$1]`},
		{regexp.MustCompile(`\b` + name + `\[([^\[\]=;]+)\](\s*=\s*)(\w+|\([\w ]+\))\([^;]*\)\s*;`), out + `[$1]`, in + `[$1]`},
	}
	n := 0
	for _, st := range stores {
		if operand {
			st.input = `args.k`
		}
		value := `float(` + st.input + `)`
		if m == Zero {
			value = `0.0f`
		}
		n += len(st.re.FindAllIndex(src, -1))
		src = st.re.ReplaceAll(src, []byte(st.store+`$2$3(`+value+`);`))
	}
	return src, n
}

// alias returns the local pointer a kernel declares from buffer name
// (`device T* y = seg == 0 ? q_y : k_y;` gives y for q_y), or "".
func alias(src []byte, name string) string {
	re := regexp.MustCompile(`device\s+(?:const\s+)?\w+\s*\*\s*(\w+)\s*=\s*[^;]*\b` + regexp.QuoteMeta(name) + `\b[^;]*;`)
	if m := re.FindSubmatch(src); m != nil {
		return string(m[1])
	}
	return ""
}
