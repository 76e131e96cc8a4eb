// hipshim.h: the AMDGPU that kgen's HIP kernels use (templates/hip), for a
// host clang++, so those kernels run on the CPU (e2e/hipcpu) with
// KGEN_WAVE-lane wavefronts (64 as on CDNA, or 32 as on RDNA). Included
// before the generated .hip: it defines the attributes the source's head
// would, and replaces clang's AMDGPU builtins by functions of a fiber
// scheduler, so the source's own primitives (kgen_lane_id's mbcnt pair,
// kgen_shfl_xor's ds_bpermute byte addresses, kgen_barrier) run as written.
//
// This is e2e/cudacpu/testdata/shim.h's scheduler with the wavefront as a
// parameter: a launch runs on the host thread that makes it, the blocks one
// after another (a __shared__ variable is a function static: the memory of
// the block that runs); every GPU thread is a fiber, switching only where
// threads wait for each other — at s_barrier and in ds_bpermute. Each
// wavefront has its own gate and exchange slots. A thread that returns drops
// out of both gates; a ds_bpermute that reads a lane which has left or does
// not exist, and a block whose threads all wait at gates that cannot open,
// abort the run at once instead of hanging. AddressSanitizer is told of
// every stack switch.
#pragma once
#include <sys/mman.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#ifndef KGEN_WAVE
#error "define KGEN_WAVE (64 or 32): the wavefront the CPU run emulates"
#endif
static_assert(KGEN_WAVE == 32 || KGEN_WAVE == 64, "AMDGPU wavefronts are 32 or 64 lanes");

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KGEN_CPU_ASAN 1
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#endif
#ifndef __x86_64__
#include <ucontext.h>
#endif

#define __global__
#define __device__
#define __shared__ static
#define __forceinline__ inline
#define __launch_bounds__(...)

namespace kgen_cpu {

// The running thread's coordinates: the scheduler sets them before it
// switches to a thread's fiber.
inline thread_local unsigned tid, group, group_size;

[[noreturn]] inline void die(const char* what) {
    std::fprintf(stderr, "kgen_cpu: %s (block %u thread %u, wave %d)\n", what, group, tid, KGEN_WAVE);
    std::fflush(stderr);
    std::abort();
}

// gate is a barrier among fibers: `expected` threads must arrive before any
// leaves, and each opening starts a new generation.
struct gate {
    unsigned expected = 0, arrived = 0, gen = 0;
};

// wave is one wavefront's rendezvous: a gate of its live lanes, the values
// a ds_bpermute publishes and which lanes have returned.
struct wave {
    gate g;
    int slot[KGEN_WAVE] = {};
    bool gone[KGEN_WAVE] = {};
};

struct fiber {
#ifdef __x86_64__
    void* sp = nullptr;
#else
    ucontext_t ctx;
#endif
    unsigned char* stack = nullptr;
    size_t size = 0;
    unsigned tid = 0;
    const gate* waits = nullptr;
    unsigned wait_gen = 0;
    bool done = false;
    void* fake = nullptr; // ASan's fake stack while it is suspended
};

struct launch_state {
    void (*body)(void*);
    void* args;
    std::vector<fiber> fibers;
    gate block_gate; // s_barrier
    std::vector<wave> waves;
    std::vector<unsigned> order; // the block's threads in the order they run
    fiber* cur = nullptr;
    bool quit = false;
#ifdef __x86_64__
    void* sched_sp = nullptr;
#else
    ucontext_t sched_ctx;
#endif
    void* sched_fake = nullptr;
    const void* sched_bottom = nullptr;
    size_t sched_size = 0;
};

inline thread_local launch_state* run = nullptr;

#ifdef __x86_64__
// kgen_cpu_switch(save, next): push the callee-saved registers, store the
// stack pointer in *save, switch to next and pop the ones saved there.
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

__attribute__((noinline)) inline void to_fiber(fiber& f) {
    launch_state& s = *run;
    s.cur = &f;
    tid = f.tid;
#ifdef KGEN_CPU_ASAN
    __sanitizer_start_switch_fiber(&s.sched_fake, f.stack, f.size);
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

__attribute__((noinline)) inline void to_scheduler(bool last = false) {
    launch_state& s = *run;
    fiber& f = *s.cur;
#ifdef KGEN_CPU_ASAN
    __sanitizer_start_switch_fiber(last ? nullptr : &f.fake, s.sched_bottom, s.sched_size);
#else
    (void)last;
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

// wait is the running thread's arrival at gate g: the last to arrive opens
// it and goes on; the others wait until the scheduler finds it open.
inline void wait(gate& g) {
    const unsigned gen = g.gen;
    if (++g.arrived == g.expected) {
        g.arrived = 0;
        ++g.gen;
        return;
    }
    fiber& f = *run->cur;
    f.waits = &g;
    f.wait_gen = gen;
    to_scheduler();
    f.waits = nullptr;
}

// drop takes the running thread, which has returned, out of gate g.
inline void drop(gate& g) {
    if (--g.expected == g.arrived && g.arrived > 0) {
        g.arrived = 0;
        ++g.gen;
    }
}

inline void fiber_main() {
    launch_state& s = *run;
#ifdef KGEN_CPU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &s.sched_bottom, &s.sched_size);
#endif
    while (!s.quit) {
        s.body(s.args);
        fiber& f = *s.cur;
        wave& w = s.waves[f.tid / KGEN_WAVE];
        w.gone[f.tid % KGEN_WAVE] = true;
        drop(w.g);
        drop(s.block_gate);
        f.done = true;
        to_scheduler();
    }
    to_scheduler(true);
    die("a fiber resumed after its launch");
}

#ifdef __x86_64__
extern "C" inline void kgen_cpu_fiber_entry() { fiber_main(); }

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

// order is the order in which the scheduler runs a block's threads between
// waits: 0 forward, 1 reverse, 2 a fixed pseudo-random permutation per
// block (the harness's ORDER). A kernel whose result depends on it reads
// shared memory another thread writes without a barrier between.
inline thread_local unsigned order = 0;

// run_block runs every thread of the block until all have returned, in
// the order s.order (set from kgen_cpu::order per block).
inline void run_block(launch_state& s) {
    const unsigned nt = unsigned(s.fibers.size());
    s.order.resize(nt);
    for (unsigned i = 0; i < nt; ++i) s.order[i] = order == 1 ? nt - 1 - i : i;
    if (order == 2) {
        unsigned long long x = 0x9e3779b97f4a7c15ull * (group + 1);
        for (unsigned i = nt - 1; i > 0; --i) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            const unsigned j = unsigned((x >> 33) % (i + 1));
            const unsigned t = s.order[i];
            s.order[i] = s.order[j];
            s.order[j] = t;
        }
    }
    s.block_gate.expected = nt;
    s.block_gate.arrived = 0;
    for (size_t i = 0; i < s.waves.size(); ++i) {
        wave& w = s.waves[i];
        const unsigned left = nt - unsigned(i) * KGEN_WAVE;
        w.g.expected = left < KGEN_WAVE ? left : KGEN_WAVE; // a partial last wave
        w.g.arrived = 0;
        std::memset(w.gone, 0, sizeof w.gone);
    }
    for (fiber& f : s.fibers) f.done = false;
    for (unsigned live = nt; live > 0;) {
        bool ran = false;
        for (unsigned i = 0; i < nt; ++i) {
            fiber& f = s.fibers[s.order[i]];
            if (f.done || (f.waits != nullptr && f.waits->gen == f.wait_gen)) continue;
            to_fiber(f);
            ran = true;
            live -= f.done;
        }
        if (!ran) die("the block's threads left all wait at barriers or ds_bpermutes that not all of the block's (or wavefront's) live threads reach");
    }
}

constexpr size_t stack_size = 256 * 1024;

// launch runs kernel() over blocks blocks of threads threads: one fiber
// per thread of a block, the same fibers for every block.
template <typename K>
void launch(unsigned blocks, unsigned threads, K kernel) {
    if (threads == 0 || threads > 1024) die("a block of threads the GPU refuses (0 or above 1024)");
    if (run != nullptr) die("a launch from inside a kernel");
    launch_state s;
    s.body = [](void* c) { (*static_cast<K*>(c))(); };
    s.args = &kernel;
    s.fibers.resize(threads);
    s.waves.resize((threads + KGEN_WAVE - 1) / KGEN_WAVE);
    const size_t page = 4096, span = stack_size + page;
    void* mem = mmap(nullptr, span * threads, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) die("no memory for the fiber stacks");
    group_size = threads;
    run = &s;
    for (unsigned t = 0; t < threads; ++t) {
        fiber& f = s.fibers[t];
        unsigned char* base = static_cast<unsigned char*>(mem) + span * t;
        if (mprotect(base, page, PROT_NONE) != 0) die("mprotect of a stack's guard page");
        f.stack = base + page;
        f.size = stack_size;
        f.tid = t;
        start(f);
    }
    for (unsigned b = 0; b < blocks; ++b) {
        group = b;
        run_block(s);
    }
    s.quit = true;
    for (fiber& f : s.fibers) to_fiber(f);
#ifdef KGEN_CPU_ASAN
    __asan_unpoison_memory_region(mem, span * threads);
#endif
    munmap(mem, span * threads);
    run = nullptr;
}

// The lanes below the running one in the low (mbcnt_lo) or high (mbcnt_hi)
// 32 bits of mask, plus acc, as v_mbcnt_lo/hi_u32_b32 count them. On a
// 32-lane wavefront every lane is in the low half.
inline unsigned mbcnt_lo(unsigned mask, unsigned acc) {
    const unsigned lane = tid % KGEN_WAVE;
    const unsigned below = lane >= 32 ? ~0u : (lane == 0 ? 0u : (~0u >> (32 - lane)));
    return acc + unsigned(__builtin_popcount(mask & below));
}
inline unsigned mbcnt_hi(unsigned mask, unsigned acc) {
    const unsigned lane = tid % KGEN_WAVE;
    if (KGEN_WAVE == 32 || lane < 32) return acc;
    const unsigned hi = lane - 32;
    const unsigned below = hi == 0 ? 0u : (~0u >> (32 - hi));
    return acc + unsigned(__builtin_popcount(mask & below));
}

// ds_bpermute: every lane publishes v, waits for its wavefront, reads the
// value of lane (addr / 4) modulo the wavefront (the byte address's lane
// bits, as the hardware does) and waits again, so the slot is not
// overwritten before every lane has read it.
inline int ds_bpermute(int addr, int v) {
    wave& w = run->waves[tid / KGEN_WAVE];
    const unsigned lane = tid % KGEN_WAVE, src = (unsigned(addr) >> 2) % KGEN_WAVE;
    w.slot[lane] = v;
    wait(w.g);
    if (tid / KGEN_WAVE * KGEN_WAVE + src >= run->fibers.size()) die("ds_bpermute reads a lane past the block's last thread");
    if (w.gone[src]) die("ds_bpermute reads a lane that has returned");
    const int r = w.slot[src];
    wait(w.g);
    return r;
}

inline void barrier() { wait(run->block_gate); }

} // namespace kgen_cpu

#define __builtin_amdgcn_workitem_id_x() kgen_cpu::tid
#define __builtin_amdgcn_workgroup_id_x() kgen_cpu::group
#define __builtin_amdgcn_workgroup_size_x() kgen_cpu::group_size
#define __builtin_amdgcn_mbcnt_lo(m, a) kgen_cpu::mbcnt_lo(m, a)
#define __builtin_amdgcn_mbcnt_hi(m, a) kgen_cpu::mbcnt_hi(m, a)
#define __builtin_amdgcn_ds_bpermute(addr, v) kgen_cpu::ds_bpermute(addr, v)
#define __builtin_amdgcn_s_barrier() kgen_cpu::barrier()
#define __builtin_amdgcn_fence(order, scope) ((void)(order), (void)(scope))
