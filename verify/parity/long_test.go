package parity_test

import (
	"github.com/kgen-dev/kgen/internal/long"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/verify/parity"
)

// The built-in sweeps' sizes in the default suite. `make test` also runs
// `kgen verify`, which checks every built-in × dtype at parity's defaults
// (DefaultSizes' SizesFor, DefaultMatmulShapes, DefaultChainShapes,
// DefaultCols, DefaultRows, Seed 1): the same launches these sweeps make
// at Seed 1, and the larger ones. So the unit tests' sweeps run only the
// small shapes, where what they add to verify (the NaN-confinement checks,
// the mutation tests that must fail) is decided, and every large launch
// is run once per `make test`, by verify. A long run (`make test-long`,
// KGEN_LONG=1) runs parity's defaults everywhere, as before.

// sweepMatmulShapes are the shapes of DefaultMatmulShapes with fewer than
// 2^15 products, and the split's n of 1000: every size of {1, 7, 8, 33}
// in every position, 513 as m and as n, empty outputs and the row-reducing
// split form. The tessera shapes and 33×33×513 (95% of the set's
// products) are verify's; nil in a long run: the defaults.
var sweepMatmulShapes = long.Pick(smallMatmul(parity.DefaultMatmulShapes), nil)

// sweepCols are DefaultCols without 4304 and 8192, the wide paths (the
// register cache's last width and past it: 98% of a row sweep's work),
// which verify checks for every built-in and the shuffled-lane, gather
// and column tests run at 4304; nil in a long run.
var sweepCols = long.Pick([]int{1, 7, 64}, nil)

// sameBytesCols are TestColKernelsSameBytes' widths: two and 32 column
// groups of the combine (ir.ColCombineCols), vector paths both; 64 and
// 4304 in a long run (a 4304-wide launch was three quarters of the test's
// time, and verify checks every column kernel at 4304 and 8192 in order).
var sameBytesCols = long.Pick([]int{64, 1024}, []int{64, 4304})

// mutationMatmulShapes and mutationChainShapes are the mutation sweep's
// shapes: one small launch, and one wide enough for a row-reducing
// matmul's split form (n > 928) or many blocks of a chain; nil in a long
// run.
var (
	mutationMatmulShapes = long.Pick([]parity.MatmulShape{{M: 7, N: 8, K: 33}, {M: 9, N: 1000, K: 33}}, nil)
	mutationChainShapes  = long.Pick([]parity.ChainShape{{M: 7, N: 8, K: 33, P: 7}, {M: 3, N: 1000, K: 9, P: 70}}, nil)
)

// mutationRows are the mutation sweep's row counts for rowwise kernels:
// 11 rows hold every kind of row (RowKindOf), so a replaced output that
// fails at one row fails there too; {1, 11} in a long run.
var mutationRows = long.Pick([]int{11}, []int{1, 11})

// mutationSizes are an elementwise kernel's mutation sizes: a thread's
// elements and one more (the vector path and its scalar tail) and a
// partial last threadgroup, sizes of SizesFor with lanes enough that a
// replaced output cannot agree by chance everywhere; nil, SizesFor
// itself, in a long run and for the other kinds. Each size is a launch
// per dtype and mutation: SizesFor's ten were most of the sweep's time.
func mutationSizes(k *ir.Kernel) []int {
	if long.Enabled() || k.Kind != ir.Elementwise {
		return nil
	}
	ept := max(k.Schedule.(*ir.Elems).PerThread, 1)
	tg := max(k.Threadgroup, 1)
	return []int{ept + 1, tg*ept + tg*ept/2 + ept/2 + 1}
}

// smallMatmul keeps the shapes under 2^15 products and the split's n.
func smallMatmul(all []parity.MatmulShape) []parity.MatmulShape {
	var out []parity.MatmulShape
	for _, s := range all {
		if s.M*s.N*s.K < 1<<15 || s.N >= 1000 {
			out = append(out, s)
		}
	}
	return out
}
