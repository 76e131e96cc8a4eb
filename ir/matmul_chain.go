package ir

import (
	"fmt"

	"github.com/kgen-dev/kgen/backend"
	"github.com/kgen-dev/kgen/diag"
	"github.com/kgen-dev/kgen/launch"
	"github.com/kgen-dev/kgen/spec"
)

// Chain is a matmul chain's second product: softmax(s)·V, with s the
// score (a formula of acc = A·B), streamed over n with an online softmax
// so that n is unbounded. The spec writes it as
//
//	matmul: {a: q, b: kt, then: v}
//	let:    [s: acc * scale, e: exp(s - row_max(s))]
//	outputs: [o: acc2 / row_sum(e)]
//
// One threadgroup owns RowTile.BM query rows. Per block of RowTile.BN
// columns it computes the block of acc (the row-owning kernel's K loop),
// the scores, and per row the running max m and sum l: with
// mNew = max(m, block max), O and l are rescaled by exp(m − mNew) and the
// block's weights exp(s − mNew) are added, O += W·V on simdgroup
// fragments (MLX steel attention's order, kgenrt.SoftmaxMatMulF32). The
// output accumulator O is an f32 [BM][PMax] strip in threadgroup memory, so
// p ≤ PMax; the launcher refuses a wider p.
type Chain struct {
	Then   Operand // V: logical [n, p]; ColMajor = stored [p, n]
	Weight int     // the step of the weights let, e = exp(s - row_max(s))
	Score  *Expr   // s: the row_max argument
	Out    *Expr   // the output with row_sum(e) as the reduction kgen_r0
	PMax   int
	// Skip is when a block of keys is masked for every row of a group
	// (matmul_skip.go), nil when the score hides nothing provably.
	Skip *BlockSkip
	CUDA *ChainCUDA // the CUDA port (a flash-attention kernel), nil without one
}

// AccName is accumulator i's name in the formulas: a B's, then a chain's.
func (mm *Matmul) AccName(i int) string {
	if i < len(mm.B) {
		return mm.B[i].Acc
	}
	return mm.Chain.Then.Acc
}

// chainSchedule checks a chain's formulas against the streaming form and
// lays out its schedule.
func chainSchedule(s *spec.Spec, k *Kernel, mm *Matmul, diags *diag.List) Schedule {
	m := s.Matmul // one b: the spec refuses a gated chain (spec.MatmulSpec)
	for _, in := range s.Inputs {
		diags.Addf(in.Pos, "input %s: a chain's formulas see acc, %s, params and constants; epilogue inputs are not supported in a chain yet", in.Name.Name, m.Then.Acc.Name)
	}
	if s.Tile != nil {
		diags.Addf(s.Tile.Pos, "a chain uses the row-owning tile %s; drop tile", RowTile)
	}
	ch := &Chain{Then: operandOf(k, *m.Then), Weight: -1}
	acc2 := len(m.B)
	for i, st := range k.Steps {
		if st.Output || !isSoftmaxWeight(st.Expr) {
			continue
		}
		if ch.Weight >= 0 {
			diags.Addf(s.Let[i].Name.Pos, "let %s: a chain has one weights let (already %s)", st.Name, k.Steps[ch.Weight].Name)
			continue
		}
		ch.Weight, ch.Score = i, st.Expr.Args[0].Args[0]
	}
	form := fmt.Sprintf("a chain streams softmax(s)·%s: write the weights as a let e: exp(s - row_max(s)) (s of acc, params and constants) and the output as %s / row_sum(e)", ch.Then.Name, ch.Then.Acc)
	if ch.Weight < 0 {
		diags.Addf(m.Then.Pos, "%s", form)
		return mm
	}
	outs := 0
	for i, st := range k.Steps {
		pos := func() diag.Pos {
			if st.Output {
				return s.Outputs[i-len(s.Let)].Name.Pos
			}
			return s.Let[i].Name.Pos
		}
		switch {
		case st.Output:
			outs++
			if !isChainOutput(st.Expr, acc2, ch.Weight) {
				diags.Addf(pos(), "output %s: %s (other outputs are not supported in a chain yet)", st.Name, form)
				continue
			}
			ch.Out = &Expr{Op: OpBinary, Operator: "/", Args: []*Expr{st.Expr.Args[0],
				{Op: OpRef, Ref: RefReduce, Index: 0, Name: ReductionName(0)}}}
		case i == ch.Weight:
		default:
			Walk(st.Expr, func(e *Expr) {
				if e.Op == OpCall {
					if _, red := ReduceOpOf(e.Func); red {
						diags.Addf(pos(), "let %s: %s; other row reductions are not supported in a chain", st.Name, form)
					}
				}
				if e.Op == OpRef && (e.Ref == RefAcc && e.Index == acc2 || e.Ref == RefLet && e.Index == ch.Weight) {
					diags.Addf(pos(), "let %s: %s and the weights are read only by the output (%s)", st.Name, ch.Then.Acc, form)
				}
			})
		}
	}
	if outs != 1 {
		diags.Addf(s.KindPos, "a chain has one output, %s / row_sum(e); this spec has %d", ch.Then.Acc, outs)
	}
	Walk(ch.Score, func(e *Expr) {
		if e.Op == OpRef && e.Ref == RefAcc && e.Index == acc2 {
			diags.Addf(s.Let[ch.Weight].Name.Pos, "let %s: the scores are a formula of acc, params and constants, not %s", k.Steps[ch.Weight].Name, ch.Then.Acc)
		}
	})
	ch.Skip = blockSkipOf(k, ch.Score)
	if k.Ports[CUDA] {
		ch.CUDA = chainCUDAPort(k, ch)
	}
	t := RowTile
	mm.Tile, mm.Chain = t, ch
	staging := 4 * (t.BM*t.BK + t.BK*t.BN + t.BM*t.BN + t.BN*t.BN + t.BM)
	mm.Chain.PMax = (backend.Table[Metal].ThreadgroupBytes - staging) / (4 * t.BM) / t.BN * t.BN
	mm.ThreadgroupBytes = staging + 4*t.BM*mm.Chain.PMax
	k.Threadgroup = t.Threads()
	if len(mm.Batch) > 0 {
		mm.Decode = decodeOf(k, mm)
	}
	return mm
}

// isSoftmaxWeight reports e = exp(x - row_max(x)), the same x twice.
func isSoftmaxWeight(e *Expr) bool {
	if e.Op != OpCall || e.Func != "exp" || len(e.Args) != 1 {
		return false
	}
	d := e.Args[0]
	if d.Op != OpBinary || d.Operator != "-" {
		return false
	}
	mx := d.Args[1]
	return mx.Op == OpCall && mx.Func == "row_max" && len(mx.Args) == 1 && sameExpr(d.Args[0], mx.Args[0])
}

// isChainOutput reports e = acc2 / row_sum(weights).
func isChainOutput(e *Expr, acc2, weight int) bool {
	if e.Op != OpBinary || e.Operator != "/" {
		return false
	}
	a, r := e.Args[0], e.Args[1]
	return a.Op == OpRef && a.Ref == RefAcc && a.Index == acc2 &&
		r.Op == OpCall && r.Func == "row_sum" && len(r.Args) == 1 &&
		r.Args[0].Op == OpRef && r.Args[0].Ref == RefLet && r.Args[0].Index == weight
}

// sameExpr compares two checked expressions structurally.
func sameExpr(a, b *Expr) bool {
	if a.Op != b.Op || a.Ref != b.Ref || a.Index != b.Index || a.Name != b.Name || a.Text != b.Text ||
		a.Operator != b.Operator || a.Func != b.Func || len(a.Args) != len(b.Args) {
		return false
	}
	for i := range a.Args {
		if !sameExpr(a.Args[i], b.Args[i]) {
			return false
		}
	}
	return true
}

// chainStages are a chain's stage functions: the score of one element from
// its acc, and the output from acc2 and the row's sum of weights.
func (mm *Matmul) chainStages(k *Kernel) []Stage {
	never := func(int) bool { return false }
	score := Stage{Kind: StageElement, Suffix: "score", Comment: "the score of one element",
		Targets: []Target{{Name: "kgen_s", Expr: mm.Chain.Score}}}
	score.Deps = k.elementDeps([]*Expr{mm.Chain.Score}, never)
	out := Stage{Kind: StageWrite, Suffix: "write", Comment: "the output of one element from its weighted sum and the row's sum of weights"}
	for _, st := range k.Steps {
		if st.Output {
			out.Targets = append(out.Targets, Target{Name: st.Name, Expr: mm.Chain.Out})
		}
	}
	out.Deps = k.elementDeps([]*Expr{mm.Chain.Out}, never)
	return []Stage{k.finishStage(score), k.finishStage(out)}
}

// chainLaunch is one threadgroup per RowTile.BM rows, ceildiv(m, 8) · 128,
// or one per row in the row-vector form (ChainTiledRule).
func (mm *Matmul) chainLaunch() launch.Launch {
	t := mm.Tile
	l := launch.Launch{
		Grid:        [3]*launch.Expr{launch.Times(launch.Ceil(launch.V("m"), mm.chainGroupRows()), launch.N(t.Threads())), launch.N(1), batchGrid(mm.Batch)},
		Threadgroup: [3]int{t.Threads(), 1, 1},
	}
	if mm.Decode != nil {
		l.Derived = DecodeRules(mm.Batch)
	}
	return l
}

// chainDescribe is the chain's schedule in words.
func (mm *Matmul) chainDescribe(k *Kernel) []string {
	t, ch := mm.Tile, mm.Chain
	out := []string{
		fmt.Sprintf("chain on the row-owning tile %s: one threadgroup per %d rows, %d threads", t, t.BM, t.Threads()),
		fmt.Sprintf("per block of %d columns: acc = %s·%s, the scores, then per row the running max and sum, rescaled by exp(m_old - m_new)", t.BN, operandText(mm.A, "[m, k]"), operandText(mm.B[0], "[k, n]")),
		fmt.Sprintf("%s += weights·%s on 8×8 simdgroup fragments into an f32 strip of p ≤ %d columns per row (%d bytes of threadgroup memory in all); n is unbounded, the launcher refuses a wider p", ch.Then.Acc, operandText(ch.Then, "[n, p]"), ch.PMax, mm.ThreadgroupBytes),
	}
	if ch.Skip != nil {
		out = append(out, "key blocks the score's mask hides from every row of the group are skipped (proved over the block's rows and columns)")
	}
	out = append(out, fmt.Sprintf("row-vector form where m ≤ %d and k ≤ %d (decided per launch): one threadgroup per row, each simdgroup every %dth key read straight into registers, its running max, sum and output in registers, the simdgroups' partials combined once through threadgroup memory", VecRows, ch.PMax, t.Threads()/32))
	if d := mm.Decode; d != nil {
		out = append(out, fmt.Sprintf("flash decoding when the grid is small (%s > 1: about %d threadgroups, chunks of at least %d keys): two launches in one call (%s, %s)", SplitsField, DecodeGroups, DecodeMinChunk, d.Part.Entry, d.Combine.Entry),
			d.Part.Comment, d.Combine.Comment)
	}
	if ch.CUDA != nil {
		out = append(out, mm.chainCUDADescribe(k))
	}
	return out
}

// EvalChainScoreBound is a chain's score at element at (the row_max
// argument of its weights) in float64 with the running error analysis's
// bound, from acc's value and the bound of its f32 sum.
func (k *Kernel) EvalChainScoreBound(at MatmulAt, acc, accErr float64, params []float64, r Rounding) (float64, float64) {
	ch := k.Matmul().Chain
	env := boundEnv{k: k, params: params, r: r, accs: []dual{{acc, accErr}}, ints: at.ints()}
	var lets []dual
	for i := 0; i < ch.Weight; i++ { // the scores' lets come before the weights
		env.lets = lets
		lets = append(lets, env.eval(k.Steps[i].Expr))
	}
	env.lets = lets
	d := env.eval(ch.Score)
	return d.v, d.e
}
