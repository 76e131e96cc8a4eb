// runtime.cc: the host side of verify/mslcpu. It reads one launch from stdin,
// runs the named kernel over the grid group by group, and writes every buffer
// back to stdout. Kernels that synchronise (barriers, simd ops) run their
// lanes as fibers on one OS thread, switching only at those calls; others run
// as a plain loop. Under ThreadSanitizer every lane is an OS thread instead,
// so that TSan sees the lanes of a group as concurrent; under
// AddressSanitizer buffers are heap blocks of their exact size and fiber
// switches are announced to ASan. Failures print "mslcpu: ..." on stderr and
// exit 3.
#include <csignal>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define KGEN_RUNTIME 1
#include <metal_stdlib>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KGEN_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define KGEN_TSAN 1
#endif
#endif
#ifndef KGEN_ASAN
#define KGEN_ASAN 0
#endif
#ifndef KGEN_TSAN
#define KGEN_TSAN 0
#endif
#if KGEN_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(__x86_64__) && !defined(KGEN_UCONTEXT)
#define KGEN_FAST_SWITCH 1
// kgen_switch(save, next) saves the callee-saved state on the current stack,
// stores the stack pointer in *save, and resumes the stack at next.
extern "C" void kgen_switch(void** save, void* next);
__asm__(R"(
  .text
  .globl kgen_switch
  .type kgen_switch, @function
kgen_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size kgen_switch, .-kgen_switch
)");
#else
#define KGEN_FAST_SWITCH 0
#endif

extern const kgen_rt::Entry kgen_entries[];
extern const int kgen_nentries;
extern const int kgen_sync;
extern char __start_kgen_tg[] __attribute__((weak));
extern char __stop_kgen_tg[] __attribute__((weak));

// Debian's libgcc 12 lacks the float -> bfloat16 conversion that clang calls;
// this one rounds to nearest even and keeps NaNs quiet.
extern "C" __bf16 __truncsfbf2(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint16_t h;
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    h = uint16_t((u >> 16) | 0x40u);
  } else {
    h = uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
  __bf16 r;
  memcpy(&r, &h, 2);
  return r;
}

namespace {

enum State { kReady, kBarrier, kSimd, kDone };
enum Order { kForward, kReverse, kShuffled };

struct Buffer {
  unsigned char* data;
  uint64_t len;
};

struct Fiber {
#if KGEN_FAST_SWITCH
  void* sp;
#else
  ucontext_t ctx;
#endif
  State state;
  int line;
  unsigned size;
  kgen_rt::Lane lane;
  unsigned char* stack;  // usable stack, for ASan's fiber annotations
  size_t stack_size;
  void* fake;  // ASan's fake stack of a suspended fiber
};

struct SimdGroup {
  unsigned gen;
  unsigned mask[2];
  alignas(64) unsigned char data[2][kgen_rt::simd_width * 64];
};

const size_t kStack = 256 * 1024;
const uint32_t kMaxLanes = 1024;

const kgen_rt::Entry* g_entry;
// Threadgroup memory for [[threadgroup(i)]] parameters, sized by the launch.
uint32_t g_ntg;
unsigned char** g_tg;
uint32_t* g_tg_len;
Buffer* g_bufs;
void** g_ptrs;
uint32_t g_nbuf;
Fiber* g_fibers;
SimdGroup* g_simd;
unsigned char* g_stacks;
// The lane running on this OS thread: the fiber scheduler sets it around each
// switch; under TSan each lane thread sets its own.
thread_local int g_cur = -1;
#if KGEN_FAST_SWITCH
void* g_sched_sp;
#else
ucontext_t g_sched;
#endif
thread_local const kgen_rt::Lane* g_running;  // the lane being run, for reports
const uint32_t* g_group;         // the group being scheduled, for reports

[[noreturn]] void die(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void die(const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "mslcpu: %s\n", msg);
  if (g_running) {
    const kgen_rt::Lane& l = *g_running;
    fprintf(stderr, "mslcpu: in %s, threadgroup (%u,%u,%u), thread (%u,%u,%u)\n", g_entry->host,
            l.tg_id.x, l.tg_id.y, l.tg_id.z, l.tid_tg.x, l.tid_tg.y, l.tid_tg.z);
  } else if (g_group) {
    fprintf(stderr, "mslcpu: in %s, threadgroup (%u,%u,%u)\n", g_entry->host, g_group[0], g_group[1], g_group[2]);
  }
  fflush(stderr);
  _exit(3);
}

void read_exact(void* p, size_t n) {
  if (fread(p, 1, n, stdin) != n) die("short read on the launch request");
}
uint32_t read_u32() {
  uint32_t v;
  read_exact(&v, 4);
  return v;
}
uint64_t read_u64() {
  uint64_t v;
  read_exact(&v, 8);
  return v;
}

// alloc_buffer places len bytes so that they end (rounded up to 16 for
// vector alignment) just before a PROT_NONE page: reads or writes past the
// end fault and are reported with the buffer's index.
unsigned char* alloc_buffer(uint64_t len) {
#if KGEN_ASAN
  // ASan puts a redzone right after the requested size: every byte past the
  // end is caught, not only those past the 16-byte slack before a guard page.
  void* p = nullptr;
  if (posix_memalign(&p, 16, len ? size_t(len) : 1) != 0) die("cannot allocate a buffer of %llu bytes", (unsigned long long)len);
  return static_cast<unsigned char*>(p);
#endif
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  size_t body = (len + 15) / 16 * 16;
  size_t span = (body + page - 1) / page * page;
  unsigned char* base = static_cast<unsigned char*>(
      mmap(nullptr, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (base == MAP_FAILED) die("cannot map a buffer of %llu bytes", (unsigned long long)len);
  mprotect(base + span, page, PROT_NONE);
  return base + span - body;
}

#include "runtime_tg.inc"
#include "runtime_cost.inc"

void on_signal(int sig, siginfo_t* info, void*) {
  const char* what = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE" : "signal";
  char* addr = static_cast<char*>(info->si_addr);
  char slot[512];
  if (slot_fault(addr, slot, sizeof slot)) die("%s: %s", what, slot);
  for (uint32_t i = 0; i < g_nbuf && g_bufs; ++i) {
    char* end = reinterpret_cast<char*>(g_bufs[i].data) + (g_bufs[i].len + 15) / 16 * 16;
    if (addr >= end && addr < end + 65536)
      die("%s: access past the end of buffer(%u) (%llu bytes), at byte %lld", what, i,
          (unsigned long long)g_bufs[i].len, (long long)(addr - reinterpret_cast<char*>(g_bufs[i].data)));
  }
  die("%s at address %p (out-of-bounds access or fiber stack overflow?)", what, info->si_addr);
}

void install_handlers() {
  static char altstack[64 * 1024];
  stack_t ss = {};
  ss.ss_sp = altstack;
  ss.ss_size = sizeof altstack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa = {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigaction(SIGSEGV, &sa, nullptr);
  sigaction(SIGBUS, &sa, nullptr);
  sigaction(SIGFPE, &sa, nullptr);
}

// order_lanes fills perm with 0..n-1 in the requested order; shuffles are
// seeded by the group so that runs are reproducible.
void order_lanes(uint32_t* perm, uint32_t n, uint32_t order, uint32_t seed) {
  for (uint32_t i = 0; i < n; ++i) perm[i] = order == kReverse ? n - 1 - i : i;
  if (order != kShuffled) return;
  uint64_t s = 0x9e3779b97f4a7c15ull ^ seed;
  for (uint32_t i = n; i > 1; --i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    uint32_t j = uint32_t(s % i);
    uint32_t t = perm[i - 1];
    perm[i - 1] = perm[j];
    perm[j] = t;
  }
}

void fiber_main(int idx) {
  Fiber& f = g_fibers[idx];
  g_entry->fn(g_ptrs, f.lane);
  f.state = kDone;
}

// ASan must be told about every stack switch, or it takes the fiber stacks
// for overflows of the scheduler's stack.
#if KGEN_ASAN
const void* g_sched_bottom;
size_t g_sched_size;
void* g_sched_fake;
void asan_to_fiber(Fiber& f) { __sanitizer_start_switch_fiber(&g_sched_fake, f.stack, f.stack_size); }
void asan_back_in_sched() { __sanitizer_finish_switch_fiber(g_sched_fake, nullptr, nullptr); }
void asan_to_sched(Fiber& f) {
  __sanitizer_start_switch_fiber(f.state == kDone ? nullptr : &f.fake, g_sched_bottom, g_sched_size);
}
void asan_in_fiber(Fiber& f) { __sanitizer_finish_switch_fiber(f.fake, &g_sched_bottom, &g_sched_size); }
#else
void asan_to_fiber(Fiber&) {}
void asan_back_in_sched() {}
void asan_to_sched(Fiber&) {}
void asan_in_fiber(Fiber&) {}
#endif

#if KGEN_FAST_SWITCH
// ctx_enter/ctx_leave switch stacks with kgen_switch (below): swapcontext
// would make two sigprocmask system calls per switch, which dominated the
// run time of reductions.
void ctx_enter(Fiber& f) {
  asan_to_fiber(f);
  kgen_switch(&g_sched_sp, f.sp);
  asan_back_in_sched();
}
void ctx_leave(Fiber& f) {
  asan_to_sched(f);
  kgen_switch(&f.sp, g_sched_sp);
  asan_in_fiber(f);
}

extern "C" void kgen_fiber_entry() {
  int idx = g_cur;
  asan_in_fiber(g_fibers[idx]);
  fiber_main(idx);
  ctx_leave(g_fibers[idx]);
  __builtin_unreachable();
}

// ctx_init lays out a stack that kgen_switch "returns" into
// kgen_fiber_entry from: saved MXCSR and x87 control word, six callee-saved
// registers, the entry address, and alignment as if entered by a call.
void ctx_init(Fiber& f, unsigned char* stack, size_t size) {
  uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + size) & ~uintptr_t(15);
  uint64_t* sp = reinterpret_cast<uint64_t*>(top - 16);
  sp[0] = reinterpret_cast<uint64_t>(&kgen_fiber_entry);
  sp -= 6;
  for (int i = 0; i < 6; ++i) sp[i] = 0;
  sp -= 1;
  uint32_t mxcsr;
  uint16_t fpucw;
  __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
  __asm__ volatile("fnstcw %0" : "=m"(fpucw));
  memcpy(reinterpret_cast<char*>(sp), &mxcsr, 4);
  memcpy(reinterpret_cast<char*>(sp) + 4, &fpucw, 2);
  f.sp = sp;
}
#else
void ctx_enter(Fiber& f) {
  asan_to_fiber(f);
  swapcontext(&g_sched, &f.ctx);
  asan_back_in_sched();
}
void ctx_leave(Fiber& f) {
  asan_to_sched(f);
  swapcontext(&f.ctx, &g_sched);
  asan_in_fiber(f);
}

void ucontext_entry(int idx) {
  asan_in_fiber(g_fibers[idx]);
  fiber_main(idx);
  asan_to_sched(g_fibers[idx]);
}

void ctx_init(Fiber& f, unsigned char* stack, size_t size) {
  getcontext(&f.ctx);
  f.ctx.uc_stack.ss_sp = stack;
  f.ctx.uc_stack.ss_size = size;
  f.ctx.uc_link = &g_sched;
  makecontext(&f.ctx, reinterpret_cast<void (*)()>(ucontext_entry), 1, int(&f - g_fibers));
}
#endif

// yield returns control to the scheduler; the lane resumes once released.
void yield_thread(Fiber& f, State st, int line, unsigned size);

void yield(State st, int line, unsigned size) {
  if (g_cur < 0) die("threadgroup_barrier or simd_* called by a kernel run without fibers");
  Fiber& f = g_fibers[g_cur];
  if (KGEN_TSAN) {
    yield_thread(f, st, line, size);
    return;
  }
  f.state = st;
  f.line = line;
  f.size = size;
  ctx_leave(f);
}

// complete_simd_range releases the simdgroups s0..s1-1 whose live lanes all wait in an
// exchange; it reports lanes that wait at different call sites.
bool complete_simd_range(uint32_t n, uint32_t s0, uint32_t s1) {
  bool progressed = false;
  for (uint32_t s = s0; s < s1 && s * kgen_rt::simd_width < n; ++s) {
    uint32_t lo = s * kgen_rt::simd_width, hi = lo + kgen_rt::simd_width < n ? lo + kgen_rt::simd_width : n;
    unsigned mask = 0;
    int line = -1, waiting = 0, other = 0;
    for (uint32_t i = lo; i < hi; ++i) {
      Fiber& f = g_fibers[i];
      if (f.state == kSimd) {
        if (line >= 0 && (f.line != line || f.size != g_fibers[lo + __builtin_ctz(mask)].size))
          die("simdgroup %u: lanes wait at different simd calls (lines %d and %d)", s, line, f.line);
        line = f.line;
        mask |= 1u << (i - lo);
        ++waiting;
      } else if (f.state == kBarrier) {
        ++other;
      }
    }
    if (waiting == 0) continue;
    if (other) die("simdgroup %u: some lanes wait at a simd call (line %d), others at a barrier", s, line);
    SimdGroup& sg = g_simd[s];
    sg.mask[sg.gen & 1] = mask;
    cost_simd(lo, hi, mask);
    ++sg.gen;
    for (uint32_t i = lo; i < hi; ++i)
      if (g_fibers[i].state == kSimd) g_fibers[i].state = kReady;
    progressed = true;
  }
  return progressed;
}

bool complete_simd(uint32_t n) { return complete_simd_range(n, 0, (n + kgen_rt::simd_width - 1) / kgen_rt::simd_width); }

// release_barrier lets a group pass a barrier once every lane waits at it.
void release_barrier(uint32_t n) {
  int line = -1;
  for (uint32_t i = 0; i < n; ++i) {
    if (g_fibers[i].state != kBarrier) continue;
    if (line >= 0 && g_fibers[i].line != line)
      die("lanes wait at different threadgroup_barrier calls (lines %d and %d)", line, g_fibers[i].line);
    line = g_fibers[i].line;
  }
  for (uint32_t i = 0; i < n; ++i) {
    if (g_fibers[i].state == kDone) {
      g_running = &g_fibers[i].lane;
      die("this lane returned while others wait at the threadgroup_barrier on line %d", line);
    }
  }
  if (line >= 0) cost_barrier();
  for (uint32_t i = 0; i < n; ++i) g_fibers[i].state = kReady;
}

// complete_one releases simdgroup s when none of its lanes is ready to run
// and some wait at a simd call (complete_simd's rules for one simdgroup).
bool complete_one(uint32_t n, uint32_t s) {
  uint32_t lo = s * kgen_rt::simd_width, hi = lo + kgen_rt::simd_width < n ? lo + kgen_rt::simd_width : n;
  for (uint32_t i = lo; i < hi; ++i)
    if (g_fibers[i].state == kReady) return false;
  for (uint32_t i = lo; i < hi; ++i)
    if (g_fibers[i].state == kSimd) return complete_simd_range(n, s, s + 1);
  return false;
}

// run_simdgroup runs simdgroup s's lanes (in perm's order) for as long as
// its simd calls complete, without running any other simdgroup: on Apple
// GPUs a simd call (simd_sum, simdgroup_load, simdgroup_multiply_accumulate,
// ...) synchronises the 32 lanes of its simdgroup and nothing else, so a
// simdgroup may run ahead of the others up to the next threadgroup_barrier.
// Running it ahead eagerly makes a kernel that relies on a simd call to
// order another simdgroup's writes (a barrier missing after staging) read
// what is not written yet, and fail parity.
void run_simdgroup(uint32_t n, const uint32_t* perm, uint32_t s) {
  do {
    for (uint32_t k = 0; k < n; ++k) {
      Fiber& f = g_fibers[perm[k]];
      if (perm[k] / kgen_rt::simd_width != s || f.state != kReady) continue;
      g_cur = int(perm[k]);
      g_running = &f.lane;
      ctx_enter(f);
      g_cur = -1;
      g_running = nullptr;
    }
  } while (complete_one(n, s));
}

void run_fibers(uint32_t n, const uint32_t* perm) {
  for (uint32_t i = 0; i < n; ++i) {
    Fiber& f = g_fibers[i];
    f.state = kReady;
    f.stack = g_stacks + size_t(i) * kStack + 4096;
    f.stack_size = kStack - 4096;
    f.fake = nullptr;
    ctx_init(f, f.stack, f.stack_size);
  }
  for (uint32_t s = 0; s * kgen_rt::simd_width < n; ++s) g_simd[s].gen = 0;
  for (;;) {
    bool live = false;
    for (uint32_t k = 0; k < n; ++k) {
      Fiber& f = g_fibers[perm[k]];
      if (f.state != kReady) continue;
      g_cur = int(perm[k]);
      g_running = &f.lane;
      ctx_enter(f);
      g_cur = -1;
      g_running = nullptr;
      uint32_t s = perm[k] / kgen_rt::simd_width;
      if (f.state == kSimd && complete_one(n, s)) run_simdgroup(n, perm, s);
    }
    for (uint32_t i = 0; i < n; ++i) live = live || g_fibers[i].state != kDone;
    if (!live) return;
    if (!complete_simd(n)) release_barrier(n);
  }
}

// One OS thread per lane (ThreadSanitizer builds). The lanes of a group run
// concurrently between synchronisation points; a lane that reaches a barrier
// or simd call blocks, and the last lane to block (or finish) applies the
// same rules as the fiber scheduler (complete_simd, release_barrier) under
// g_mu. Every hand-over goes through g_mu, so TSan sees exactly the
// happens-before edges Metal's barriers and simd exchanges give, and reports
// accesses of different lanes that no barrier orders.
pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
uint32_t g_nlanes;   // lanes of the group being run
uint32_t g_active;   // lanes running: neither waiting nor done

// step_locked runs when no lane is running; it releases the next set of
// waiting lanes (or reports why none can go on).
void step_locked() {
  bool live = false;
  for (uint32_t i = 0; i < g_nlanes; ++i) live = live || g_fibers[i].state != kDone;
  if (live) {
    if (!complete_simd(g_nlanes)) release_barrier(g_nlanes);
    for (uint32_t i = 0; i < g_nlanes; ++i) g_active += g_fibers[i].state == kReady;
  }
  pthread_cond_broadcast(&g_cv);
}

void yield_thread(Fiber& f, State st, int line, unsigned size) {
  pthread_mutex_lock(&g_mu);
  f.state = st;
  f.line = line;
  f.size = size;
  if (--g_active == 0) step_locked();
  while (f.state != kReady) pthread_cond_wait(&g_cv, &g_mu);
  pthread_mutex_unlock(&g_mu);
}

void* lane_thread(void* arg) {
  int idx = int(reinterpret_cast<intptr_t>(arg));
  Fiber& f = g_fibers[idx];
  g_cur = idx;
  g_running = &f.lane;
  g_entry->fn(g_ptrs, f.lane);
  pthread_mutex_lock(&g_mu);
  f.state = kDone;
  if (--g_active == 0) step_locked();
  pthread_mutex_unlock(&g_mu);
  return nullptr;
}

void run_threads(uint32_t n, const uint32_t* perm) {
  static pthread_t tids[kMaxLanes];
  g_nlanes = n;
  g_active = n;
  for (uint32_t i = 0; i < n; ++i) g_fibers[i].state = kReady;
  for (uint32_t s = 0; s * kgen_rt::simd_width < n; ++s) g_simd[s].gen = 0;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kStack);
  for (uint32_t k = 0; k < n; ++k) {
    if (pthread_create(&tids[perm[k]], &attr, lane_thread, reinterpret_cast<void*>(intptr_t(perm[k]))) != 0)
      die("cannot start a thread for lane %u", perm[k]);
  }
  pthread_attr_destroy(&attr);
  for (uint32_t k = 0; k < n; ++k) pthread_join(tids[perm[k]], nullptr);
}

void setup_fibers() {
  g_fibers = static_cast<Fiber*>(calloc(kMaxLanes, sizeof(Fiber)));
  g_simd = static_cast<SimdGroup*>(aligned_alloc(64, kMaxLanes / kgen_rt::simd_width * sizeof(SimdGroup)));
  size_t total = kStack * kMaxLanes;
  g_stacks = static_cast<unsigned char*>(
      mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  if (g_stacks == MAP_FAILED || !g_fibers || !g_simd) die("cannot allocate fiber stacks");
  for (uint32_t i = 0; i < kMaxLanes; ++i) mprotect(g_stacks + size_t(i) * kStack, 4096, PROT_NONE);
}

struct Launch {
  uint32_t grid[3], tg[3], order, lane_map;
};

// g_frag[lane][e] is row * 8 + col of the simdgroup_matrix element that lane
// holds in slot e. By default it is the map Apple's GPUs are observed to use
// (and that MLX's steel kernels rely on through thread_elements()); a
// scrambled launch applies a fixed permutation of the 64 elements, which
// correct code cannot notice.
int g_frag[kgen_rt::simd_width][2];

void set_fragment_map(uint32_t mode) {
  for (unsigned lane = 0; lane < kgen_rt::simd_width; ++lane) {
    unsigned q = lane / 4, row = (q & 4) + (lane / 2) % 4, col = (q & 2) * 2 + (lane % 2) * 2;
    g_frag[lane][0] = int(row * 8 + col);
    g_frag[lane][1] = int(row * 8 + col + 1);
  }
  if (mode == 0) return;
  int* flat = &g_frag[0][0];
  uint64_t s = 0x2545f4914f6cdd1dull;
  for (int i = 63; i > 0; --i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    int j = int(s % uint64_t(i + 1));
    int t = flat[i];
    flat[i] = flat[j];
    flat[j] = t;
  }
}

// run_group runs one (possibly partial) threadgroup.
void run_group(const Launch& L, const uint32_t g[3], uint32_t* perm) {
  uint32_t ngroups[3], size[3];
  for (int a = 0; a < 3; ++a) {
    ngroups[a] = uint32_t((uint64_t(L.grid[a]) + L.tg[a] - 1) / L.tg[a]);  // no wrap at 2^32
    uint32_t rest = L.grid[a] - g[a] * L.tg[a];
    size[a] = rest < L.tg[a] ? rest : L.tg[a];
  }
  uint32_t n = size[0] * size[1] * size[2];
  cost_group(n);
  static kgen_rt::Lane lanes[kMaxLanes];
  const bool lanes_are_fibers = kgen_sync || KGEN_TSAN;
  for (uint32_t i = 0; i < n; ++i) {
    kgen_rt::Lane& l = lanes_are_fibers ? g_fibers[i].lane : lanes[i];
    uint32_t x = i % size[0], y = i / size[0] % size[1], z = i / (size[0] * size[1]);
    l.tid_tg = uint3{x, y, z};
    l.tg_id = uint3{g[0], g[1], g[2]};
    l.tid_grid = uint3{g[0] * L.tg[0] + x, g[1] * L.tg[1] + y, g[2] * L.tg[2] + z};
    l.tg_size = uint3{size[0], size[1], size[2]};
    l.grid_size = uint3{L.grid[0], L.grid[1], L.grid[2]};
    l.ngroups = uint3{ngroups[0], ngroups[1], ngroups[2]};
    l.dispatch_tg = uint3{L.tg[0], L.tg[1], L.tg[2]};
    l.index_tg = i;
    l.simd_lane = i % kgen_rt::simd_width;
    l.simd_id = i / kgen_rt::simd_width;
    l.nsimd = (n + kgen_rt::simd_width - 1) / kgen_rt::simd_width;
  }
  if (__start_kgen_tg != __stop_kgen_tg) memset(__start_kgen_tg, 0xff, size_t(__stop_kgen_tg - __start_kgen_tg));
  for (uint32_t i = 0; i < g_nslots; ++i) memset(g_slots[i].data, 0xff, g_slots[i].size);
  order_lanes(perm, n, L.order, g[0] * 7919u + g[1] * 104729u + g[2] * 1299709u);
  g_group = g;
  if (KGEN_TSAN) {
    run_threads(n, perm);
    return;
  }
  if (kgen_sync) {
    run_fibers(n, perm);
    return;
  }
  for (uint32_t k = 0; k < n; ++k) {
    g_running = &lanes[perm[k]];
    g_entry->fn(g_ptrs, lanes[perm[k]]);
  }
}

void run(const Launch& L) {
  uint32_t ng[3];
  for (int a = 0; a < 3; ++a) ng[a] = uint32_t((uint64_t(L.grid[a]) + L.tg[a] - 1) / L.tg[a]);
  static uint32_t perm[kMaxLanes];
  if (kgen_sync || KGEN_TSAN) setup_fibers();
  uint32_t g[3];
  for (g[2] = 0; g[2] < ng[2]; ++g[2])
    for (g[1] = 0; g[1] < ng[1]; ++g[1])
      for (g[0] = 0; g[0] < ng[0]; ++g[0]) run_group(L, g, perm);
  g_running = nullptr;
  g_group = nullptr;
}

const kgen_rt::Entry* find_entry(const char* host) {
  for (int i = 0; i < kgen_nentries; ++i)
    if (strcmp(kgen_entries[i].host, host) == 0) return &kgen_entries[i];
  die("no kernel with host name \"%s\" in this source", host);
}

void read_request(Launch& L) {
  char magic[8];
  read_exact(magic, 8);
  if (memcmp(magic, "KGENRUN2", 8) != 0) die("bad launch request header");
  uint32_t hlen = read_u32();
  if (hlen > 4096) die("host name too long");
  char host[4097];
  read_exact(host, hlen);
  host[hlen] = 0;
  g_entry = find_entry(host);
  for (int a = 0; a < 3; ++a) L.grid[a] = read_u32();
  for (int a = 0; a < 3; ++a) L.tg[a] = read_u32();
  L.order = read_u32();
  L.lane_map = read_u32();
  set_fragment_map(L.lane_map);
  g_nbuf = read_u32();
  g_bufs = static_cast<Buffer*>(calloc(g_nbuf + 1, sizeof(Buffer)));
  g_ptrs = static_cast<void**>(calloc(g_nbuf + 1, sizeof(void*)));
  for (uint32_t i = 0; i < g_nbuf; ++i) {
    g_bufs[i].len = read_u64();
    g_bufs[i].data = alloc_buffer(g_bufs[i].len);
    read_exact(g_bufs[i].data, g_bufs[i].len);
    g_ptrs[i] = g_bufs[i].data;
  }
  uint32_t naliases = read_u32();
  for (uint32_t k = 0; k < naliases; ++k) {
    uint32_t i = read_u32(), j = read_u32();
    if (i >= g_nbuf || j >= g_nbuf) die("bad buffer alias");
    g_bufs[i] = g_bufs[j];  // one MTLBuffer bound at two indices
    g_ptrs[i] = g_ptrs[j];
  }
  g_ntg = read_u32();
  if (g_ntg > 31) die("too many threadgroup memory bindings");
  g_tg = static_cast<unsigned char**>(calloc(g_ntg + 1, sizeof(unsigned char*)));
  g_tg_len = static_cast<uint32_t*>(calloc(g_ntg + 1, sizeof(uint32_t)));
  for (uint32_t i = 0; i < g_ntg; ++i) {
    g_tg_len[i] = read_u32();
    if (g_tg_len[i] == 0) continue;
    static char names[32][24];
    snprintf(names[i], sizeof names[i], "[[threadgroup(%u)]]", i);
    // rounded up to 16 bytes for vector alignment, as Metal requires
    g_tg[i] = alloc_guarded((size_t(g_tg_len[i]) + 15) / 16 * 16, 16);
    add_slot(g_tg[i], g_tg_len[i], names[i], nullptr);
  }
}

void check_request(const Launch& L) {
  for (int i = 0; i < g_entry->nreqs; ++i) {
    const kgen_rt::BufReq& r = g_entry->reqs[i];
    if (uint32_t(r.index) >= g_nbuf) die("%s: buffer(%d) is not bound", g_entry->host, r.index);
    if (g_bufs[r.index].len < r.min_bytes)
      die("%s: buffer(%d) holds %llu bytes, the kernel reads a %lu-byte struct from it", g_entry->host,
          r.index, (unsigned long long)g_bufs[r.index].len, r.min_bytes);
  }
  uint64_t lanes = uint64_t(L.tg[0]) * L.tg[1] * L.tg[2];
  if (lanes == 0 || lanes > kMaxLanes) die("threadgroup size %llu is outside 1..1024", (unsigned long long)lanes);
}

void write_response() {
  fwrite("KGENOUT1", 1, 8, stdout);
  fwrite(&g_nbuf, 4, 1, stdout);
  for (uint32_t i = 0; i < g_nbuf; ++i) {
    fwrite(&g_bufs[i].len, 8, 1, stdout);
    fwrite(g_bufs[i].data, 1, g_bufs[i].len, stdout);
  }
  cost_write();
  if (fflush(stdout) != 0) die("cannot write the result");
}

} // namespace

namespace kgen_rt {
void barrier(int line) { yield(kBarrier, line, 0); }

const void* exchange(const void* v, unsigned size, int line, unsigned* mask) {
  if (g_cur < 0) die("simd_* called by a kernel run without fibers");
  Fiber& f = g_fibers[g_cur];
  SimdGroup& sg = g_simd[f.lane.simd_id];
  unsigned gen = sg.gen & 1;
  if (size) memcpy(sg.data[gen] + f.lane.simd_lane * size, v, size);
  yield(kSimd, line, size);
  *mask = sg.mask[gen];
  return sg.data[gen];
}

void* tg_mem(int index) {
  if (index < 0 || uint32_t(index) >= g_ntg || g_tg_len[index] == 0)
    die("[[threadgroup(%d)]]: the launch gives it no memory (Launch.ThreadgroupMemory, kgen emu --threadgroup-memory)", index);
  return g_tg[index];
}

void* tg_static(unsigned long size, unsigned long align, const char* name, const char* where) {
  pthread_mutex_lock(&g_slot_mu);
  unsigned char* p = alloc_guarded(size, align);
  memset(p, 0xff, size);
  add_slot(p, size, name, where);
  pthread_mutex_unlock(&g_slot_mu);
  return p;
}

int frag_elem(unsigned lane, int e) { return g_frag[lane % simd_width][e & 1]; }

// matrix_exchange adds what simdgroup_matrix needs on top of exchange: the
// whole simdgroup (32 lanes, all of them) takes part, and the first uniform
// bytes of every lane's deposit (pointer, stride, origin, transpose) agree.
const void* matrix_exchange(const void* v, unsigned size, unsigned uniform, int line, const char* what) {
  if (g_cur < 0) die("%s (line %d) called by a kernel run without fibers", what, line);
  const Lane& me = g_fibers[g_cur].lane;
  unsigned group = me.tg_size.x * me.tg_size.y * me.tg_size.z;
  if ((me.simd_id + 1) * simd_width > group)
    die("%s on line %d: simdgroup %u has only %u lanes; simdgroup_matrix needs all 32 (threadgroup size %u is not a multiple of 32)",
        what, line, me.simd_id, group - me.simd_id * simd_width, group);
  unsigned mask;
  cost_matrix(what);
  const unsigned char* all = static_cast<const unsigned char*>(exchange(v, size, line, &mask));
  if (mask != 0xffffffffu) {
    unsigned missing = __builtin_ctz(~mask);
    die("%s on line %d: simdgroup %u: lane %u (and %d more) did not reach it; a simdgroup_matrix operation needs the whole simdgroup (uniform control flow)",
        what, line, me.simd_id, missing, 31 - __builtin_popcount(mask));
  }
  for (unsigned l = 1; l < simd_width; ++l)
    if (memcmp(all, all + l * size, uniform) != 0)
      die("%s on line %d: simdgroup %u: lanes 0 and %u pass different arguments (pointer, stride, origin or transpose must be uniform)",
          what, line, me.simd_id, l);
  return all;
}

unsigned lane_id() {
  if (g_cur < 0) die("simd lane queried by a kernel run without fibers");
  return g_fibers[g_cur].lane.simd_lane;
}
} // namespace kgen_rt

#if KGEN_ASAN
static void report_lane();

// ASan calls this before it prints a report: say which lane and which
// buffer or threadgroup array.
extern "C" void __asan_on_error() {
  // The faulting address belongs to the buffer whose edge is nearest.
  char* addr = static_cast<char*>(__asan_get_report_address());
  char slot[512];
  if (addr && slot_fault(addr, slot, sizeof slot)) {
    fprintf(stderr, "mslcpu: %s\n", slot);
    report_lane();
    return;
  }
  int best = -1;
  long long best_dist = 4096;
  for (uint32_t i = 0; addr && i < g_nbuf && g_bufs; ++i) {
    char* data = reinterpret_cast<char*>(g_bufs[i].data);
    char* end = data + g_bufs[i].len;
    long long dist = addr < data ? data - addr : addr >= end ? addr - end : -1;
    if (dist >= 0 && dist < best_dist) {
      best = int(i);
      best_dist = dist;
    }
  }
  if (best >= 0) {
    fprintf(stderr, "mslcpu: access outside buffer(%d) (%llu bytes), at byte %lld\n", best,
            (unsigned long long)g_bufs[best].len, (long long)(addr - reinterpret_cast<char*>(g_bufs[best].data)));
  }
  report_lane();
}

static void report_lane() {
  if (g_running) {
    const kgen_rt::Lane& l = *g_running;
    fprintf(stderr, "mslcpu: in %s, threadgroup (%u,%u,%u), thread (%u,%u,%u)\n", g_entry->host, l.tg_id.x,
            l.tg_id.y, l.tg_id.z, l.tid_tg.x, l.tid_tg.y, l.tid_tg.z);
  }
  fflush(stderr);
}
#endif

int main() {
  static char outbuf[1 << 16];
  setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
  if (!KGEN_ASAN) install_handlers();  // ASan reports faults itself, with a stack
  Launch L;
  read_request(L);
  check_request(L);
  cost_start();
  run(L);
  write_response();
  return 0;
}
