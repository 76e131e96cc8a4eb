// shim.h: the CUDA that kgen's plain-CUDA kernels use, for a host C++
// compiler, so those kernels run on the CPU (e2e/cudacpu). Included
// before the generated .cu, whose `K<<<grid, block, smem, stream>>>(args)`
// launches the test rewrites to kgen_cpu_launch(grid, block, smem,
// stream)(K, args).
//
// A launch runs on the host thread that makes it, the blocks of its grid
// one after another (so a `__shared__` variable, a function static here,
// is the memory of the block that runs). Every CUDA thread of a block is a
// fiber: its own stack, run by a scheduler on that host thread, switching
// only where CUDA threads wait for each other — at __syncthreads and in
// the warp shuffles. A run therefore costs one core whatever the block
// size: an OS thread per CUDA thread (this shim's first form) made 256
// threads meet at every barrier through the kernel, and on a loaded
// 2-core machine the run took minutes where the work takes seconds; cores
// are used by running several launches (tests) at once instead.
//
// __syncthreads is a gate over the block's threads and each warp of 32 has
// its own gate and exchange slots for the shuffles. A thread that returns
// drops out of both gates (as an exited thread stops counting on the GPU);
// a shuffle that reads a lane which has left, or runs with a partial mask,
// aborts the run, and so does a block whose threads all wait at gates that
// cannot open (a barrier some threads never reach), at once instead of
// hanging.
//
// The sanitizers see the fibers as the CUDA threads they are: ASan is told
// of every stack switch; under TSan every CUDA thread is a TSan fiber, a
// switch does not order anything, and a gate orders exactly what a barrier
// does (every arrival before every departure), so a tile written while
// another thread still reads it — a missing __syncthreads — is a data race
// it reports, though the fibers never run at the same time.
#pragma once
#include <cuda_fp16.h> // host implementations of the 16-bit conversions
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <sys/mman.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define KGEN_CPU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KGEN_CPU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define KGEN_CPU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KGEN_CPU_TSAN 1
#endif
#endif
#ifdef KGEN_CPU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef KGEN_CPU_TSAN
#include <sanitizer/tsan_interface.h>
#endif
#ifndef __x86_64__
#include <ucontext.h>
#endif

#undef __shared__
#define __shared__ static
#undef __launch_bounds__
#define __launch_bounds__(...)
#undef __restrict__
#define __restrict__ __restrict

// The device math the kernels call that the host library lacks: CUDA's
// rsqrtf is within 2 ulp, the host's is correctly rounded before the
// division (the judge's bound holds either way); __frcp_rn is IEEE 1/x.
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __frcp_rn(float x) { return 1.0f / x; }
// kgen's PTX helpers (templates/cuda/prelude.tmpl) are left out under
// KGEN_HOST_PTX; their host versions: kgen_rcp_approx (rcp.approx.ftz.f32,
// under an ulp on the GPU) is the IEEE reciprocal here. The GPU's own
// accuracy is measured on the H200 (docs/cuda.md, "Error budget").
#define KGEN_HOST_PTX 1
inline float kgen_rcp_approx(float x) { return 1.0f / x; }
inline float __int_as_float(int i) {
    float f;
    std::memcpy(&f, &i, sizeof f);
    return f;
}
// The top-k selection's rank of a key (templates/cuda/topk.tmpl): its bits.
inline unsigned int __float_as_uint(float f) {
    unsigned int u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}
inline float __uint_as_float(unsigned int u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

// The running CUDA thread's coordinates: the scheduler sets threadIdx
// before it switches to a thread's fiber.
inline thread_local uint3 threadIdx, blockIdx;
inline thread_local dim3 blockDim, gridDim;

// KGEN_CPU_RUNTIME marks the scheduler's own code, which TSan must not
// watch: its bookkeeping (gate counts, threadIdx) passes between fibers
// that TSan treats as unsynchronised threads, by design.
#define KGEN_CPU_RUNTIME __attribute__((noinline, no_sanitize("thread")))

namespace kgen_cpu {

[[noreturn]] inline void die(const char* what) {
    std::fprintf(stderr, "kgen_cpu: %s (block %u,%u,%u thread %u,%u,%u)\n", what, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
    std::fflush(stderr);
    std::abort();
}

// gate is a barrier among fibers: `expected` threads must arrive before
// any leaves, and each opening starts a new generation. sync[gen % 2] is
// the address TSan's release (at arrival) and acquire (at departure) of
// generation gen name: no thread can arrive at generation gen + 2 before
// every thread has left generation gen, so two addresses suffice.
struct gate {
    unsigned expected = 0, arrived = 0, gen = 0;
    char sync[2] = {};
};

// warp is one warp's rendezvous: a gate of its live lanes, the values a
// shuffle publishes and which lanes have returned.
struct warp {
    gate g;
    unsigned long long slot[32] = {};
    unsigned wide[32][8] = {}; // the registers a warp-wide matrix operation publishes (shim_mma.h)
    bool gone[32] = {};
};

// fiber is one CUDA thread of the block that runs: its stack, its saved
// stack pointer (or context) while suspended, and the gate generation it
// waits for.
struct fiber {
#ifdef __x86_64__
    void* sp = nullptr;
#else
    ucontext_t ctx;
#endif
    unsigned char* stack = nullptr;
    size_t size = 0;
    uint3 tid{};
    const gate* waits = nullptr;
    unsigned wait_gen = 0;
    bool done = false;
    void* tsan = nullptr; // its TSan fiber
    void* fake = nullptr; // ASan's fake stack while it is suspended
};

// launch_state is what the scheduler and the fibers of one launch share.
struct launch_state {
    void (*body)(void*);   // runs the kernel with its arguments
    void* args;
    std::vector<fiber> fibers;
    gate block_gate;       // __syncthreads
    std::vector<warp> warps;
    fiber* cur = nullptr;  // the fiber that runs, null in the scheduler
    bool quit = false;     // the grid is done: fibers leave their loop
    char block_end = 0;    // TSan: each thread's return, before the next block
#ifdef __x86_64__
    void* sched_sp = nullptr;
#else
    ucontext_t sched_ctx;
#endif
    void* sched_tsan = nullptr;
    void* sched_fake = nullptr;
    const void* sched_bottom = nullptr;
    size_t sched_size = 0;
};

inline thread_local launch_state* run = nullptr;

#ifdef __x86_64__
// kgen_cpu_switch(save, next) pushes the callee-saved registers on the
// current stack, stores the stack pointer in *save, and pops the ones saved
// at next: it returns into whatever switched away there. swapcontext would
// do the same plus two sigprocmask system calls per switch (and ASan's
// interceptor clears the target stack's shadow on every call). The kernels
// do not change the floating-point environment, so MXCSR and the x87
// control word are not saved.
extern "C" void kgen_cpu_switch(void** save, void* next);
__asm__(R"(
    .text
    .globl kgen_cpu_switch
    .type kgen_cpu_switch, @function
kgen_cpu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size kgen_cpu_switch, .-kgen_cpu_switch
)");
#endif

KGEN_CPU_RUNTIME inline void to_fiber(fiber& f) {
    launch_state& s = *run;
    s.cur = &f;
    threadIdx = f.tid;
#ifdef KGEN_CPU_ASAN
    __sanitizer_start_switch_fiber(&s.sched_fake, f.stack, f.size);
#endif
#ifdef KGEN_CPU_TSAN
    __tsan_switch_to_fiber(f.tsan, 0); // the scheduler's setup comes before the thread
#endif
#ifdef __x86_64__
    kgen_cpu_switch(&s.sched_sp, f.sp);
#else
    swapcontext(&s.sched_ctx, &f.ctx);
#endif
#ifdef KGEN_CPU_ASAN
    __sanitizer_finish_switch_fiber(s.sched_fake, nullptr, nullptr);
#endif
    s.cur = nullptr;
}

// to_scheduler suspends the running fiber until the scheduler resumes it;
// last: it never will (ASan frees its fake stack).
KGEN_CPU_RUNTIME inline void to_scheduler(bool last = false) {
    launch_state& s = *run;
    fiber& f = *s.cur;
#ifdef KGEN_CPU_ASAN
    __sanitizer_start_switch_fiber(last ? nullptr : &f.fake, s.sched_bottom, s.sched_size);
#endif
#ifdef KGEN_CPU_TSAN
    __tsan_switch_to_fiber(s.sched_tsan, __tsan_switch_to_fiber_no_sync);
#endif
#ifdef __x86_64__
    kgen_cpu_switch(&f.sp, s.sched_sp);
#else
    swapcontext(&f.ctx, &s.sched_ctx);
#endif
#ifdef KGEN_CPU_ASAN
    __sanitizer_finish_switch_fiber(f.fake, &s.sched_bottom, &s.sched_size);
#endif
}

inline void tsan_release(void* at) {
#ifdef KGEN_CPU_TSAN
    __tsan_release(at);
#endif
    (void)at;
}
inline void tsan_acquire(void* at) {
#ifdef KGEN_CPU_TSAN
    __tsan_acquire(at);
#endif
    (void)at;
}

// wait is the running thread's arrival at gate g: the last to arrive
// opens it and goes on; the others wait until the scheduler finds it open.
KGEN_CPU_RUNTIME inline void wait(gate& g) {
    const unsigned gen = g.gen;
    tsan_release(&g.sync[gen % 2]);
    if (++g.arrived == g.expected) {
        g.arrived = 0;
        ++g.gen;
    } else {
        fiber& f = *run->cur;
        f.waits = &g;
        f.wait_gen = gen;
        to_scheduler();
        f.waits = nullptr;
    }
    tsan_acquire(&g.sync[gen % 2]);
}

// drop takes the running thread, which has returned, out of gate g; the
// others no longer wait for it.
KGEN_CPU_RUNTIME inline void drop(gate& g) {
    tsan_release(&g.sync[g.gen % 2]);
    if (--g.expected == g.arrived && g.arrived > 0) {
        g.arrived = 0;
        ++g.gen;
    }
}

// fiber_main is every fiber's body: the kernel, once per block, until the
// grid is done.
KGEN_CPU_RUNTIME inline void fiber_main() {
    launch_state& s = *run;
#ifdef KGEN_CPU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &s.sched_bottom, &s.sched_size);
#endif
    while (!s.quit) {
        s.body(s.args);
        fiber& f = *s.cur;
        const unsigned t = unsigned(&f - s.fibers.data());
        warp& w = s.warps[t / 32];
        w.gone[t % 32] = true;
        drop(w.g);
        drop(s.block_gate);
        tsan_release(&s.block_end);
        f.done = true;
        to_scheduler();
    }
    to_scheduler(true);
    die("a fiber resumed after its launch");
}

#ifdef __x86_64__
extern "C" inline void kgen_cpu_fiber_entry() { fiber_main(); }

// start lays out f's stack so that the first switch to it "returns" into
// kgen_cpu_fiber_entry: six zeroed registers, the entry's address, and the
// stack aligned as after a call.
inline void start(fiber& f) {
    uintptr_t top = (reinterpret_cast<uintptr_t>(f.stack) + f.size) & ~uintptr_t(15);
    void** sp = reinterpret_cast<void**>(top - 64);
    for (int i = 0; i < 6; ++i) sp[i] = nullptr;
    sp[6] = reinterpret_cast<void*>(&kgen_cpu_fiber_entry);
    sp[7] = nullptr;
    f.sp = sp;
}
#else
inline void start(fiber& f) {
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = f.size;
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, fiber_main, 0);
}
#endif

// run_block runs every thread of the block blockIdx names until all have
// returned: round after round, each fiber that is not done and not waiting
// at a gate still shut runs up to its next wait or its return.
KGEN_CPU_RUNTIME inline void run_block(launch_state& s) {
    const unsigned nt = unsigned(s.fibers.size());
    s.block_gate.expected = nt;
    s.block_gate.arrived = 0;
    for (warp& w : s.warps) {
        w.g.expected = 32;
        w.g.arrived = 0;
        std::memset(w.gone, 0, sizeof w.gone);
    }
    for (fiber& f : s.fibers) f.done = false;
    for (unsigned live = nt; live > 0;) {
        bool ran = false;
        for (fiber& f : s.fibers) {
            if (f.done || (f.waits != nullptr && f.waits->gen == f.wait_gen)) continue;
            to_fiber(f);
            ran = true;
            live -= f.done;
        }
        if (!ran) die("the block's threads left all wait at __syncthreads or shuffles that not all of the block's (or warp's) live threads reach");
    }
    tsan_acquire(&s.block_end);
}

// Each fiber's stack, with an inaccessible page below it (an overflow
// faults). ASan's reports run on the stack of the thread that errs.
constexpr size_t stack_size = 256 * 1024;

// launcher runs a kernel over its grid: one fiber per CUDA thread of a
// block, the same fibers for every block, the blocks one after another.
struct launcher {
    dim3 grid, block;
    template <typename K, typename... A>
    void operator()(K kernel, A... args) const {
        const unsigned nt = block.x * block.y * block.z;
        if (nt == 0 || nt % 32 != 0 || nt > 1024) die("a block of threads that is not a whole number of warps up to 1024");
        if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535) die("a grid the GPU refuses (cudaErrorInvalidConfiguration)");
        if (run != nullptr) die("a launch from inside a kernel");
        auto call = [&] { kernel(args...); };
        launch_state s;
        s.body = [](void* c) { (*static_cast<decltype(call)*>(c))(); };
        s.args = &call;
        s.fibers.resize(nt);
        s.warps.resize(nt / 32);
        const size_t page = 4096, span = stack_size + page;
        void* mem = mmap(nullptr, span * nt, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (mem == MAP_FAILED) die("no memory for the fiber stacks");
        blockDim = block;
        gridDim = grid;
        run = &s;
#ifdef KGEN_CPU_TSAN
        s.sched_tsan = __tsan_get_current_fiber();
#endif
        for (unsigned t = 0; t < nt; ++t) {
            fiber& f = s.fibers[t];
            unsigned char* base = static_cast<unsigned char*>(mem) + span * t;
            if (mprotect(base, page, PROT_NONE) != 0) die("mprotect of a stack's guard page");
            f.stack = base + page;
            f.size = stack_size;
            f.tid = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
#ifdef KGEN_CPU_TSAN
            f.tsan = __tsan_create_fiber(0);
            char name[64];
            std::snprintf(name, sizeof name, "CUDA thread (%u,%u,%u)", f.tid.x, f.tid.y, f.tid.z);
            __tsan_set_fiber_name(f.tsan, name);
#endif
            start(f);
        }
        const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
        for (unsigned long long b = 0; b < blocks; ++b) {
            blockIdx = uint3{unsigned(b % grid.x), unsigned(b / grid.x % grid.y), unsigned(b / (1ull * grid.x * grid.y))};
            run_block(s);
        }
        s.quit = true;
        for (fiber& f : s.fibers) to_fiber(f); // each leaves its loop for good
#ifdef KGEN_CPU_TSAN
        for (fiber& f : s.fibers) __tsan_destroy_fiber(f.tsan);
#endif
#ifdef KGEN_CPU_ASAN
        // Frames left on the stacks keep their poisoned redzones in ASan's
        // shadow; the next mapping at these addresses must not inherit them.
        __asan_unpoison_memory_region(mem, span * nt);
#endif
        munmap(mem, span * nt);
        run = nullptr;
    }
};

} // namespace kgen_cpu

inline void __syncthreads() { kgen_cpu::wait(kgen_cpu::run->block_gate); }

inline unsigned kgen_cpu_lane() {
    return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32;
}

// __shfl_xor_sync: every lane publishes v, waits for the warp, reads lane
// ^ o's value and waits again (so the slot is not overwritten by the next
// shuffle before every lane has read it).
template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int o, int width = 32) {
    static_assert(sizeof(T) <= sizeof(unsigned long long), "a shuffled value fits a slot");
    if (mask != 0xffffffffu || width != 32) kgen_cpu::die("__shfl_xor_sync with a partial mask or width");
    const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    kgen_cpu::warp& w = kgen_cpu::run->warps[t / 32];
    const unsigned lane = t % 32, src = (lane ^ unsigned(o)) % 32;
    std::memcpy(&w.slot[lane], &v, sizeof(T));
    kgen_cpu::wait(w.g);
    if (w.gone[src]) kgen_cpu::die("__shfl_xor_sync reads a lane that has returned");
    T r;
    std::memcpy(&r, &w.slot[src], sizeof(T));
    kgen_cpu::wait(w.g);
    return r;
}

inline kgen_cpu::launcher kgen_cpu_launch(dim3 grid, dim3 block, size_t smem = 0, cudaStream_t = nullptr) {
    if (smem != 0) kgen_cpu::die("dynamic shared memory");
    return kgen_cpu::launcher{grid, block};
}

// The runtime calls of the entry points: memory of the exact size (for
// the address sanitizer), no errors.
extern "C" {
inline cudaError_t cudaGetLastError(void) { return cudaSuccess; }
inline const char* cudaGetErrorString(cudaError_t) { return "no error (kgen_cpu)"; }
inline cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
inline cudaError_t cudaMemPoolCreate(cudaMemPool_t* p, const struct cudaMemPoolProps*) {
    static int pool;
    *p = reinterpret_cast<cudaMemPool_t>(&pool);
    return cudaSuccess;
}
inline cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, enum cudaMemPoolAttr, void*) { return cudaSuccess; }
inline cudaError_t cudaMallocFromPoolAsync(void** p, size_t n, cudaMemPool_t, cudaStream_t) {
    return posix_memalign(p, 256, n ? n : 1) == 0 ? cudaSuccess : cudaErrorMemoryAllocation;
}
inline cudaError_t cudaFreeAsync(void* p, cudaStream_t) {
    std::free(p);
    return cudaSuccess;
}
}
