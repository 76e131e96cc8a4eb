package parity_test

import (
	"github.com/kgen-dev/kgen/internal/long"
	"github.com/kgen-dev/kgen/verify/parity"
)

// The built-in sweeps' sizes in the default suite. `make test` also runs
// `kgen verify`, which checks every built-in × dtype at parity's defaults
// (DefaultMatmulShapes, DefaultCols, DefaultRows, Seed 1), so the unit
// tests' sweeps leave out only the largest of those, and the mutation
// tests, which must fail, run at a few small shapes. A long run (`make
// test-long`, KGEN_LONG=1) runs parity's defaults everywhere, as before.

// sweepMatmulShapes are DefaultMatmulShapes without its two largest,
// tessera's (128, 128, 256) and (40, 256, 128) (4.2 M and 1.3 M products
// of 5.9 M over the set): every size of {1, 7, 8, 33, 513} in every
// position, the other tessera shapes, empty outputs and the split's n of
// 1000 stay. nil in a long run: the defaults.
var sweepMatmulShapes = long.Pick(dropMatmul(parity.DefaultMatmulShapes, parity.MatmulShape{M: 128, N: 128, K: 256}, parity.MatmulShape{M: 40, N: 256, K: 128}), nil)

// sweepCols are DefaultCols without its widest, 8192 (a row as wide as
// the register cache holds, two thirds of a row sweep's work), which
// `make test`'s kgen verify checks for every built-in; nil in a long run.
var sweepCols = long.Pick([]int{1, 7, 64, 4304}, nil)

// mutationMatmulShapes and mutationChainShapes are the mutation sweep's
// shapes: one small launch, and one wide enough for a row-reducing
// matmul's split form (n > 928) or many blocks of a chain; nil in a long
// run.
var (
	mutationMatmulShapes = long.Pick([]parity.MatmulShape{{M: 7, N: 8, K: 33}, {M: 9, N: 1000, K: 33}}, nil)
	mutationChainShapes  = long.Pick([]parity.ChainShape{{M: 7, N: 8, K: 33, P: 7}, {M: 3, N: 1000, K: 9, P: 70}}, nil)
)

func dropMatmul(all []parity.MatmulShape, drop ...parity.MatmulShape) []parity.MatmulShape {
	var out []parity.MatmulShape
next:
	for _, s := range all {
		for _, d := range drop {
			if s == d {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}
