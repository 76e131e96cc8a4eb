// Package hipcpu runs kgen's HIP kernels (emit/cfam's HIP dialect) on the
// CPU with 64-lane wavefronts, as CDNA GPUs (gfx942) run them, and with
// 32-lane ones, as RDNA (gfx1100) does, judged by verify/parity like every
// other port. The test compiles the generated source exactly as kgen
// writes it, as host C++ with clang++-19, after testdata/hipshim.h: the
// shim defines the attributes and replaces clang's AMDGPU builtins
// (workitem and workgroup ids, mbcnt, ds_bpermute, s_barrier) by a fiber
// scheduler's, so the source's own wavefront primitives run as written and
// every lane of a 64-lane wavefront is a lane (e2e/cudacpu's scheduler,
// with the wavefront a parameter). Mutations that only a 64-lane
// wavefront exposes (a butterfly from offset 16, a lane index from the low
// 32 bits of the exec mask, partials counted per 32 lanes) must fail the
// 64-lane run (mutation_test.go). The matmuls (kgen's HIP GEMM: tiled,
// row-owning, quantized, batched along the grid's z, chains) run at shapes
// with tails of the tile, with planted bugs that must fail
// (gemm_test.go, gemm_batch_test.go). It runs where clang++-19 exists; builds
// are cached ($KGEN_HIPCPU_CACHE, else <user cache>/kgen/hipcpu).
package hipcpu
