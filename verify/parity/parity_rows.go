package parity

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/mslcpu"
)

// RowOptions shape the test data of a rowwise kernel.
type RowOptions struct {
	Cols []int // row widths; default DefaultCols
	Rows []int // row counts; default DefaultRows
	// Range is the largest finite input magnitude: DefaultRange (170), or 8
	// with Plain.
	Range float64
	Seed  uint64
	// Plain draws inputs uniformly from [-Range, Range] with no special
	// values. Otherwise inputs are adversarial: every row is finite and
	// mixed (see MixedRow) except the designated rows of RowKindOf — one
	// with a NaN, one with +Inf, one with -Inf, one of ±0, one of
	// subnormals, one of huge values — and row vectors are finite and mixed.
	Plain bool
	// Order is the lane order within each threadgroup (mslcpu.Forward if
	// unset); a kernel whose result depends on it has a race.
	Order mslcpu.LaneOrder
}

// DefaultCols cover one column, an odd width below a simdgroup, a narrow
// row (several rows per threadgroup), an odd wide row, and a row as wide as
// the register cache holds at 256 threads.
var DefaultCols = []int{1, 7, 64, 4304, 8192}

// DefaultRows cover no rows (a launch of no threadgroups), one row, and
// several rows with a partial last threadgroup.
var DefaultRows = []int{0, 1, 11}

// RowResult is the outcome of one variant at one shape.
type RowResult struct {
	HostName   string
	Rows, Cols int // rows of the first segment (segment s has SegmentRows(rows, s))
	Checked    int
	Failed     int
	Undecided  int // references at the compute type's overflow edge (see Result.Undecided)
	// NaNs and Infs count the lanes whose reference is NaN or ±Inf: with
	// adversarial inputs they must stay within the designated rows, or the
	// check would be vacuous.
	NaNs, Infs int
	NaNRows    []int   // the rows (of any segment) with a NaN reference, in order met
	MaxAbs     float64 // largest |got-ref| among finite pairs
	MaxRel     float64 // largest |got-ref|/|ref| where |ref| >= the storage type's smallest normal
	Worst      *Lane   // the lane with the largest Excess; nil when every lane is exact
	Failures   []Lane  // the first few failing lanes
	First      string  // the first failure, described, or ""
}

// SegmentRows is the row count parity gives segment s of a multi-segment
// kernel checked at rows: segments get different counts (rows, rows+3, …)
// so a launch mixes them, and all of them are 0 at 0.
func SegmentRows(rows, s int) int {
	if rows <= 1 {
		return rows
	}
	return rows + 3*s
}

// CheckRows runs every variant of a rowwise kernel at every width and row
// count and compares each output element with the kernel's float64 row
// evaluation (ir.Kernel.EvalRowsBound) under the variant's tolerance widened
// by the rounding bound.
func CheckRows(ctx context.Context, k *ir.Kernel, source []byte, opts RowOptions) ([]RowResult, error) {
	if k.Kind != ir.Rowwise {
		return nil, fmt.Errorf("parity: kernel %s is not rowwise", k.Name)
	}
	if len(opts.Cols) == 0 {
		opts.Cols = DefaultCols
	}
	if len(opts.Rows) == 0 {
		opts.Rows = DefaultRows
	}
	if opts.Range == 0 {
		opts.Range = DefaultRange
		if opts.Plain {
			opts.Range = 8
		}
	}
	var out []RowResult
	for _, v := range k.Variants {
		for _, cols := range opts.Cols {
			for _, rows := range opts.Rows {
				r, err := checkRowsOne(ctx, k, v, source, rows, cols, opts)
				if err != nil {
					return out, err
				}
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// checkRowsOne runs variant v on one rows×cols input set and judges every
// output element against the bounded float64 reference.
func checkRowsOne(ctx context.Context, k *ir.Kernel, v ir.Variant, source []byte, rows, cols int, opts RowOptions) (RowResult, error) {
	rng := rand.New(rand.NewPCG(opts.Seed, uint64(rows)<<32|uint64(cols)))
	segRows := make([]int, k.NumSegments())
	for s := range segRows {
		segRows[s] = SegmentRows(rows, s)
	}
	c := &rowCheck{k: k, v: v, opts: opts, cols: cols, segRows: segRows,
		vals:   RowInputs(rng, k, v, segRows, cols, opts.Range, opts.Plain),
		params: rowParamValues(k)}
	got, err := c.run(ctx, source)
	if err != nil {
		return RowResult{}, err
	}
	c.got = got
	c.res = RowResult{HostName: v.HostName, Rows: rows, Cols: cols}
	c.rounding = roundingOf(k, v)
	for s := range segRows {
		c.checkSegment(s)
	}
	if len(c.res.Failures) > 0 {
		c.res.First = c.res.Failures[0].String()
	}
	return c.res, nil
}

// rowCheck is the state of one checkRowsOne call, shared by its helpers.
type rowCheck struct {
	k        *ir.Kernel
	v        ir.Variant
	opts     RowOptions
	cols     int
	segRows  []int       // rows of each segment
	vals     [][]float64 // inputs as stored, by binding index
	params   []float64
	got      [][]byte // the kernel's buffers after the run
	rounding ir.Rounding
	res      RowResult
	worst    float64 // largest excess seen so far
}

// rowLaneAt locates one output element and what is needed to judge it.
type rowLaneAt struct {
	seg, row, col int
	out           ir.Binding
	t             dtype.DType
	minNormal     float64
	names         []string    // the segment's input names
	inputs        [][]float64 // the row's inputs
}

// run encodes the buffers and runs the kernel on the MSL CPU interpreter.
func (c *rowCheck) run(ctx context.Context, source []byte) ([][]byte, error) {
	k := c.k
	rpg := k.Threadgroup / ir.LanesPerRow(c.cols, k.Threadgroup)
	groups := 0
	for _, r := range c.segRows {
		groups += (r + rpg - 1) / rpg
	}
	return mslcpu.Run(ctx, mslcpu.Launch{
		Source: source, HostName: c.v.HostName, Buffers: c.buffers(rpg),
		Grid:        [3]uint32{uint32(groups * k.Threadgroup), 1, 1},
		Threadgroup: [3]uint32{uint32(k.Threadgroup), 1, 1},
		Order:       c.opts.Order,
	})
}

// buffers encodes the inputs, NaN-filled outputs (every element must be
// overwritten) and the args struct, by binding index.
func (c *rowCheck) buffers(rpg int) [][]byte {
	k := c.k
	buffers := make([][]byte, len(k.Bindings))
	for _, b := range k.BindingsOf(ir.Input) {
		buffers[b.Index] = encode(c.vals[b.Index], elemType(b, c.v))
	}
	for _, b := range k.BindingsOf(ir.Output) {
		nan := make([]float64, c.segRows[b.Segment]*c.cols)
		for j := range nan {
			nan[j] = math.NaN() // every element must be overwritten
		}
		buffers[b.Index] = encode(nan, elemType(b, c.v))
	}
	args := k.ArgsBinding()
	buffers[args.Index] = rowArgsBytes(args, c.segRows, c.cols, rpg, c.params)
	return buffers
}

// checkSegment compares every row of segment s with the bounded reference.
func (c *rowCheck) checkSegment(s int) {
	k, cols := c.k, c.cols
	ins, outs := k.SegmentBindings(s, ir.Input), k.SegmentBindings(s, ir.Output)
	names := make([]string, len(ins))
	for i, b := range ins {
		names[i] = b.Name
	}
	row := make([][]float64, len(ins))
	for r := 0; r < c.segRows[s]; r++ {
		for i, b := range ins {
			if b.IsRowVector() {
				row[i] = c.vals[b.Index]
			} else {
				row[i] = c.vals[b.Index][r*cols : (r+1)*cols]
			}
		}
		want, bound := k.EvalRowsBound(row, c.params, c.rounding)
		for o, b := range outs {
			t := elemType(b, c.v)
			at := rowLaneAt{seg: s, row: r, out: b, t: t, minNormal: LimitsOf(t).MinNormal, names: names, inputs: row}
			for j := 0; j < cols; j++ {
				at.col = j
				c.checkLane(at, decode(c.got[b.Index], t, r*cols+j), want[o][j], bound[o][j])
			}
		}
	}
}

// checkLane judges one element: it updates the counts and statistics and
// records the lane if it failed or is the worst so far.
func (c *rowCheck) checkLane(at rowLaneAt, g, w, bound float64) {
	c.tally(at.row, w, bound)
	allowed, ok, note := judge(g, w, bound, at.t, c.v.Tolerance)
	d := math.Abs(g - w)
	if !math.IsNaN(d) && !math.IsInf(d, 0) {
		c.res.MaxAbs = math.Max(c.res.MaxAbs, d)
		if math.Abs(w) >= at.minNormal {
			c.res.MaxRel = math.Max(c.res.MaxRel, d/math.Abs(w))
		}
	}
	excess := 0.0
	if g != dtype.Round(w, at.t) || !ok {
		excess = excessOf(g, w, allowed, note)
	}
	if ok && excess <= c.worst {
		return
	}
	lane := c.lane(at, g, w, allowed, excess, note)
	if excess > c.worst {
		c.worst, c.res.Worst = excess, &lane
	}
	if !ok {
		c.res.Failed++
		if len(c.res.Failures) < maxFailures {
			c.res.Failures = append(c.res.Failures, lane)
		}
	}
}

// tally counts a checked element and the undecided, NaN and Inf wants.
func (c *rowCheck) tally(r int, w, bound float64) {
	res := &c.res
	res.Checked++
	if math.IsInf(bound, 1) {
		res.Undecided++
	}
	switch {
	case math.IsNaN(w):
		res.NaNs++
		if !slices.Contains(res.NaNRows, r) {
			res.NaNRows = append(res.NaNRows, r)
		}
	case math.IsInf(w, 0):
		res.Infs++
	}
}

// lane describes one element for the report, its inputs included.
func (c *rowCheck) lane(at rowLaneAt, g, w, allowed, excess float64, note string) Lane {
	vals := make([]float64, len(at.inputs))
	for i := range at.inputs {
		vals[i] = at.inputs[i][at.col]
	}
	r, j, n := at.row, at.col, c.segRows[at.seg]
	return Lane{N: n, Index: r*c.cols + j, Output: at.out.Name, Inputs: at.names, Values: vals,
		Got: g, Want: w, Allowed: allowed, Excess: excess, Note: note,
		Row: r, Col: j, Cols: c.cols, Kind: kindOf(c.opts, r, n)}
}

// RowInputs draws the inputs CheckRows gives variant v of rowwise kernel k
// at segRows rows per segment and cols columns, by binding index (nil for
// outputs and args), each value exact in its storage type: plain values
// uniform in [-rng, rng], or adversarial rows (RowKindOf) and finite mixed
// row vectors. Harnesses that launch kernels themselves (a GPU) use it to
// meet the same inputs.
func RowInputs(r *rand.Rand, k *ir.Kernel, v ir.Variant, segRows []int, cols int, rng float64, plain bool) [][]float64 {
	vals := make([][]float64, len(k.Bindings))
	carrierOf := carriers(k)
	for _, b := range k.BindingsOf(ir.Input) {
		t := elemType(b, v)
		switch {
		case plain:
			n := cols
			if !b.IsRowVector() {
				n = segRows[b.Segment] * cols
			}
			vals[b.Index] = Inputs(r, n, t, rng, false)
		case b.IsRowVector():
			vals[b.Index] = finiteInputs(r, cols, t, rng)
		default:
			rows := segRows[b.Segment]
			vals[b.Index] = make([]float64, 0, rows*cols)
			for row := 0; row < rows; row++ {
				kind := RowKindOf(row, rows)
				vals[b.Index] = append(vals[b.Index], rowValues(r, kind, cols, t, rng, carrierOf(b, kind))...)
			}
		}
	}
	return vals
}

// kindOf is the kind of row r, or MixedRow for plain inputs.
func kindOf(opts RowOptions, r, rows int) RowKind {
	if opts.Plain {
		return MixedRow
	}
	return RowKindOf(r, rows)
}

// carriers returns which [rows, cols] input carries a designated row's
// special value: the NaN row's goes to the segment's first such input, the
// +Inf row's to the second (the first when there is one), and so on, so a
// kernel with several row inputs (add_rms_norm's x and residual) meets
// specials in each.
func carriers(k *ir.Kernel) func(b ir.Binding, kind RowKind) bool {
	pos := map[int]int{}   // binding index → position among its segment's [rows, cols] inputs
	count := map[int]int{} // segment → how many
	for _, b := range k.BindingsOf(ir.Input) {
		if !b.IsRowVector() {
			pos[b.Index] = count[b.Segment]
			count[b.Segment]++
		}
	}
	return func(b ir.Binding, kind RowKind) bool {
		return pos[b.Index] == int(kind-NaNRow)%count[b.Segment]
	}
}

// rowParamValues picks typical runtime params for rowwise kernels: f32
// params are 1e-5 (then 1, 2, …: an epsilon first), integers 3, 4, ….
func rowParamValues(k *ir.Kernel) []float64 {
	var out []float64
	for i, p := range k.Params() {
		switch {
		case p.Type == dtype.F32 && i == 0:
			out = append(out, float64(float32(1e-5)))
		case p.Type == dtype.F32:
			out = append(out, float64(i))
		default:
			out = append(out, float64(3+i))
		}
	}
	return out
}

// rowArgsBytes lays out the args struct: the rows of each segment, cols,
// rows_per_group, then the params.
func rowArgsBytes(b ir.Binding, segRows []int, cols, rpg int, params []float64) []byte {
	buf := make([]byte, 4*len(b.Fields))
	sizes := append(append([]int(nil), segRows...), cols, rpg)
	si, p := 0, 0
	for _, f := range b.Fields {
		var word uint32
		switch {
		case f.Size:
			word = uint32(sizes[si])
			si++
		case f.Type == dtype.F32:
			word = math.Float32bits(float32(params[p]))
			p++
		case f.Type == dtype.I32:
			word = uint32(int32(params[p]))
			p++
		default:
			word = uint32(params[p])
			p++
		}
		binary.LittleEndian.PutUint32(buf[f.Offset:], word)
	}
	return buf
}
