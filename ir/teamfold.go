package ir

// The team fold: how a row spread over several simdgroups (warps,
// wavefronts) combines their partials, which every C-family dialect's
// kgen_team_<op> (templates/*/team_reduce.tmpl) follows.
//
// Each simdgroup stores its partial, the group meets one barrier, and the
// row's partials are then combined in simdgroup order: on Metal every
// simdgroup of the row folds them itself (lane i < m reads partial i and
// simd_<op> combines the m values, the other lanes adding the identity,
// which changes nothing), so a lane reads at most one float and no value
// has to be broadcast through a second barrier; on CUDA and HIP every
// thread reads the m partials in order (a warp's reads of one address are
// one broadcast there). The order is the same everywhere, partial 0 first,
// and is the order kgenrt.RowAcc combines simdgroups in.
//
// Without a second barrier, the next reduction's stores could overwrite
// partials a slower simdgroup has not read yet, so each simdgroup keeps
// TeamSlots partials and successive reductions take them in turn: a
// reduction's stores reuse the slot of the reduction two before, whose
// reads every lane finished before it arrived at the barrier of the one in
// between.
const TeamSlots = 2

// TeamBytes is the threadgroup memory the team fold needs at tg threads:
// TeamSlots floats per simdgroup.
func TeamBytes(tg int) int { return 4 * TeamSlots * (tg / SimdWidth) }
