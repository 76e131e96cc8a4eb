package yamlnode

import (
	"errors"
	"io"
	"os"
	"unicode/utf8"

	"github.com/kgen-dev/kgen/diag"
)

// Limits on what kgen hands its YAML library. A spec needs a few levels
// and a few kilobytes; without them `[[[[…` 64,000 deep in 128 KB made the
// parser take 6 GB and 17 s. Both are checked before the library runs.
const (
	// MaxBytes is the largest spec or config file kgen reads.
	MaxBytes = 1 << 20
	// MaxDepth is the deepest nesting of lists and mappings, block
	// (indentation levels, `- ` items) and flow (`[`, `{`) together.
	MaxDepth = 32
)

// ReadFile reads a spec or config file, but never more than MaxBytes+1
// bytes of it (a file named like a spec may be a device or a huge file);
// Parse reports the oversize file at its position.
// A FIFO or device is refused before it is opened (opening a FIFO blocks
// until something writes to it).
func ReadFile(name string) ([]byte, error) {
	if st, err := os.Stat(name); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() && !st.IsDir() {
		return nil, ErrNotRegular
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxBytes+1))
}

// ErrNotRegular: ReadFile was given a FIFO, socket or device.
var ErrNotRegular = errors.New("it is not a regular file (a FIFO, socket or device); kgen reads only regular files")

func checkSize(path string, src []byte, diags *diag.List) bool {
	if len(src) <= MaxBytes {
		return true
	}
	diags.Addf(diag.Pos{Path: path, Line: 1, Col: 1}, "the file is larger than %d bytes (1 MiB), the most kgen reads; split it into several specs", MaxBytes)
	return false
}

// nesting measures YAML nesting line by line, without parsing: a stack of
// the block indentation columns open at a line (each compact `- ` or `? `
// opens one more) plus the open flow brackets. It skips comments, quoted
// strings and block scalars' content, and counts a bracket only where a
// node can start (a `[` inside a plain scalar is text). It errs on the safe
// side: it may count a level the parser would not, never misses one.
type nesting struct {
	path     string
	diags    *diag.List
	stack    []int // indentation columns of the open block levels
	flow     int   // open [ and {
	quote    rune  // open quote, across lines
	blockCol int   // content of a block scalar: lines indented past this; -1 none
}

func checkNesting(path string, src []byte, diags *diag.List) bool {
	n := &nesting{path: path, diags: diags, blockCol: -1}
	line := 1
	for start := 0; start < len(src); line++ {
		end := start
		for end < len(src) && src[end] != '\n' && src[end] != '\r' {
			end++
		}
		if !n.line(line, src[start:end]) {
			return false
		}
		if end < len(src) && src[end] == '\r' && end+1 < len(src) && src[end+1] == '\n' {
			end++
		}
		start = end + 1
	}
	return true
}

// line reads one line; false once the limit is passed (reported).
func (n *nesting) line(ln int, s []byte) bool {
	indent := 0
	for indent < len(s) && s[indent] == ' ' {
		indent++
	}
	blank := indent == len(s) || s[indent] == '#'
	if n.blockCol >= 0 {
		if blank || indent > n.blockCol {
			return true
		}
		n.blockCol = -1
	}
	if blank && n.quote == 0 {
		return true
	}
	i, col := indent, indent+1 // byte index, rune column
	content := indent
	if n.flow == 0 && n.quote == 0 {
		for len(n.stack) > 0 && n.stack[len(n.stack)-1] >= indent {
			n.stack = n.stack[:len(n.stack)-1]
		}
		n.stack = append(n.stack, indent)
		// Compact block indicators: `- - x`, `? a`, `: b` each open a level.
		for i < len(s) && (s[i] == '-' || s[i] == '?' || s[i] == ':') && (i+1 == len(s) || s[i+1] == ' ') {
			if !n.check(ln, col) {
				return false
			}
			i++
			col++
			for i < len(s) && s[i] == ' ' {
				i, col = i+1, col+1
			}
			n.stack = append(n.stack, i)
		}
		content = i
		if !n.check(ln, col) {
			return false
		}
	}
	return n.scan(ln, s, i, col, content)
}

// scan reads a line's content from byte i (rune column col): quotes,
// comments, flow brackets and a block scalar header.
func (n *nesting) scan(ln int, s []byte, i, col, content int) bool {
	nodeStart := n.quote == 0
	for i < len(s) {
		r, size := utf8.DecodeRune(s[i:])
		switch {
		case n.quote == '\'' && r == '\'':
			if i+1 < len(s) && s[i+1] == '\'' { // '' is a quote inside
				i, col = i+1, col+1
			} else {
				n.quote = 0
			}
		case n.quote == '"' && r == '\\':
			i, col = i+1, col+1 // skip the escaped byte
		case n.quote == '"' && r == '"':
			n.quote = 0
		case n.quote != 0:
		case r == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return true
		case r == ' ' || r == '\t':
		case nodeStart && (r == '\'' || r == '"'):
			n.quote = r
			nodeStart = false
		case (nodeStart || n.flow > 0) && (r == '[' || r == '{'):
			n.flow++
			if !n.check(ln, col) {
				return false
			}
			nodeStart = true
			i, col = i+size, col+1
			continue
		case n.flow > 0 && (r == ']' || r == '}'):
			n.flow--
		case n.flow > 0 && r == ',':
			nodeStart = true
			i, col = i+size, col+1
			continue
		case r == ':' && (i+1 == len(s) || s[i+1] == ' ' || (n.flow > 0 && s[i+1] == ',')):
			nodeStart = true
			i, col = i+size, col+1
			continue
		case nodeStart && n.flow == 0 && (r == '|' || r == '>') && blockHeader(s[i+1:]):
			n.blockCol = content
			return true
		default:
			nodeStart = false
		}
		i, col = i+size, col+1
	}
	return true
}

// blockHeader: the rest of a `|` or `>` line is chomping and indentation
// indicators, then blanks or a comment.
func blockHeader(rest []byte) bool {
	i := 0
	for i < len(rest) && (rest[i] == '-' || rest[i] == '+' || (rest[i] >= '1' && rest[i] <= '9')) {
		i++
	}
	for i < len(rest) && rest[i] == ' ' {
		i++
	}
	return i == len(rest) || rest[i] == '#'
}

func (n *nesting) check(ln, col int) bool {
	if d := len(n.stack) + n.flow; d > MaxDepth {
		n.diags.Addf(diag.Pos{Path: n.path, Line: ln, Col: col}, "YAML nested deeper than %d levels (lists and mappings, indented or in brackets); a spec needs a few", MaxDepth)
		return false
	}
	return true
}
