package spec

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/goccy/go-yaml/ast"
	yamlparser "github.com/goccy/go-yaml/parser"

	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/internal/yamlnode"
)

// layout is the canonical order of the top-level keys: the contract's,
// with the segments extension next to the kind it qualifies and the
// matmul operands before the inputs they join.
var layout = []string{"kernel", "doc", "kind", "segments", "dtypes", "compute", "matmul", "batch", "inputs", "params",
	"constants", "let", "outputs", "backward", "save", "math", "domain", "threadgroup", "tile", "cuda_tiles", "ports", "tolerance"}

// Layout returns the canonical order of a spec's top-level keys, the order
// `kgen fmt` writes (and its help text lists).
func Layout() []string { return slices.Clone(layout) }

// Format returns src in kgen's canonical spec layout (`kgen fmt`): the
// top-level keys in the order of layout (unknown keys last, in their own
// order), one space before a trailing comment, one newline at the end.
// Comments are kept with the key they annotate; the comment heading the
// file (a modeline, a licence) stays at the top whichever key comes first.
// Values are written as they are: a number keeps its spelling, a flow list
// stays a flow list, so formatting never changes what a spec means.
// A file that is not YAML gets positioned diagnostics, as gen would give.
func Format(path string, src []byte) ([]byte, error) {
	var diags diag.List
	doc, ok := yamlnode.Parse(path, src, &diags)
	if ok {
		doc.CheckDuplicates(&diags) // positioned, as gen reports them; never the YAML library's own text
	}
	if !ok || diags.Len() > 0 {
		return nil, diags.Err()
	}
	file, err := yamlparser.ParseBytes(src, yamlparser.ParseComments, yamlparser.AllowDuplicateMapKey())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(file.Docs) != 1 {
		return nil, fmt.Errorf("%s: want one YAML document, found %d", path, len(file.Docs))
	}
	if m, ok := file.Docs[0].Body.(*ast.MappingNode); ok {
		reorder(m)
	}
	out := bytes.TrimRight([]byte(file.String()), "\n")
	return append(out, '\n'), nil
}

// reorder sorts m's keys by layout, moving the file's heading comment to
// the new first key.
func reorder(m *ast.MappingNode) {
	if len(m.Values) == 0 {
		return
	}
	head := m.Values[0].GetComment()
	rank := func(v *ast.MappingValueNode) int {
		if i := slices.Index(layout, v.Key.String()); i >= 0 {
			return i
		}
		return len(layout)
	}
	slices.SortStableFunc(m.Values, func(a, b *ast.MappingValueNode) int { return rank(a) - rank(b) })
	if first := m.Values[0]; head != nil && first.GetComment() != head {
		for _, v := range m.Values {
			if v.GetComment() == head {
				_ = v.SetComment(nil)
			}
		}
		if own := first.GetComment(); own != nil {
			head = &ast.CommentGroupNode{BaseNode: &ast.BaseNode{}, Comments: append(slices.Clone(head.Comments), own.Comments...)}
		}
		_ = first.SetComment(head)
	}
}

// Files lists the spec files under root/dir as LoadDir reads them: paths
// relative to root, slash-separated, in path order.
func Files(root, dir string) ([]string, error) { return findSpecFiles(root, dir) }
