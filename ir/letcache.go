package ir

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/dtype"
	"github.com/kgen-dev/kgen/funcs"
)

// CachedLet is a per-element let that one reduction pass computes anyway
// (for its own terms) and a later pass would compute again: on a backend
// whose row loops keep a register cache (CUDA's vector cache path), the
// pass exports the value per element and the later passes take it as an
// argument. The cached value is the same float computation, so outputs are
// bit-identical to recomputing it. Softmax's e = exp(x - row_max(x)): pass 2
// exports e, the write pass stores e / row_sum(e) without a second exp.
type CachedLet struct {
	Step  int   // the let's step index
	Pass  int   // the pass that computes and exports it
	Users []int // the later passes (the write pass included) that take it
}

// cudaLetCost is the cache cost of a cached let in 16-byte input vectors
// per vector of the row: a let is kept as floats, and a 16-bit vector holds
// 8 values, twice an input vector's 4 registers.
const cudaLetCost = 2

// cudaLetCacheVectors is the register budget, in 16-byte input vectors
// (4 registers each), of a row cache that holds lets: the input cache of
// the first passes and the let cache of the later ones share registers as
// the passes hand over, so softmax keeps 4 vectors per lane (one input,
// one let: 62 registers at bf16 and f16 against 54 without the let cache,
// no spills; ptxas, checked by TestCUDANoSpills).
const cudaLetCacheVectors = 12

// letCache picks the lets worth caching: per-element float lets that call
// a library function (exp, log, rsqrt, …: cheap arithmetic is recomputed,
// which costs fewer registers than a cache), used by more than one pass.
// Kernels with pair reads keep recomputing (the pair reads are per pass).
func (sc *scheduler) letCache() {
	r, k := sc.rows, sc.k
	if r.Pair != "" || r.Passes == 0 || len(r.Cached) == 0 || !k.RowTensorsInT() {
		return
	}
	first := map[int]int{} // step → the first pass computing it
	for p := 1; p <= r.Passes+1; p++ {
		for _, i := range k.ElementDeps(r.passTargets(k, p)).ElemLets {
			if e := k.Steps[i].Expr; e.Bool || e.Int || !callsLibrary(e) {
				continue
			}
			if q, ok := first[i]; !ok {
				first[i] = p
			} else if j := r.cachedLet(i); j >= 0 {
				r.LetCache[j].Users = append(r.LetCache[j].Users, p)
			} else {
				r.LetCache = append(r.LetCache, CachedLet{Step: i, Pass: q, Users: []int{p}})
			}
		}
	}
}

// RowTensorsInT reports whether every tensor the passes walk is stored in
// the variant's dtype, the condition for CUDA's vector paths, where the
// let cache lives ([rows] tensors are read once per row).
func (k *Kernel) RowTensorsInT() bool {
	for _, b := range k.Bindings {
		if b.Role != Args && b.DType != dtype.Invalid && !b.IsPerRow() {
			return false
		}
	}
	return true
}

// passTargets are the per-element expressions pass p computes: its
// reductions' arguments, or the per-element outputs in the write pass.
func (r *Rows) passTargets(k *Kernel, p int) []*Expr {
	var out []*Expr
	if p <= r.Passes {
		for _, red := range r.Reductions {
			if red.Level == p {
				out = append(out, red.Arg)
			}
		}
		return out
	}
	for i, st := range k.Steps {
		if st.Output && !r.Info[i].PerRow {
			out = append(out, st.Expr)
		}
	}
	return out
}

// callsLibrary reports whether e calls a library function (funcs.Library:
// exp, log, tanh, …), the ones worth a register to avoid recomputing.
func callsLibrary(e *Expr) bool {
	found := false
	Walk(e, func(x *Expr) {
		if f, ok := funcs.Lookup(x.Func); ok && x.Op == OpCall && f.Bound.Rule == funcs.Library {
			found = true
		}
	})
	return found
}

// cachedLet is the index in LetCache of step i's entry, or -1.
func (r *Rows) cachedLet(i int) int {
	for j, c := range r.LetCache {
		if c.Step == i {
			return j
		}
	}
	return -1
}

// cudaVectors sizes CUDAVectors: the largest power of two up to 4 whose
// caches fit the budget — cudaCacheVectors for inputs alone,
// cudaLetCacheVectors with cached lets (cudaLetCost each).
func (r *Rows) cudaVectors() int {
	cost, budget := len(r.Cached), cudaCacheVectors
	if len(r.LetCache) > 0 {
		cost += cudaLetCost * len(r.LetCache)
		budget = cudaLetCacheVectors
	}
	if cost == 0 {
		return 4
	}
	v := 1
	for v < 4 && 2*v*cost <= budget {
		v *= 2
	}
	return v
}

// LetCacheExports lists the steps of the lets pass p exports into the cache.
func (r *Rows) LetCacheExports(p int) []int {
	var out []int
	for _, c := range r.LetCache {
		if c.Pass == p {
			out = append(out, c.Step)
		}
	}
	return out
}

// letCachedIn reports whether pass p takes step i from the let cache.
func (r *Rows) letCachedIn(i, p int) bool {
	if j := r.cachedLet(i); j >= 0 {
		return contains(r.LetCache[j].Users, p)
	}
	return false
}

// CachedStage is pass p's stage (p = Passes+1: the write stage) on the
// let-cached path: it also returns the lets the pass exports (targets
// named CachedLetName) and takes the lets cached by earlier passes as
// ArgCachedLet arguments. ok is false when the let cache leaves pass p as
// it is.
func (r *Rows) CachedStage(k *Kernel, p int) (st Stage, ok bool) {
	exports := r.LetCacheExports(p)
	takes := false
	for _, c := range r.LetCache {
		takes = takes || contains(c.Users, p)
	}
	if len(exports) == 0 && !takes {
		return Stage{}, false
	}
	kind, suffix := StagePass, fmt.Sprintf("pass%d_cached", p)
	if p == r.Passes+1 {
		kind, suffix = StageWrite, "write_cached"
	}
	st = Stage{Kind: kind, Suffix: suffix, Level: p,
		Comment: fmt.Sprintf("pass %d on the let-cached path", p)}
	exprs := r.passTargets(k, p)
	if kind == StagePass {
		for i, red := range r.Reductions {
			if red.Level == p {
				st.Targets = append(st.Targets, Target{Name: fmt.Sprintf("kgen_t%d", i), Expr: red.Arg})
			}
		}
	} else {
		for i, s := range k.Steps {
			if s.Output && !r.Info[i].PerRow {
				st.Targets = append(st.Targets, Target{Name: s.Name, Expr: s.Expr, Int: s.Expr.Int})
			}
		}
	}
	for _, i := range exports {
		ref := &Expr{Op: OpRef, Ref: RefLet, Index: i, Name: k.Steps[i].Name}
		st.Targets = append(st.Targets, Target{Name: CachedLetName(k.Steps[i].Name), Expr: ref})
		exprs = append(exprs, ref)
	}
	st.Deps = k.elementDepsCached(exprs, func(i int) bool { return r.Info[i].PerRow },
		func(i int) bool { return r.letCachedIn(i, p) })
	return k.finishStage(st), true
}

// CachedStages lists the let-cached path's stages, in pass order.
func (r *Rows) CachedStages(k *Kernel) []Stage {
	var out []Stage
	for p := 1; p <= r.Passes+1; p++ {
		if st, ok := r.CachedStage(k, p); ok {
			out = append(out, st)
		}
	}
	return out
}

// CachedLetName is the output parameter through which a stage exports a
// cached let (under the kgen_ prefix, so no user name can clash).
func CachedLetName(let string) string { return "kgen_l_" + let }

// joinInts spells xs as "2", "2 and 3", "2, 3 and 4".
func joinInts(xs []int) string {
	var ss []string
	for _, x := range xs {
		ss = append(ss, fmt.Sprint(x))
	}
	if len(ss) < 2 {
		return strings.Join(ss, "")
	}
	return strings.Join(ss[:len(ss)-1], ", ") + " and " + ss[len(ss)-1]
}
