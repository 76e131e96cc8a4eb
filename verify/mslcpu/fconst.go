package mslcpu

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Function constants (MSL spec 5.8.1, "Specifying Function Constants"): a
// program-scope `constant T name [[function_constant(index)]];`, whose value
// the host supplies, by name or by index, when it makes the pipeline. The
// index is an integer constant expression (`FC_BIN + 0` after the
// project's macros); the declaration may carry an initializer, which is the
// value when the host supplies none (is_function_constant_defined stays
// false then).
//
// The harness folds supplied values into the source as constexprs, so that
// constants work wherever MSL lets them go: array sizes, template arguments,
// `if` conditions the compiler removes. A constant with neither a value nor
// an initializer becomes a kgen::unset_fc<T>, which converts to T: inside a
// constant expression it is T{} (Metal rejects such a pipeline; the file must
// still compile for its other kernels), and read at run time it stops the
// kernel with the constant's name and index, because Metal gives the read no
// defined value.

var fcDeclRe = regexp.MustCompile(`\bconstant\s+([A-Za-z_][\w:<>, ]*?)\s+([A-Za-z_]\w*)\s*\[\[\s*function_constant\s*\(([^\[\]]*?)\)\s*\]\]\s*(?:=\s*([^;]+?)\s*)?;`)

// funcConst is one declared function constant.
type funcConst struct {
	typ, name, init string
	index           int64 // the evaluated [[function_constant(...)]] index
	line            int
}

// functionConstants rewrites every function-constant declaration (see
// above) and returns the keys of values that name no declared constant.
func (p *program) functionConstants(masked []byte, values map[string]string) ([]edit, []string, error) {
	var edits []edit
	used := map[string]bool{}
	for _, m := range fcDeclRe.FindAllSubmatchIndex(masked, -1) {
		c := funcConst{typ: string(masked[m[2]:m[3]]), name: string(masked[m[4]:m[5]]), line: p.lineAt(m[0])}
		if m[8] >= 0 {
			c.init = string(masked[m[8]:m[9]])
		}
		expr := string(masked[m[6]:m[7]])
		idx, err := evalIndex(expr)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: [[function_constant(%s)]] of %s: %v", p.pos(c.line), strings.TrimSpace(expr), c.name, err)
		}
		if idx < 0 || idx > 65535 {
			return nil, nil, fmt.Errorf("%s: [[function_constant(%s)]] of %s: index %d is outside 0..65535", p.pos(c.line), strings.TrimSpace(expr), c.name, idx)
		}
		c.index = idx
		key := c.name
		v, ok := values[key]
		if !ok {
			key = strconv.FormatInt(idx, 10)
			v, ok = values[key]
		}
		if ok {
			used[key] = true
		}
		text := c.declaration(v, ok)
		edits = append(edits, edit{m[0], m[1], keepLines(masked[m[0]:m[1]], text)})
	}
	var unknown []string
	for k := range values {
		if !used[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	return edits, unknown, nil
}

// declaration is the C++ that replaces one function-constant declaration.
func (c funcConst) declaration(value string, set bool) string {
	defined := fmt.Sprintf("constexpr bool kgen_fc_defined_%s = %t; ", c.name, set)
	switch {
	case set:
		return defined + fmt.Sprintf("constexpr %s %s = %s(%s);", c.typ, c.name, c.typ, value)
	case c.init != "":
		return defined + fmt.Sprintf("constexpr %s %s = %s;", c.typ, c.name, c.init)
	default:
		return defined + fmt.Sprintf("constexpr kgen::unset_fc<%s> %s{%q, %d};", c.typ, c.name, c.name, c.index)
	}
}

// evalIndex evaluates a function constant's index: an integer constant
// expression of literals, parentheses and the integer operators (what is
// left of `FC_BIN + 0` once the project's macros are expanded).
func evalIndex(expr string) (int64, error) {
	e := &intExpr{s: expr}
	v, err := e.binary(0)
	if err == nil {
		e.space()
		if e.i < len(e.s) {
			err = fmt.Errorf("unexpected %q", e.s[e.i:])
		}
	}
	if err != nil {
		return 0, fmt.Errorf("the index must be an integer constant expression of literals (after macros): %v", err)
	}
	return v, nil
}

// intExpr is a precedence-climbing parser over C's integer operators.
type intExpr struct {
	s string
	i int
}

var intBinOps = []struct {
	op   string
	prec int
}{
	// Longest first, so that << is not read as <.
	{"<<", 5}, {">>", 5}, {"||", 0}, {"&&", 0}, {"|", 1}, {"^", 2}, {"&", 3},
	{"+", 6}, {"-", 6}, {"*", 7}, {"/", 7}, {"%", 7},
}

func (e *intExpr) space() {
	for e.i < len(e.s) && strings.ContainsRune(" \t\r\n", rune(e.s[e.i])) {
		e.i++
	}
}

func (e *intExpr) binary(min int) (int64, error) {
	l, err := e.unary()
	if err != nil {
		return 0, err
	}
	for {
		e.space()
		found := false
		for _, o := range intBinOps {
			if o.prec < min || !strings.HasPrefix(e.s[e.i:], o.op) {
				continue
			}
			e.i += len(o.op)
			r, err := e.binary(o.prec + 1)
			if err != nil {
				return 0, err
			}
			if l, err = applyIntOp(o.op, l, r); err != nil {
				return 0, err
			}
			found = true
			break
		}
		if !found {
			return l, nil
		}
	}
}

func applyIntOp(op string, l, r int64) (int64, error) {
	switch op {
	case "+":
		return l + r, nil
	case "-":
		return l - r, nil
	case "*":
		return l * r, nil
	case "/", "%":
		if r == 0 {
			return 0, fmt.Errorf("division by zero")
		}
		if op == "/" {
			return l / r, nil
		}
		return l % r, nil
	case "<<":
		return l << uint(r&63), nil
	case ">>":
		return l >> uint(r&63), nil
	case "|":
		return l | r, nil
	case "^":
		return l ^ r, nil
	case "&":
		return l & r, nil
	case "||":
		return boolInt64(l != 0 || r != 0), nil
	default: // "&&"
		return boolInt64(l != 0 && r != 0), nil
	}
}

func boolInt64(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

var intLitRe = regexp.MustCompile(`^(?:0[xX][0-9a-fA-F]+|0[bB][01]+|[0-9]+)(?:[uU]?[lL]{0,2}|[lL]{1,2}[uU])`)

func (e *intExpr) unary() (int64, error) {
	e.space()
	if e.i >= len(e.s) {
		return 0, fmt.Errorf("the expression ends early")
	}
	switch c := e.s[e.i]; c {
	case '(':
		e.i++
		v, err := e.binary(0)
		if err != nil {
			return 0, err
		}
		e.space()
		if e.i >= len(e.s) || e.s[e.i] != ')' {
			return 0, fmt.Errorf("missing )")
		}
		e.i++
		return v, nil
	case '-', '+', '~', '!':
		e.i++
		v, err := e.unary()
		if err != nil {
			return 0, err
		}
		switch c {
		case '-':
			return -v, nil
		case '~':
			return ^v, nil
		case '!':
			return boolInt64(v == 0), nil
		}
		return v, nil
	}
	lit := intLitRe.FindString(e.s[e.i:])
	if lit == "" {
		return 0, fmt.Errorf("unexpected %q", e.s[e.i:])
	}
	e.i += len(lit)
	digits := strings.TrimRight(lit, "uUlL")
	v, err := strconv.ParseInt(digits, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", lit, err)
	}
	return v, nil
}
