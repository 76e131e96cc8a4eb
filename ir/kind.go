package ir

import (
	"fmt"
	"github.com/kgen-dev/kgen/dtype"

	"github.com/kgen-dev/kgen/backend"
	"github.com/kgen-dev/kgen/launch"
)

// Kind is the shape of work a kernel does. Each kind is one Schedule type;
// each consumer (emitters, inventory, parity, kgenrt checks) keeps one map
// from Kind to its handler, and a test fails when a map lacks a kind.
type Kind int

// The kinds.
const (
	Elementwise Kind = iota
	Rowwise
	KindMatmul // the schedule type is Matmul
	NumKinds
)

var kindNames = [NumKinds]string{"elementwise", "rowwise", "matmul"}

func (k Kind) String() string {
	if k < 0 || k >= NumKinds {
		return fmt.Sprintf("kind(%d)", int(k))
	}
	return kindNames[k]
}

// Backend is a GPU backend; see package backend for the enum and limits.
type Backend = backend.Backend

// The backends, in the order of the port table.
const (
	Metal       = backend.Metal
	CUDA        = backend.CUDA
	ROCm        = backend.ROCm
	NumBackends = backend.NumBackends
)

// Schedule is what makes one kind of kernel: how its work is split into
// stage functions, how it is launched, and how it is described. The rest of
// the Kernel (bindings, variants, formulas) is kind-neutral.
type Schedule interface {
	Kind() Kind
	// Stages lists the stage functions, in the order they are defined.
	Stages(k *Kernel) []Stage
	// Launch is the kernel's launch on backend b.
	Launch(k *Kernel, b Backend) launch.Launch
	// Describe is the schedule in words, one line per pass, for comments
	// and the inventory (nil when there is nothing to say).
	Describe(k *Kernel) []string
}

// Elems is the schedule of an elementwise kernel: each thread takes
// PerThread consecutive elements and evaluates every formula per element in
// one stage function.
type Elems struct {
	// PerThread is chosen so each thread moves whole 16-byte vectors of its
	// narrowest tensor.
	PerThread int
	// CUDAPerThread is the elements one CUDA thread handles, an expression
	// of the variant's element size (launch.ElemBytes), when every tensor
	// takes the variant's dtype: one 16-byte vector, or under math: precise
	// 4 / element bytes of them (two at 16-bit storage, where libdevice's
	// transcendentals cost more than one vector's memory time; one at f32,
	// where a second vector only lengthens the thread). nil: PerThread.
	CUDAPerThread *launch.Expr
	// Batch is a batched elementwise kernel's launch dimensions (size
	// fields, outermost first; rowwise_batch.go): every tensor is a view,
	// batch dims ++ [n], and a thread's slice lies in one batch element.
	Batch []string
}

// PerThreadOn is the elements one thread handles on backend b.
func (e *Elems) PerThreadOn(b Backend) *launch.Expr {
	if b == CUDA && e.CUDAPerThread != nil {
		return e.CUDAPerThread
	}
	return launch.N(e.PerThread)
}

// cudaPerThread is Elems.CUDAPerThread's rule.
func cudaPerThread(k *Kernel) *launch.Expr {
	for _, b := range k.Bindings {
		if b.Role != Args && b.DType != dtype.Invalid {
			return nil
		}
	}
	vector := launch.Over(launch.N(16), launch.V(launch.ElemBytes))
	if k.Math == "fast" {
		return vector
	}
	return launch.Times(vector, launch.Over(launch.N(4), launch.V(launch.ElemBytes)))
}

// Kind implements Schedule.
func (*Elems) Kind() Kind { return Elementwise }

// Stages implements Schedule: one stage, every output of one element.
func (*Elems) Stages(k *Kernel) []Stage {
	return []Stage{k.outputStage("eval", "every output of one element")}
}

// outputStage is a kind's one stage that computes every output of one
// element from the element's values alone (no per-row lets).
func (k *Kernel) outputStage(suffix, comment string) Stage {
	st := Stage{Kind: StageElement, Suffix: suffix, Comment: comment}
	var exprs []*Expr
	for _, s := range k.Steps {
		if s.Output {
			st.Targets = append(st.Targets, Target{Name: s.Name, Expr: s.Expr, Int: s.Expr.Int})
			exprs = append(exprs, s.Expr)
		}
	}
	st.Deps = k.elementDeps(exprs, func(int) bool { return false })
	return k.finishStage(st)
}

// Launch implements Schedule: ceildiv(n, elements per thread) threads.
func (e *Elems) Launch(k *Kernel, b Backend) launch.Launch {
	threads := launch.Ceil(launch.V("n"), e.PerThreadOn(b))
	if len(e.Batch) > 0 { // every batch element's slices (rowwise_batch.go)
		threads = launch.Times(threads, batchGrid(e.Batch))
	}
	return launch.Launch{
		Grid:        [3]*launch.Expr{threads, launch.N(1), launch.N(1)},
		Threadgroup: [3]int{k.Threadgroup, 1, 1},
	}
}

// Describe implements Schedule.
func (*Elems) Describe(*Kernel) []string { return nil }

// Rows returns a rowwise kernel's schedule, for rowwise handlers (nil for
// other kinds).
func (k *Kernel) Rows() *Rows {
	if mm, ok := k.Schedule.(*Matmul); ok {
		return mm.Rows
	}
	r, _ := k.Schedule.(*Rows)
	return r
}

// Grid is the kernel's launch grid on backend b, one expression per axis,
// in the inventory's grammar.
func (k *Kernel) Grid(b Backend) []string {
	g := k.Launch(b).GridStrings()
	return g[:]
}
