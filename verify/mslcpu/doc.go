// Package mslcpu runs kgen-generated Metal Shading Language kernels on a
// Linux CPU, so that Metal kernels get CI without a Mac.
//
// MSL is C++ with a few keywords and a standard library of its own. The
// harness compiles the unmodified .metal text as C++20 with clang (>= 17)
// against a stand-in <metal_stdlib> (shim/metal_stdlib, embedded), after a
// line-preserving pre-pass for the constructs clang rejects: explicit
// instantiations carrying [[host_name]], `threadgroup T*` pointer
// qualifiers, and vec<T,N>(...) constructors. A driver generated from the
// kernel signatures (driver.go) binds [[buffer(i)]] parameters to Launch
// buffers and position attributes ([[thread_position_in_grid]] and the
// other uint/uint3 positions) to each thread's coordinates. A small runtime
// (shim/runtime.cc) runs the grid group by group: kernels without barriers
// or simd functions as a plain loop over each group's lanes; kernels with
// them as fibers (one stack per lane, switching only at
// threadgroup_barrier, simdgroup_barrier and simd_*), with 32-lane
// simdgroups. Builds are cached by a hash of everything that shapes them.
//
// Built-in checks: threadgroup memory is filled with 0xFF bytes (NaN for
// float, half and bfloat) before each group, so reads of memory no lane
// wrote show up; each buffer ends just before an inaccessible page, so
// overruns of more than the 16-byte alignment slack crash with a message
// naming the buffer; each kernel-scope threadgroup array is storage of its
// own between guard zones (tgvars.go), and the kernel's threadgroup memory
// is held to Metal's 32 KiB; lanes that wait at different barriers or simd calls,
// or that return while others wait at a barrier, are reported as errors;
// Launch.Order runs lanes in reverse or shuffled order to expose races
// inside a group; `double`, erf, log1p, expm1, printf and friends are
// poisoned. CheckSyntax adds clang address spaces so that device /
// constant / threadgroup / thread pointer mix-ups are compile errors.
//
// A simd call (simd_sum, simd_shuffle, simdgroup_load, ...) waits only for
// the lanes of its own simdgroup, as on Apple GPUs: once they have all
// arrived that simdgroup runs on at once, ahead of the others, up to its
// next threadgroup_barrier. A kernel that leans on a simd call to order
// another simdgroup's threadgroup-memory writes therefore reads them before
// they happen.
//
// Launch.Sanitize builds with AddressSanitizer (buffers become heap blocks
// of their exact size: an access one byte past the end is reported, with
// the buffer, the lane and the kernel.metal line; fiber switches are
// announced to ASan) or ThreadSanitizer (every lane of a group is an OS
// thread and barriers and simd exchanges are the only synchronisation, so
// two lanes touching the same memory with no barrier between them are
// reported as a data race). SanitizerAvailable says whether the runtimes
// are installed (Debian: libclang-rt-19-dev). Launch.Flags adds compiler
// flags, e.g. -ffp-contract=fast -mfma to measure FMA contraction.
//
// Any compute kernel within the subset runs, not only kgen's: plain
// `kernel void f(...)` functions under their own names and template
// instantiations under their [[host_name]]s; parameters are [[buffer(i)]]
// pointers or references and the position attributes listed in
// positionAttrs. `kgen emu` is the command line for it, and
// docs/fidelity.md lists what the emulation does and does not reproduce.
//
// Where fidelity ends (tolerances and other tests must cover these):
//   - Fast math, Metal's default, is not modelled: metal::fast:: functions
//     are the precise ones here, and nothing is reassociated or assumed
//     finite. Precise functions are glibc's (typically < 1 ulp), which may
//     be more accurate than Apple's.
//   - No FMA contraction (-ffp-contract=off): Metal may contract a*b+c,
//     which changes results by several ulps; explicit fma() is exact here.
//   - Denormals are kept; Apple GPUs may flush float denormals to zero.
//   - Groups run one after another, so races between threadgroups, device
//     memory ordering and atomics are not exercised.
//   - No lockstep SIMT: lanes run one at a time between synchronisation
//     points; a simd function in divergent control flow reduces over the
//     lanes that reach it, and the reduction order is the harness's
//     (lane order, sequential), not Apple's tree.
//   - Metal's boolN is modelled as intN (clang vector comparisons yield
//     int vectors), so bool vectors have the wrong size in buffers.
//   - Not supported: textures, samplers, atomics, quad_* functions,
//     packed_* vector types, matrix types. Apple's internal __metal_*
//     builtins are the shim's metal:: functions (docs/emu.md).
//   - g++ is not supported. g++ 12 (Debian 12) has no __bf16 in C++ and no
//     per-operation rounding of _Float16 arithmetic in C++ (GCC 13 added
//     -fexcess-precision=standard for C++), and no ext_vector_type, so
//     swizzles (.xy, .zw), Metal's vector constructors, vector comparisons
//     and the strict mode's address spaces would each need a hand-written
//     C++ replacement whose rounding would itself need verifying; clang 17+
//     does all of it natively. The runtime is written for Linux (ELF
//     section symbols, mmap guard pages); on macOS use Apple's Metal
//     compiler instead.
//
// The source is compiled and run as host code. Run validates a launch
// against Metal's limits and the harness's own first (Launch.Validate),
// and every process it starts (clang, the linker, the kernel binary) runs
// in a process group of its own, killed when the context ends, under
// CPU-time and address-space limits and with a minimal environment
// (sandbox.go). CheckHost refuses host-only code (kgen emu --strict). None
// of this is a security boundary: docs/emu.md says what it promises.
package mslcpu
