package expr

import (
	"fmt"
	"strings"
	"testing"
)

// chain is "x + x + … + x" with n operators.
func chain(n int) string { return "x" + strings.Repeat(" + x", n) }

// TestHeightLimit: an operator or call more than MaxHeight levels over a
// value is refused at that operator or call; parentheses add no level.
func TestHeightLimit(t *testing.T) {
	nested := func(n int, f string) string {
		return strings.Repeat(f+"(", n) + "x" + strings.Repeat(")", n)
	}
	ok := []string{
		chain(MaxHeight),
		nested(MaxHeight, "exp"),
		"(((" + chain(MaxHeight-1) + ")))",
		strings.Repeat("-", MaxHeight) + "x",
		"max(" + chain(MaxHeight-1) + ", 1)",
		"y * (" + chain(MaxHeight-2) + ")",
	}
	for _, src := range ok {
		if _, err := Parse(src); err != nil {
			t.Errorf("%s: %v", short(src), err)
		}
	}
	tooHigh := []struct {
		src string
		off int
	}{
		{chain(MaxHeight + 1), len(chain(MaxHeight)) + 1},  // the 65th +
		{chain(10 * MaxHeight), len(chain(MaxHeight)) + 1}, // the first over
		{nested(MaxHeight+1, "exp"), 0},                    // the outer call
		{strings.Repeat("-", MaxHeight+1) + "x", 0},        // the outer minus
		{"max(1, " + chain(MaxHeight) + ")", 0},            // max over a 64-high argument
		{"y * (" + chain(MaxHeight) + ")", 2},              // the *
	}
	after := "(" + chain(MaxHeight-1) + ") * y + 1"
	tooHigh = append(tooHigh, struct {
		src string
		off int
	}{after, strings.LastIndex(after, "+")}) // * is 64, the + after it 65
	for _, tt := range tooHigh {
		_, err := Parse(tt.src)
		if err == nil || !strings.Contains(err.Msg, fmt.Sprintf("formula nests deeper than %d levels", MaxHeight)) {
			t.Errorf("%s: got %v, want the height error", short(tt.src), err)
			continue
		}
		if err.Off != tt.off {
			t.Errorf("%s: error at offset %d (%q), want %d", short(tt.src), err.Off, tt.src[err.Off:min(err.Off+3, len(tt.src))], tt.off)
		}
	}
}

// TestTermLimit: more than MaxTerms numbers and names are refused at the
// first term over the limit, before any tree is built.
func TestTermLimit(t *testing.T) {
	terms := func(n int) string { return grouped(n, "x") }
	if _, err := Parse(terms(MaxTerms)); err != nil {
		t.Fatalf("%d terms: %v", MaxTerms, err)
	}
	src := terms(100000)
	_, err := Parse(src)
	if err == nil || !strings.Contains(err.Msg, "formula has more than 10000 terms") {
		t.Fatalf("100000 terms: %v", err)
	}
	if want := nthIndex(src, "x", MaxTerms+1); err.Off != want {
		t.Fatalf("error at offset %d, want %d (the 10001st term)", err.Off, want)
	}
	if _, err := Parse(strings.Repeat("1 + ", MaxTerms) + "1"); err == nil || err.Off != 4*MaxTerms {
		t.Fatalf("a number as the last term over the limit: %v", err)
	}
}

// BenchmarkParse parses and checks formulas of 1k and 10k terms, and
// rejects one of 100k: the time per term stays flat.
func BenchmarkParse(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		src := grouped(n/2, "x * 1.5") // two terms each
		b.Run(fmt.Sprintf("terms=%d", n), func(b *testing.B) {
			c := &Checker{Resolve: func(string) (Type, string) { return Num, "" }, Report: func(int, string) {}}
			for i := 0; i < b.N; i++ {
				if node, err := Parse(src); err == nil {
					c.Check(node)
				} else if n <= MaxTerms {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/term")
		})
	}
}

// grouped is a sum of n terms, eight to a parenthesis, then eight groups to
// one and so on: within MaxHeight at any length.
func grouped(n int, term string) string {
	terms := make([]string, n)
	for i := range terms {
		terms[i] = term
	}
	for len(terms) > 1 {
		var up []string
		for i := 0; i < len(terms); i += 8 {
			up = append(up, "("+strings.Join(terms[i:min(i+8, len(terms))], " + ")+")")
		}
		terms = up
	}
	return terms[0]
}

// nthIndex is the offset of the n-th (from 1) sub in s.
func nthIndex(s, sub string, n int) int {
	off := -len(sub)
	for ; n > 0; n-- {
		off += len(sub) + strings.Index(s[off+len(sub):], sub)
	}
	return off
}
