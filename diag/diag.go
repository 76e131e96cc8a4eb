// Package diag carries kgen's positioned diagnostics: every error a user can
// fix is reported as "path:line:col: message", all of them, in a fixed order.
package diag

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Pos is a position in a user's file. Path is relative to the config folder
// and slash-separated; Line and Col count from 1 (0 = unknown).
type Pos struct {
	Path string
	Line int
	Col  int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.Path
	}
	return fmt.Sprintf("%s:%d:%d", p.Path, p.Line, p.Col)
}

// Shift returns the position cols columns to the right.
func (p Pos) Shift(cols int) Pos {
	p.Col += cols
	return p
}

// Diagnostic is one error at one position.
type Diagnostic struct {
	Pos Pos
	Msg string
}

func (d Diagnostic) String() string { return d.Pos.String() + ": " + d.Msg }

// List collects diagnostics; the zero value is ready to use.
type List struct {
	items []Diagnostic
}

// Addf records a diagnostic at pos.
func (l *List) Addf(pos Pos, format string, args ...any) {
	l.items = append(l.items, Diagnostic{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

// Append records every diagnostic of other.
func (l *List) Append(other *List) { l.items = append(l.items, other.items...) }

// Len is the number of diagnostics recorded.
func (l *List) Len() int { return len(l.items) }

// Sorted returns the diagnostics ordered by path, line, column, then message,
// without duplicates, so output never depends on the order checks ran in.
func (l *List) Sorted() []Diagnostic {
	out := append([]Diagnostic(nil), l.items...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Pos.Path != b.Pos.Path {
			return a.Pos.Path < b.Pos.Path
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		if a.Pos.Col != b.Pos.Col {
			return a.Pos.Col < b.Pos.Col
		}
		return a.Msg < b.Msg
	})
	dedup := out[:0]
	for i, d := range out {
		if i > 0 && d == out[i-1] {
			continue
		}
		dedup = append(dedup, d)
	}
	return dedup
}

// Err returns nil when the list is empty, else an *Error holding the sorted
// diagnostics.
func (l *List) Err() error {
	if l.Len() == 0 {
		return nil
	}
	return &Error{Diagnostics: l.Sorted()}
}

// Error is a non-empty, sorted set of diagnostics.
type Error struct {
	Diagnostics []Diagnostic
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Diagnostics))
	for i, d := range e.Diagnostics {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// AsError reports whether err carries diagnostics, and returns them.
func AsError(err error) (*Error, bool) {
	var de *Error
	ok := errors.As(err, &de)
	return de, ok
}

// Suggest returns ` (did you mean "x"?)` for the candidate closest to name, or
// "" when none is close enough to be a plausible typo.
func Suggest(name string, candidates []string) string {
	if best := Closest(name, candidates); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// Closest is the candidate Suggest would suggest, or "".
func Closest(name string, candidates []string) string {
	best, bestDist := "", -1
	for _, c := range candidates {
		d := editDistance(name, c)
		if bestDist < 0 || d < bestDist || (d == bestDist && c < best) {
			best, bestDist = c, d
		}
	}
	limit := len(name) / 3
	if limit < 1 {
		limit = 1
	}
	if limit > 3 {
		limit = 3
	}
	// A candidate that shares nothing with name (every character replaced,
	// as "x" for "q") is not a typo of it.
	if best == "" || bestDist > limit || bestDist >= max(len(name), len(best)) {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and transpositions of two adjacent
// characters count one edit each, so "tahn" is one edit from "tanh".
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	// d[i][j] is the distance between x[:i] and y[:j].
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
