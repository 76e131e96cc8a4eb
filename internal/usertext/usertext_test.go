package usertext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile is every kind of text issue 12 names, and those found since:
// each must stay inside one comment line.
var hostile = []string{
	"a\rb", "a\nb", "a\r\nb", "a\x00b", "a\u2028b", "a\u2029b", "\ufeffa", "a */ b", "a\x0bb", "a\x0cb",
	"a\x1bb", "a\x7fb", "a\u0085b", "a\xffb", "a\xc3", "ends in \\", "trigraph ??/", "bidi \u202e x",
	"zero\u200bwidth", "#define fmin fmax", "a\r#define fmin fmax\r", "ok\tkept",
}

// TestCommentStaysOneLine: no line terminator of C++ or Go, no NUL, valid
// UTF-8, no splice, no block-comment end; plain text is kept as it is.
func TestCommentStaysOneLine(t *testing.T) {
	for _, s := range hostile {
		c := Comment(s)
		if strings.ContainsAny(c, "\r\n\x00\x0b\x0c\u0085\u2028\u2029\ufeff\u202e\u200b") || !utf8.ValidString(c) ||
			strings.HasSuffix(c, `\`) || strings.Contains(c, "*/") || strings.Contains(c, "??/") {
			t.Errorf("Comment(%q) = %q: can leave its comment", s, c)
		}
	}
	for _, s := range []string{"GELU, tanh approximation (seed 000), in f32.", "x * (1 + tanh(u)) / 2", "naïve ünïcode — ok", "a\tb"} {
		if c := Comment(s); c != s {
			t.Errorf("Comment(%q) = %q, want it unchanged", s, c)
		}
	}
	if got := Comment("a\rb"); got != `a\x0db` {
		t.Errorf(`Comment("a\rb") = %q, want a\x0db`, got)
	}
}

// TestProblemFindsEveryHostileRune: spec refuses what Comment would have
// to escape, at the offending byte.
func TestProblemFindsEveryHostileRune(t *testing.T) {
	for _, s := range hostile {
		off, what, bad := Problem(s, true)
		switch s {
		case "ok\tkept", "a\nb", "a */ b", "ends in \\", "trigraph ??/", "#define fmin fmax":
			continue // printable text a doc may hold: escaped where it is emitted, not refused
		}
		if !bad {
			t.Errorf("Problem(%q) found nothing", s)
			continue
		}
		if off < 0 || off >= len(s) || what == "" {
			t.Errorf("Problem(%q) = %d, %q", s, off, what)
		}
	}
	if off, _, bad := Problem("abc\rdef", true); !bad || off != 3 {
		t.Errorf("Problem(abc CR def) = %d, %v; want 3, true", off, bad)
	}
	if _, _, bad := Problem("a\nb", true); bad {
		t.Error("a doc may have several lines")
	}
	if _, _, bad := Problem("a\nb", false); !bad {
		t.Error("a file name may not")
	}
}
