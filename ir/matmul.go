package ir

import (
	"fmt"

	"github.com/kgen-dev/kgen/backend"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/kgenrt"
	"github.com/kgen-dev/kgen/launch"
	"github.com/kgen-dev/kgen/spec"
)

// Matmul is the schedule of a matmul kernel: C = A·B (and, gated, a second
// C2 = A·B2 over the same A) in f32 on simdgroup 8×8 fragments, one
// threadgroup per BM×BN tile of the [m, n] output, then the epilogue (the
// kernel's formulas over acc, acc2, the epilogue inputs and params) once
// per output element.
//
// The K loop stages a BM×BK slice of A and a BK×BN slice of each B in
// threadgroup memory as float, zero-filled outside the matrices, so any m,
// n and k work and no thread leaves before the last matrix operation. The
// accumulators are then stored to threadgroup memory and each thread
// evaluates the epilogue at strided elements of the tile; the kernel never
// reads a fragment's lane layout, which Apple does not specify.
type Matmul struct {
	// Batch is a batched matmul's launch dimensions (matmul_batch.go),
	// nil for one matrix product.
	Batch []string
	Tile  Tile
	// Big is the tile for large m and n (matmul_big.go: BigRule picks it
	// at launch), nil where the kernel keeps Tile.
	Big *Tile
	// Mid is the tile for 9–16 rows (MidRule), set with Big.
	Mid *Tile
	A   Operand
	B   []Operand
	// ThreadgroupBytes is the staging of A and the Bs plus one f32 tile of
	// accumulators per B (row-owning: one f32 strip of NMax columns per B).
	ThreadgroupBytes int
	// Rows is the row reductions' schedule (the rowwise kind's passes over
	// the epilogue), nil without row_* calls. With it the kernel is
	// row-owning: one threadgroup computes RowTile.BM whole rows of the
	// output into a threadgroup-memory strip, then runs the passes over it.
	Rows *Rows
	// NMax is the widest n a row-owning kernel takes: its strip must fit
	// in threadgroup memory. A wider n takes Split.
	NMax int
	// Split is the two-launch form of a row-reducing kernel for n > NMax
	// (nil without row reductions).
	Split *Split
	// Chain is a chain's second product, softmax(scores)·V (nil: no chain).
	Chain *Chain
	// Decode is a batched chain's flash-decoding form (nil otherwise).
	Decode *Decode
	// Gemv is quantized weights' matrix-vector launch for m <= GemvRows
	// (quant.go; nil otherwise).
	Gemv *Gemv
	// CUDA is the CUDA port's plan (a CUTLASS GEMM with an EVT epilogue),
	// nil without `cuda: generated`.
	CUDA *CUTLASS
	// QuantCUDA is the CUDA port of quantized Bs (quant_cuda.go: generated
	// tensor-core kernels instead of CUTLASS), nil otherwise.
	QuantCUDA *QuantCUDA
	// ROCm is the ROCm port's SIMT GEMM (matmul_rocm.go), nil without
	// `rocm: generated`.
	ROCm *HIPGemm
}

// RowTile is the row-owning kernel's tile: 8 rows, the N strip walked 32
// columns at a time by 4 simdgroups of one 8×8 fragment each, so the strip
// costs 32 bytes per column and each simdgroup reduces 2 of the 8 rows.
var RowTile = Tile{BM: 8, BN: 32, BK: 16, WM: 1, WN: 4}

// Tile is a matmul's blocking: a threadgroup computes BM×BN outputs, steps
// through K by BK, and has WM×WN simdgroups, each owning a
// (BM/WM)×(BN/WN) block of 8×8 fragments.
type Tile struct{ BM, BN, BK, WM, WN int }

// DefaultTile is kgen's tile: 32×32 outputs on 2×2 simdgroups (128
// threads), K in steps of 16 (tessera's and MLX's small tile).
var DefaultTile = Tile{BM: 32, BN: 32, BK: 16, WM: 2, WN: 2}

// Threads is the tile's threads per threadgroup.
func (t Tile) Threads() int { return t.WM * t.WN * SimdWidth }

// FragsM and FragsN are the 8×8 fragments per simdgroup down and across.
func (t Tile) FragsM() int { return t.BM / (8 * t.WM) }

// FragsN: see FragsM.
func (t Tile) FragsN() int { return t.BN / (8 * t.WN) }

func (t Tile) String() string {
	return fmt.Sprintf("%dx%dx%d on %dx%d simdgroups", t.BM, t.BN, t.BK, t.WM, t.WN)
}

// Operand is a matmul's A or one of its Bs.
type Operand struct {
	Binding  int // buffer index
	Name     string
	ColMajor bool   // A stored [k, m]; B stored [n, k]
	Acc      string // a B's accumulator name in the formulas
	// Quant is a quantized B's format (quant.go), nil for plain elements;
	// Scales and Biases are then its tables' buffer indices (-1 for a
	// ggml format, whose scales are in its blocks).
	Quant          *kgenrt.Quant
	Scales, Biases int
}

// Matmul returns a matmul kernel's schedule (nil for other kinds).
func (k *Kernel) Matmul() *Matmul {
	m, _ := k.Schedule.(*Matmul)
	return m
}

// ElementInputs are the inputs of segment seg the formulas read one element
// of (all of them except a matmul's operands and a packed input's scales
// and biases, which follow the spec's inputs), in order: what RefInput
// indexes.
func (k *Kernel) ElementInputs(seg int) []Binding {
	var out []Binding
	for _, b := range k.SegmentBindings(seg, Input) {
		if !b.Operand && !b.Table {
			out = append(out, b)
		}
	}
	return out
}

// matmulBindings fixes a matmul's buffer indices: A, the Bs, the epilogue
// inputs in order, the outputs ([m, n]), then the args struct (m, n, k,
// then the params).
func matmulBindings(s *spec.Spec, k *Kernel, diags *diag.List) []Binding {
	if len(s.Segments) > 0 {
		diags.Addf(s.SegmentsPos, "segments are only for rowwise kernels (kind: rowwise)")
	}
	if s.Compute.Type != dtype.Invalid && s.Compute.Type != dtype.F32 {
		diags.Addf(s.Compute.Pos, "a matmul accumulates and computes its epilogue in f32; compute %s is not supported (omit compute or write f32)", s.Compute.Type)
	}
	k.Compute = dtype.F32
	if s.ThreadgroupPos.Line > 0 {
		diags.Addf(s.ThreadgroupPos, "a matmul's threads per threadgroup follow its tile (wm × wn simdgroups of 32); set `tile` instead of `threadgroup`")
	}
	m := s.Matmul
	if m == nil {
		diags.Addf(s.KindPos, "a matmul kernel needs a matmul field naming its operands: matmul: {a: x, b: w}")
		m = &spec.MatmulSpec{}
	}
	batch := batchNames(s, m, diags)
	var out []Binding
	operand := func(o spec.Operand, shape, colShape Shape) {
		if o.ColMajor {
			shape = colShape
		}
		out = append(out, Binding{Index: len(out), Name: o.Name.Name, Role: Input, DType: o.DType.Type, Shape: shape, Operand: true,
			Batch: batchOf(batch, o.Batch, o.BatchPos, "operand "+o.Name.Name, diags)})
	}
	operand(m.A, Shape{"m", "k"}, Shape{"k", "m"})
	for _, b := range m.B {
		if b.Quant != nil {
			out = append(out, quantBindings(s, b, len(out), diags)...)
			continue
		}
		operand(b, Shape{"k", "n"}, Shape{"n", "k"})
	}
	outShape := Shape{"m", "n"}
	if m.Then != nil { // a chain: V is [n, p], the outputs [m, p]
		operand(*m.Then, Shape{"n", "p"}, Shape{"p", "n"})
		outShape = Shape{"m", "p"}
	}
	refuseQuantInputs(s, diags, "a matmul epilogue (its inputs are plain elements; a quantized weight matrix is the matmul's b)")
	for _, in := range s.Inputs {
		if checkDims(in, diags, "a matmul epilogue input has shape [n] (per column), [m] (per row) or [m, n]", Shape{"n"}, Shape{"m"}, Shape{"m", "n"}) &&
			in.Dims == nil && in.DimsPos.Line == 0 {
			diags.Addf(in.Pos, "input %s: a matmul epilogue input needs its shape: {name: %s, shape: [n]} (per column), [m] (per row) or [m, n]", in.Name.Name, in.Name.Name)
		}
		out = append(out, Binding{Index: len(out), Name: in.Name.Name, Role: Input, DType: in.DType.Type, Shape: Shape(in.Dims),
			Batch: batchOf(batch, in.Batch, in.BatchPos, "input "+in.Name.Name, diags)})
	}
	for _, o := range s.Outputs {
		out = append(out, Binding{Index: len(out), Name: o.Name.Name, Role: Output, Shape: outShape,
			Batch: batchOf(batch, nil, diag.Pos{}, "", diags)})
	}
	fields := []Field{{Name: "m", Type: dtype.U32, Size: true}, {Name: "n", Type: dtype.U32, Size: true}, {Name: "k", Type: dtype.U32, Size: true}}
	if m.Then != nil {
		fields = append(fields, Field{Name: "p", Type: dtype.U32, Size: true})
	}
	fields = append(fields, batchFields(batch, out, userNames(s, m), diags, m.BatchPos)...)
	if len(batch) > 0 && m.Then != nil {
		fields = append(fields, decodeFields()...)
	}
	for _, p := range s.Params {
		for _, f := range fields {
			if f.Name == p.Name.Name { // both would be members of the args struct
				diags.Addf(p.Name.Pos, "param %s: the matmul's args struct has the size field %s; rename the param", p.Name.Name, f.Name)
			}
		}
		fields = append(fields, Field{Name: p.Name.Name, Type: p.Type.Type, Example: p.ExampleText})
	}
	if len(batch) > 0 {
		fields = append(fields, strideFields(out)...)
	}
	for i := range fields {
		fields[i].Offset = 4 * i
	}
	return append(out, Binding{Index: len(out), Name: "args", Role: Args, Fields: fields})
}

// checkDims reports a written shape (in.Dims) that is none of the shapes
// the kernel's kind takes; what says which those are. A missing shape is
// the kind's default and always fits.
func checkDims(in spec.Input, diags *diag.List, what string, shapes ...Shape) bool {
	if in.Dims == nil {
		return true
	}
	for _, sh := range shapes {
		if Shape(in.Dims).String() == sh.String() {
			return true
		}
	}
	diags.Addf(in.DimsPos, "input %s: %s, not %s", in.Name.Name, what, Shape(in.Dims))
	return false
}

// matmulSchedule chooses the tile (the spec's override, checked) and
// records the operands.
func matmulSchedule(s *spec.Spec, k *Kernel, diags *diag.List) Schedule {
	mm := &Matmul{Tile: DefaultTile, Batch: batchNames(s, s.Matmul, &diag.List{})}
	if t := s.Tile; t != nil {
		for _, f := range []struct {
			to *int
			v  int
		}{{&mm.Tile.BM, t.BM}, {&mm.Tile.BN, t.BN}, {&mm.Tile.BK, t.BK}, {&mm.Tile.WM, t.WM}, {&mm.Tile.WN, t.WN}} {
			if f.v > 0 {
				*f.to = f.v
			}
		}
		checkTile(mm.Tile, t.Pos, diags)
	}
	mm.A = Operand{Binding: 0, Name: k.Bindings[0].Name, ColMajor: s.Matmul.A.ColMajor}
	for _, b := range s.Matmul.B {
		mm.B = append(mm.B, operandOf(k, b))
	}
	if s.Matmul.Then != nil {
		return chainSchedule(s, k, mm, diags)
	}
	if hasReduction(k) {
		if len(mm.Batch) > 0 {
			diags.Addf(s.Matmul.BatchPos, "a batched matmul's epilogue cannot reduce rows (row_*) yet, outside the softmax chain (then:), which is batched")
		}
		if s.Tile != nil {
			diags.Addf(s.Tile.Pos, "a matmul with row reductions uses the row-owning tile %s (one threadgroup owns whole rows); drop tile", RowTile)
		}
		mm.Tile = RowTile
		mm.Rows = &Rows{}
		k.Schedule = mm // the scheduler reads reductions through k
		schedule(s, k, mm.Rows, diags)
		t := mm.Tile
		staging := mm.stagingBytes(t)
		mm.NMax = (backend.Table[Metal].ThreadgroupBytes - staging) / (4 * t.BM * len(mm.B)) / t.BN * t.BN
		mm.ThreadgroupBytes = staging + 4*t.BM*len(mm.B)*mm.NMax
		k.Threadgroup = t.Threads()
		mm.Split = splitOf(k, mm, true)
		switch {
		case k.Ports[CUDA] && mm.quantized():
			mm.QuantCUDA = quantCUDAPlan(s, k, mm, diags) // refused: the rows are not the CUDA kernels'
		case k.Ports[CUDA]:
			mm.CUDA = cutlassPlan(s, k, mm, diags)
		}
		return mm
	}
	if s.Tile == nil {
		mm.Tile = AutoTile
	}
	t := mm.Tile
	mm.ThreadgroupBytes = mm.tiledBytes(t)
	if mm.Big = bigOf(mm, s.Tile != nil); mm.Big != nil {
		mid := MidTile
		mm.Mid = &mid
		mm.ThreadgroupBytes = mm.tiledBytes(t, *mm.Big, mid)
	}
	k.Threadgroup = t.Threads()
	mm.Gemv = gemvOf(k, mm)
	if k.Ports[CUDA] && mm.quantized() {
		if mm.QuantCUDA = quantCUDAPlan(s, k, mm, diags); mm.QuantCUDA != nil {
			mm.Gemv.CUDA = mm.QuantCUDA.skinnyLaunch()
		}
	} else if k.Ports[CUDA] {
		k.Schedule = mm // the plan reads the epilogue stage through k
		if len(mm.B) > 1 {
			mm.Split = splitOf(k, mm, false) // CUDA's only: Metal's tile holds both accumulators
		}
		mm.CUDA = cutlassPlan(s, k, mm, diags)
	}
	at := s.KindPos
	if s.Tile != nil {
		at = s.Tile.Pos // the tile the spec chose is what does not fit
	}
	for b := Backend(0); b < NumBackends; b++ {
		if lim := backend.Table[b].ThreadgroupBytes; k.Ports[b] && mm.ThreadgroupBytes > lim {
			diags.Addf(at, "the matmul tile %s needs %d bytes of threadgroup memory; %s allows %d (choose a smaller tile)", t, mm.ThreadgroupBytes, b, lim)
		}
	}
	return mm
}

// hasReduction reports whether any formula calls a row_* reduction.
func hasReduction(k *Kernel) bool {
	found := false
	for _, st := range k.Steps {
		Walk(st.Expr, func(e *Expr) {
			if _, ok := ReduceOpOf(e.Func); ok && e.Op == OpCall {
				found = true
			}
		})
	}
	return found
}

// checkTile says what is wrong with a tile override.
func checkTile(t Tile, pos diag.Pos, diags *diag.List) {
	switch {
	case t.BM%(8*t.WM) != 0:
		diags.Addf(pos, "tile bm %d must be a multiple of 8 × wm (%d): each of the wm simdgroups down takes whole 8×8 fragments", t.BM, 8*t.WM)
	case t.BN%(8*t.WN) != 0:
		diags.Addf(pos, "tile bn %d must be a multiple of 8 × wn (%d): each of the wn simdgroups across takes whole 8×8 fragments", t.BN, 8*t.WN)
	case t.BK%8 != 0:
		diags.Addf(pos, "tile bk %d must be a multiple of 8 (the fragments' depth)", t.BK)
	case t.Threads() > backend.MaxThreads():
		diags.Addf(pos, "tile wm × wn = %d simdgroups is %d threads; at most %d", t.WM*t.WN, t.Threads(), backend.MaxThreads())
	}
}

// Kind implements Schedule.
func (*Matmul) Kind() Kind { return KindMatmul }

// Stages implements Schedule: one epilogue stage, every output of one
// element from the accumulators, the epilogue inputs and the params.
func (mm *Matmul) Stages(k *Kernel) []Stage {
	if mm.Chain != nil {
		return mm.chainStages(k)
	}
	if mm.Rows != nil {
		return mm.Rows.Stages(k)
	}
	return []Stage{k.outputStage("epilogue", "every output of one element from its accumulators")}
}

// Launch implements Schedule: one threadgroup per output tile, tiles in
// row-major order along one grid axis: ceildiv(m, BM) · ceildiv(n, BN)
// groups of WM·WN·32 threads.
func (mm *Matmul) Launch(k *Kernel, b Backend) launch.Launch {
	if b == ROCm && mm.ROCm != nil {
		return mm.ROCm.launch(mm)
	}
	if mm.Chain != nil && b == CUDA && mm.Chain.CUDA != nil {
		return mm.chainCUDALaunch()
	}
	if mm.Chain != nil {
		return mm.chainLaunch()
	}
	if b == CUDA && mm.QuantCUDA != nil {
		return mm.QuantCUDA.launch()
	}
	if b == CUDA && mm.CUDA != nil {
		return launch.Launch{} // the library's host functions launch the GEMMs (launch.Launch.Host)
	}
	t := mm.Tile
	tiles := mm.tiles()
	if mm.Rows != nil {
		tiles = launch.Ceil(launch.V("m"), launch.N(t.BM)) // a group owns whole rows
	}
	return launch.Launch{
		Grid:        [3]*launch.Expr{launch.Times(tiles, launch.N(t.Threads())), launch.N(1), batchGrid(mm.Batch)},
		Threadgroup: [3]int{t.Threads(), 1, 1},
	}
}

// Describe implements Schedule.
func (mm *Matmul) Describe(k *Kernel) []string {
	if len(mm.Batch) == 0 {
		return mm.describe(k)
	}
	var shapes []string
	for _, b := range k.Bindings {
		if b.Role != Args {
			shapes = append(shapes, b.Name+" "+Shape(b.FullShape()).String())
		}
	}
	return append([]string{
		fmt.Sprintf("batched over %s: one grid slice (z) per batch element, every tensor a strided view (%s), its element strides in the args struct", Shape(mm.Batch), joinComma(shapes)),
	}, mm.describe(k)...)
}

func (mm *Matmul) describe(k *Kernel) []string {
	if mm.Chain != nil {
		return mm.chainDescribe(k)
	}
	t := mm.Tile
	if mm.Rows != nil {
		out := []string{
			fmt.Sprintf("row-owning tile %s: one threadgroup per %d rows of the output, %d threads", t, t.BM, t.Threads()),
			fmt.Sprintf("n ≤ %d: the rows' accumulators stay in a threadgroup-memory strip (%d bytes in all with staging)", mm.NMax, mm.ThreadgroupBytes),
			fmt.Sprintf("%d reduction pass(es) then the write pass over the strip, each simdgroup reducing %d rows with simd_sum/simd_max", mm.Rows.Passes, t.BM/(t.WM*t.WN)),
			fmt.Sprintf("n > %d: two launches in one call, an f32 [m, n] workspace per accumulator between them (%s, %s)", mm.NMax, mm.Split.Acc.Entry, mm.Split.Rows.Entry),
			mm.Split.Acc.Comment,
			mm.Split.Rows.Comment,
		}
		out = append(out, mm.quantDescribe(k)...)
		if mm.CUDA != nil {
			out = append(out, mm.CUDA.describeCUDA(mm)...)
		}
		return out
	}
	var bs []string
	for _, b := range mm.B {
		bs = append(bs, fmt.Sprintf("%s = %s·%s", b.Acc, operandText(mm.A, "[m, k]"), operandText(b, "[k, n]")))
	}
	out := []string{
		fmt.Sprintf("tile %s: one threadgroup per %d×%d block of the output, %d threads", t, t.BM, t.BN, t.Threads()),
	}
	if b := mm.Big; b != nil {
		out = append(out, fmt.Sprintf("Metal: tile %s instead where its grid has at least %d threadgroups, m and n at least %d and %d (BigRule, at launch)", *b, BigMinGroups, b.BM, b.BN),
			fmt.Sprintf("Metal: tile %s instead where %d < m ≤ %d and n ≥ %d (MidRule, at launch)", *mm.Mid, GemvRows, mm.Mid.BM, mm.Mid.BN))
	}
	out = append(out, []string{
		fmt.Sprintf("accumulate %s in f32 on 8×8 simdgroup fragments, K in steps of %d staged zero-filled in threadgroup memory", joinComma(bs), t.BK),
		fmt.Sprintf("epilogue: accumulators through threadgroup memory (%d bytes in all), every output of each element in range", mm.ThreadgroupBytes),
	}...)
	out = append(out, mm.quantDescribe(k)...)
	if mm.CUDA != nil {
		out = append(out, mm.CUDA.describeCUDA(mm)...)
	}
	if mm.QuantCUDA != nil {
		out = append(out, mm.QuantCUDA.describe(mm)...)
	}
	return out
}

func operandText(o Operand, logical string) string {
	if o.ColMajor {
		return o.Name + logical + " (col-major)"
	}
	return o.Name + logical
}

func joinComma(xs []string) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}
