package expr

import (
	"fmt"
	"strings"
	"testing"
)

// TestParseErrors: each bad formula fails at the given byte offset with a
// message containing the given text.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		src  string
		off  int
		want string
	}{
		// Lexer.
		{"x = y", 2, `unexpected character '=' (did you mean "=="?)`},
		{"x × 2", 2, `unexpected character '×'`},
		{"x # comment", 2, `unexpected character '#'`},
		{"1.2.3", 0, `malformed number starting "1.2."`},
		{"3x", 0, `malformed number starting "3x"`},
		{"x * 2.5f", 4, `malformed number starting "2.5f"`},
		{"1e", 0, `malformed number "1e": exponent has no digits`},
		{"x + 1e+", 4, `malformed number "1e+": exponent has no digits`},
		{"1..2", 0, `malformed number starting "1.."`},
		// Parser.
		{"", 0, "formula ends where a value was expected"},
		{"   ", 3, "formula ends where a value was expected"},
		{"x +", 3, "formula ends where a value was expected"},
		{"x * 2 +", 7, "formula ends where a value was expected"},
		{"x ** 2", 3, "expected a value, found `*`"},
		{"(x + 1", 0, "this `(` is never closed"},
		{"(x + 1 * (x - 2)", 0, "this `(` is never closed"},
		{"((x) + (1)", 0, "this `(` is never closed"},
		{"(x 1)", 3, "expected `)`, found number 1"},
		{"x + 1)", 5, "unexpected `)` after the end of the formula"},
		{"x y", 2, "unexpected name y after the end of the formula"},
		{"log(x", 5, "expected `,` or `)` in the arguments of log, found the end of the formula"},
		{"max(x, )", 7, "expected a value, found `)`"},
		{"max(x y)", 6, "expected `,` or `)` in the arguments of max, found name y"},
		{"f(,)", 2, "expected a value, found `,`"},
		{")", 0, "expected a value, found `)`"},
		{",", 0, "expected a value, found `,`"},
		{"-", 1, "formula ends where a value was expected"},
		{"!", 1, "formula ends where a value was expected"},
		{strings.Repeat("(", 300) + "x" + strings.Repeat(")", 300), 200, "formula nests deeper than 200 levels"},
		{strings.Repeat("-", 300) + "x", 199, "formula nests deeper than 200 levels"},
	}
	for _, tt := range tests {
		t.Run(short(tt.src), func(t *testing.T) {
			n, err := Parse(tt.src)
			if err == nil {
				t.Fatalf("Parse(%q) = %s; want an error", tt.src, String(n))
			}
			if err.Off != tt.off || !strings.Contains(err.Msg, tt.want) {
				t.Errorf("Parse(%q) error at %d: %s\nwant at %d: ...%s...", tt.src, err.Off, err.Msg, tt.off, tt.want)
			}
			if err.Off < 0 || err.Off > len(tt.src) {
				t.Errorf("offset %d outside [0, %d]", err.Off, len(tt.src))
			}
		})
	}
}

// short names a subtest after its input, cut to a readable length.
func short(s string) string {
	if len(s) > 24 {
		return s[:24] + "..."
	}
	return s
}

// show renders a tree with every binary and unary node parenthesised, so
// tests see the shape the parser built.
func show(n Node) string {
	switch v := n.(type) {
	case *Number:
		return v.Text
	case *Ident:
		return v.Name
	case *Unary:
		return "(" + v.Op + show(v.X) + ")"
	case *Binary:
		return "(" + show(v.X) + " " + v.Op + " " + show(v.Y) + ")"
	case *Paren:
		return show(v.X)
	case *Call:
		args := make([]string, len(v.Args))
		for i, a := range v.Args {
			args[i] = show(a)
		}
		return v.Fn + "(" + strings.Join(args, ", ") + ")"
	}
	return fmt.Sprintf("<%T>", n)
}

// TestPrecedence checks Go's precedence and left associativity, and that
// String gives back the formula in canonical spacing.
func TestPrecedence(t *testing.T) {
	tests := []struct{ src, shape, canonical string }{
		{"a - b - c", "((a - b) - c)", "a - b - c"},
		{"a - (b - c)", "(a - (b - c))", "a - (b - c)"},
		{"a / b * c", "((a / b) * c)", "a / b * c"},
		{"a / (b * c)", "(a / (b * c))", "a / (b * c)"},
		{"a + b * c", "(a + (b * c))", "a + b * c"},
		{"(a + b) * c", "((a + b) * c)", "(a + b) * c"},
		{"-(-x)", "(-(-x))", "-(-x)"},
		{"--x", "(-(-x))", "--x"},
		{"-a * -b", "((-a) * (-b))", "-a * -b"},
		{"-x*x", "((-x) * x)", "-x * x"},
		{"!a && b", "((!a) && b)", "!a && b"},
		{"a || b && c", "(a || (b && c))", "a || b && c"},
		{"a && b || c", "((a && b) || c)", "a && b || c"},
		{"a < b && b <= c", "((a < b) && (b <= c))", "a < b && b <= c"},
		{"a + 1 > b * 2", "((a + 1) > (b * 2))", "a + 1 > b * 2"},
		{"a == b != c", "((a == b) != c)", "a == b != c"},
		{"a>=b", "(a >= b)", "a >= b"},
		{"select(x > 0, x, 0.01 * x)", "select((x > 0), x, (0.01 * x))", "select(x > 0, x, 0.01 * x)"},
		{"pow(x,2)+min(a,b)", "(pow(x, 2) + min(a, b))", "pow(x, 2) + min(a, b)"},
		{"f()", "f()", "f()"},
		{"((x))", "x", "((x))"},
		{"1e-6 + .5 + 2. + 3E+2", "(((1e-6 + .5) + 2.) + 3E+2)", "1e-6 + .5 + 2. + 3E+2"},
		{"x\n  * 2", "(x * 2)", "x * 2"},
		{"\tx\r\n+1", "(x + 1)", "x + 1"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			n, err := Parse(tt.src)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.src, err)
			}
			if got := show(n); got != tt.shape {
				t.Errorf("shape %s; want %s", got, tt.shape)
			}
			got := String(n)
			if got != tt.canonical {
				t.Errorf("String = %q; want %q", got, tt.canonical)
			}
			// The canonical text parses to the same tree.
			again, err := Parse(got)
			if err != nil {
				t.Fatalf("Parse(String) = %v", err)
			}
			if show(again) != show(n) {
				t.Errorf("round trip changed the shape: %s -> %s", show(n), show(again))
			}
		})
	}
}

// TestOffsets checks the offsets the tree records.
func TestOffsets(t *testing.T) {
	n, err := Parse("a + f(b, -c) * (d)")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	Walk(n, func(m Node) { got = append(got, fmt.Sprintf("%T@%d", m, m.Offset())) })
	want := "*expr.Binary@0 *expr.Ident@0 *expr.Binary@4 *expr.Call@4 *expr.Ident@6 *expr.Unary@9 *expr.Ident@10 *expr.Paren@15 *expr.Ident@16"
	if strings.Join(got, " ") != want {
		t.Errorf("offsets:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if b := n.(*Binary); b.OpOff != 2 {
		t.Errorf("OpOff = %d; want 2", b.OpOff)
	}
}

// check type-checks src with x, y numbers, ok a boolean, late a name
// defined later, and returns the type and "off: msg" reports.
func check(src string, rowwise bool) (Type, []string, error) {
	n, err := Parse(src)
	if err != nil {
		return Unknown, nil, err
	}
	var reports []string
	c := &Checker{
		Rowwise: rowwise,
		Resolve: func(name string) (Type, string) {
			switch name {
			case "x", "y":
				return Num, ""
			case "ok":
				return Bool, ""
			case "late":
				return Unknown, "late is defined later"
			}
			return Unknown, "undefined name " + name
		},
		Report: func(off int, msg string) { reports = append(reports, fmt.Sprintf("%d: %s", off, msg)) },
	}
	return c.Check(n), reports, nil
}

func TestCheck(t *testing.T) {
	tests := []struct {
		src     string
		rowwise bool
		typ     Type
		reports []string
	}{
		{"x * 2 + y", false, Num, nil},
		{"x > y", false, Bool, nil},
		{"x > y && ok || !ok", false, Bool, nil},
		{"select(ok, x, y)", false, Num, nil},
		{"select(x > 0, x, 0)", false, Num, nil},
		{"pi", false, Unknown, []string{"0: undefined name pi"}}, // pi is the resolver's business
		{"(x > 0) + 1", false, Num, []string{"8: the left operand of + must be a number, not a boolean"}},
		{"1 - ok", false, Num, []string{"2: the right operand of - must be a number, not a boolean"}},
		{"x && ok", false, Bool, []string{"2: the left operand of && must be a boolean, not a number"}},
		{"ok || 1", false, Bool, []string{"3: the right operand of || must be a boolean, not a number"}},
		{"ok < x", false, Bool, []string{"3: the left operand of < must be a number, not a boolean"}},
		{"ok == ok", false, Bool, []string{
			"3: the left operand of == must be a number, not a boolean",
			"3: the right operand of == must be a number, not a boolean"}},
		{"-ok", false, Num, []string{"0: operator - needs a number, not a boolean"}},
		{"!x", false, Bool, []string{"0: operator ! needs a boolean, not a number"}},
		{"select(x, x, 0)", false, Num, []string{"7: argument 1 of select must be a boolean, not a number"}},
		{"select(ok, ok, 0)", false, Num, []string{"11: argument 2 of select must be a number, not a boolean"}},
		{"exp(ok)", false, Num, []string{"4: argument 1 of exp must be a number, not a boolean"}},
		{"tanhh(x)", false, Unknown, []string{`0: unknown function "tanhh" (did you mean "tanh"?)`}},
		{"frobnicate(q)", false, Unknown, []string{`0: unknown function "frobnicate"`, "11: undefined name q"}},
		{"pow(x)", false, Num, []string{"0: pow takes 2 arguments, got 1"}},
		{"exp(x, y)", false, Num, []string{"0: exp takes 1 argument, got 2"}},
		{"clamp()", false, Num, []string{"0: clamp takes 3 arguments, got 0"}},
		{"x + late", false, Unknown, []string{"4: late is defined later"}},
		{"row_sum(x)", false, Num, []string{"0: row_sum reduces over a row: it is only available in rowwise kernels"}},
		{"x / row_sum(exp(x - row_max(x)))", true, Num, nil},
		{"undefined * 2", false, Num, []string{"0: undefined name undefined"}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			typ, reports, err := check(tt.src, tt.rowwise)
			if err != nil {
				t.Fatal(err)
			}
			if typ != tt.typ && tt.typ != Unknown {
				t.Errorf("type %s; want %s", typ, tt.typ)
			}
			if strings.Join(reports, "\n") != strings.Join(tt.reports, "\n") {
				t.Errorf("reports:\n%s\nwant:\n%s", strings.Join(reports, "\n"), strings.Join(tt.reports, "\n"))
			}
		})
	}
}

func TestRefs(t *testing.T) {
	n, err := Parse("a * exp(b) + a - select(c > 0, b, d)")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(Refs(n), " "); got != "a b c d" {
		t.Errorf("Refs = %s; want a b c d (first use, no functions, no repeats)", got)
	}
}
