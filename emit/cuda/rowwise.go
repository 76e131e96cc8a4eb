package cuda

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
)

// The rowwise shape. The CUDA port runs the IR's pass schedule (the same
// passes, reductions, cached inputs and ir.Stage functions as the Metal port)
// in blocks of the spec's threadgroup; a row is worked on by a team of
// threadgroup / rows_per_group lanes (whole warps), ceildiv(rows,
// rows_per_group) blocks per segment. rows_per_group comes from the args
// struct: the CUDA port sets it by the IR's CUDA launch rule (at most two
// 16-byte vectors per lane) rather than the Metal rule (4 values per lane),
// because the kernel loads 16-byte vectors: with the Metal rule a 1K-column
// bf16 row took a whole block with half its lanes idle, and too few bytes
// were in flight per SM. When cols is a multiple of the vector (kV = 16 /
// sizeof(T)) and every pointer is 16-byte aligned, lane l takes the row's
// vectors l, l + lanes, …; otherwise its elements l, l + lanes, …, as on
// Metal. Reductions accumulate in float per lane in that order, then across
// the warp with __shfl_xor_sync, then, when a row spans several warps, the
// warp partials in warp order through shared memory between two barriers.
// Cached inputs (ir.Rows.Cached) live in registers: when the row fits the
// cache, the pass that first reads an input fills the cache with
// independent guarded loads (all in flight at once), and every pass is a
// fully unrolled loop over the cache slots (constant indices, so the arrays
// stay in registers); wider rows take a loop that re-reads device memory.

// rowView is the flat data the rowwise template reads.
type rowView struct {
	Header     string
	Kernel     string
	Doc        []string
	SpecPath   string
	Math       string
	Formulas   []string
	Schedule   []string
	Prelude    []string
	ArgsStruct string
	ArgsFields []field
	Params     []string
	ParamNames string
	CallArgs   string
	EntryNames string
	Funcs      []stageFunc
	Body       []string
	Instances  []instance
	Threads    int
	MinBlocks  int // __launch_bounds__'s minimum resident blocks: 1024 threads per SM, at most 64 registers each
	Reduce     []string
}

type stageFunc struct {
	Comment string
	Name    string
	Params  string
	Lines   []string
}

func emitRows(k *ir.Kernel, opts Options) ([]byte, error) {
	v := rowView{
		Header: opts.Header, Kernel: k.Name, SpecPath: k.SpecPath, Math: k.Math,
		ArgsStruct: k.Name + "_args", Threads: k.Threadgroup, MinBlocks: max(1, 1024/k.Threadgroup),
	}
	if k.Doc != "" {
		v.Doc = strings.Split(strings.TrimSpace(k.Doc), "\n")
	}
	for _, c := range k.Constants {
		v.Formulas = append(v.Formulas, c.Name+" = "+c.Text+" (constant)")
	}
	for _, s := range k.Steps {
		v.Formulas = append(v.Formulas, s.Name+" = "+s.Source)
	}
	v.Schedule = k.Describe()
	for _, name := range preludeBlocks(k) {
		var block bytes.Buffer
		if err := kernelTemplate.ExecuteTemplate(&block, "prelude_"+name, nil); err != nil {
			return nil, fmt.Errorf("cuda prelude %s: %w", name, err)
		}
		v.Prelude = append(v.Prelude, strings.TrimSpace(block.String()))
	}
	v.Reduce = reduceHelpers(k)
	var names []string
	for _, b := range k.Bindings {
		names = append(names, b.Name)
		if b.Role == ir.Args {
			for _, f := range b.Fields {
				v.ArgsFields = append(v.ArgsFields, field{Type: cudaNames[f.Type], Name: f.Name})
			}
		}
	}
	v.Params = params(k, "T")
	v.ParamNames = strings.Join(names, ", ")
	v.CallArgs = strings.Join(names, ", ")
	for _, c := range k.ComputeTypes() {
		v.Funcs = append(v.Funcs, stageFuncs(k, c)...)
	}
	v.Body = rowBody(k)
	var entries []string
	for _, variant := range k.Variants {
		t := cudaNames[variant.DType]
		v.Instances = append(v.Instances, instance{HostName: variant.HostName, Type: t, Params: params(k, t)})
		entries = append(entries, variant.HostName)
	}
	v.EntryNames = strings.Join(entries, ", ")
	var buf bytes.Buffer
	if err := kernelTemplate.ExecuteTemplate(&buf, "rowwise.tmpl", v); err != nil {
		return nil, fmt.Errorf("cuda template for %s: %w", k.Name, err)
	}
	return tidy(buf.Bytes()), nil
}

func reduceHelpers(k *ir.Kernel) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range k.Rows().Reductions {
		op := reduceOp(r.Op.Func())
		if !seen[op] {
			seen[op] = true
			out = append(out, op)
		}
	}
	return out
}

// reduceOp is the combine of a reduction: sum (row_sum, row_mean), max, min.
func reduceOp(fn string) string {
	switch fn {
	case "row_max":
		return "max"
	case "row_min":
		return "min"
	}
	return "sum"
}

func stageFuncs(k *ir.Kernel, c dtype.DType) []stageFunc {
	r := renderer{compute: c, d: dialectFor(k.Math)}
	ct := cudaNames[c]
	var out []stageFunc
	for _, st := range k.Stages() {
		var ps []string
		names, bools := k.StageArgs(st)
		for i, n := range names {
			t := ct
			if bools[i] {
				t = "bool"
			}
			ps = append(ps, t+" "+n)
		}
		for _, t := range st.Targets {
			ty := ct
			if t.Bool {
				ty = "bool"
			}
			ps = append(ps, ty+"& "+t.Name)
		}
		f := stageFunc{Comment: st.Comment, Name: st.Name, Params: strings.Join(ps, ", ")}
		for i, con := range k.Constants {
			if st.Deps.Constants[i] {
				val, _ := dtype.Literal(con.Text, c)
				f.Lines = append(f.Lines, fmt.Sprintf("const %s %s = %s; // %s", ct, con.Name, r.number(val), con.Text))
			}
		}
		for _, i := range st.Deps.ElemLets {
			s := k.Steps[i]
			t := ct
			if s.Expr.Bool {
				t = "bool"
			}
			f.Lines = append(f.Lines, fmt.Sprintf("const %s %s = %s;", t, s.Name, r.expr(s.Expr)))
		}
		for _, t := range st.Targets {
			f.Lines = append(f.Lines, fmt.Sprintf("%s = %s;", t.Name, r.expr(t.Expr)))
		}
		out = append(out, f)
	}
	return out
}
