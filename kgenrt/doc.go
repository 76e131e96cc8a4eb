// Package kgenrt is the runtime that kgen-generated Go packages import. It
// knows no kernel and no kernel's dtypes: each generated package describes
// its kernels with Kernel values (dtype-key table, binding table, dispatch,
// embedded MSL source) and PortTables, and kgenrt does the rest.
//
// # Dispatch
//
// A kernel's PortTable has one slot per Backend, in a fixed-size array
// ([NumBackends]Port) that generated code fills with a [...] literal, so
// adding a backend here breaks every generated package's build until kgen
// regenerates it. PortTable.Select is the only place that chooses a port: it
// returns the slot's port, or a *PortError (errors.Is ErrNoPort) naming the
// kernel and the backend when the slot is nil or the port cannot run in this
// process; the caller then takes its fallback path, usually the kernel's
// generated CPU reference. Available answers through Select.
//
// A storage dtype outside a kernel's dtype-key table is a *DTypeError, never
// another variant's kernel. Launchers check every tensor before anything
// runs (Kernel.Check): non-nil, dtypes as bound, shapes as each binding's
// Shape names them by size fields ([n]; [rows, cols] and [cols] row vectors
// of rowwise kernels), at most 2^32 − ElemsPerThread elements, and no output
// overlapping another tensor except an identical input (in place, which
// every kgen kernel supports because each element is read before it is
// written, by the one thread that owns it; CUDA and ROCm tensors are
// compared by device address). Check returns the size fields (Sizes), the same for every
// kind; CheckSizes, which generated launchers call, writes them into a
// slice instead of a map, and CheckHost, which the CPU reference calls, also
// refuses CUDA and ROCm tensors.
//
// # Launch
//
// Each descriptor carries its kernel's launch per backend (Kernel.Launch, a
// launch.Launch from the leaf package launch): the grid as expressions over
// the size fields, the threads per group, and the size fields the launcher
// derives, each with its rule (rowwise: rows_per_group from cols). The
// generated launcher computes the Metal launch as Go rendered from the same
// expressions; the CUDA port evaluates the CUDA launch from the call's size
// fields and the variant's element size. kgenrt holds no rule of its own.
//
// # The CPU reference
//
// The generated Reference methods compute each kernel in its compute type:
// f32 with Go's float32 arithmetic (products that feed additions are wrapped
// in float32() conversions, which the Go spec defines as forbidding fused
// multiply-add); f16 and bf16 by computing each operation in float32 and
// rounding with RoundF16/RoundBF16 (exact for + - * / and sqrt). Functions
// (tanh, exp, erf, …) are evaluated in float64 and rounded to float32, then to
// the compute type, so they differ from Metal's by the GPU's function error;
// parity tolerances account for that. MinNum/MaxNum are IEEE minNum/maxNum
// like MSL fmin/fmax. Outputs are stored rounded to nearest even.
// Reference64 evaluates the same formulas in float64 without any rounding.
//
// # The Metal path
//
// It is built only for darwin with cgo (files metal_darwin.*); elsewhere, or
// with CGO_ENABLED=0, a stub makes the Metal port's Ready fail, so Select
// refuses it and callers fall back. The Objective-C (metal_darwin.m) is a
// kernel-agnostic C layer compiled once with this package, never per
// generated package, so a program may link any number of generated packages.
//
// What it does: one default device (MTLCreateSystemDefaultDevice) and one
// command queue per process, opened on first use. Per kernel descriptor, the
// whole embedded source is compiled once into a library with MTLCompileOptions
// languageVersion 3.1 and fastMathEnabled set only for `math: fast` (the
// descriptor's keys are re-hashed from the source first, so a stale or
// hand-edited source is an error, not a cache hit). Per variant key, one
// compute pipeline is made from the function of the variant's host name.
// Both caches build each entry once even under concurrent first use and keep
// Metal's compile errors, text included, as Go errors. A launch binds every
// tensor's buffer at its binding index with offset 0, the args struct as
// bytes (setBytes) at the args index, and dispatches dispatchThreads with
// the launcher's grid and threadgroup. Run commits, waits and returns the
// command buffer's error text if it failed; Encode adds the dispatch to a
// CommandBuffer the caller commits (NewCommandBuffer, or
// CommandBufferFromMTL for the caller's own id<MTLCommandBuffer>).
//
// What it assumes (no Mac ran this code while it was written: the Go half is
// type-checked against the C header on Linux, the Objective-C is not
// compiled by any test):
//
//   - Unified memory: every buffer uses MTLResourceStorageModeShared and the
//     CPU reads results straight from its contents after the command buffer
//     completes. No managed or private storage, no blits.
//   - macOS 14 / iOS 17 or later, for MSL 3.1 (bfloat). Older systems get the
//     compile error back. fastMathEnabled is deprecated on macOS 15 in favour
//     of mathMode; the two mean the same for these kernels, which also spell
//     metal::precise:: explicitly.
//   - Buffers are bound at offset 0, and Metal buffer contents are page
//     aligned, so every tensor is 16-byte aligned, which the kernels' vector
//     loads and stores rely on. Binding a buffer at an offset is not offered.
//   - dispatchThreads with non-uniform threadgroups (Apple GPU family 4 and
//     later, every Apple silicon Mac). Threadgroups larger than the pipeline's
//     maxTotalThreadsPerThreadgroup are refused with an error, not dispatched.
//   - n ≤ 2^32 − ElemsPerThread: the kernels index with 32-bit unsigned ints.
//   - Host tensors (New, FromFloat32, …) given to Run are copied into
//     temporary shared buffers and their outputs copied back; tensors made by
//     NewMetal are bound without copies. Encode takes only NewMetal tensors,
//     since its command buffer runs after Encode returns.
//   - A CommandBuffer comes from the default device's queue, no other encoder
//     is open on it while kgen encodes, and it is committed once. The command
//     buffer retains the buffers it uses; Go finalizers release kgenrt's
//     references to buffers and command buffers.
//
// # The CUDA path
//
// See cuda.go and docs/cuda.md. The driver API through purego (no cgo);
// tensors in host memory are staged by Run; CUDA tensors (NewCUDA, which
// owns device memory, and WrapCUDA over the caller's) are bound in place by
// Run and by Enqueue, which launches on the caller's stream without waiting.
// Copy moves elements between host and CUDA tensors. A launch prepares its
// parameters without allocating (the descriptor's CUDA launch is read once
// per port, parameter buffers are pooled) and makes the primary context
// current only on a thread where it is not.
//
// # The ROCm path
//
// See rocm.go and docs/rocm.md: HIP's module API through purego, the same
// launch path as CUDA's over one driver table (gpu.go: a row per GPU
// runtime; the geometry, phases, staging, Enqueue and device tensors are
// written once in gpu_port.go, gpu_phases.go and gpu_tensor.go). ROCm
// tensors (NewROCm, WrapROCm) are bound in place by Run and by Enqueue,
// whose stream is then a hipStream_t. Untested on AMD hardware.
package kgenrt
